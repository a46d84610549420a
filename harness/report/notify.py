"""``--notify URL``: when a run ends, its JSON summary is POSTed to a webhook.

The body (``Content-Type: application/json``, UTF-8)::

    {"schema": 1, "kind": "run", "run_id": "...", "decision": "DIVERGED",
     "decision_line": "...", "exit_code": 1,
     "new_findings": [{"check": "validity/proofs", "profile": "prod", "workload": "wpost-2k",
                       "status": "failed", "message": "0/4 valid: INVALID"}],
     "report": "/abs/path/reports/<run>/index.html",
     "text": "proofdiff run <run>: DIVERGED: ... report: /abs/.../index.html"}

``new_findings`` are the report's checks that failed or could not be judged (FAILED or BROKEN in
the CI formats), less the decision's own check (a gate's ``gate/decision``); an allowlist's
accepted differences are not among them. ``text`` is the one
line chat webhooks show (Slack's and Mattermost's incoming webhooks read the ``text`` key and
ignore the others).

A webhook that fails (an HTTP status >= 400, a refused connection, a bad URL) or does not answer
within the deadline (:data:`NOTIFY_TIMEOUT_S`, the whole request, not per socket read) raises
:class:`NotifyError`; the commands print it and keep their exit code. Error messages name the
webhook by scheme and host only: the path of a webhook URL is often its secret, as is a
``user:password@`` in it.
"""

from __future__ import annotations

import threading
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import msgspec

from proofdiff.model.errors import ProofdiffError
from proofdiff.report.view import CheckStatus, ReportView

__all__ = ["NOTIFY_TIMEOUT_S", "NotifyError", "notify", "post_json", "summary_of"]

#: Deadline of one webhook POST, connect to answer, seconds.
NOTIFY_TIMEOUT_S = 10.0

_FAILING = (CheckStatus.FAILED, CheckStatus.BROKEN)


class NotifyError(ProofdiffError):
    """The webhook did not take the summary: names it (scheme and host), what happened, the
    fix."""


def summary_of(view: ReportView, report: Path) -> dict[str, Any]:
    """The body POSTed for ``view`` (module docstring); ``report`` is the page's path."""
    found = [{"check": f"{c.suite}/{c.name}", "profile": c.profile, "workload": c.workload,
              "status": c.status.value, "message": c.message} for c in view.checks
             if c.status in _FAILING and (c.suite, c.name) != (view.kind, "decision")]
    page = str(Path(report).absolute())
    return {"schema": 1, "kind": view.kind, "run_id": view.run_id, "decision": view.decision,
            "decision_line": view.decision_line, "exit_code": view.exit_code,
            "new_findings": found, "report": page,
            "text": f"proofdiff {view.kind} {view.run_id}: {view.decision}: "
                    f"{view.decision_line} report: {page}"}


def _where(url: str) -> str:
    """``scheme://host[:port]``: never the path, nor a ``user:password@`` (both secrets)."""
    parts = urllib.parse.urlsplit(url)
    host = f"[{parts.hostname}]" if parts.hostname and ":" in parts.hostname else parts.hostname
    return f"{parts.scheme}://{host or ''}" + (f":{parts.port}" if parts.port else "")


def post_json(url: str, body: dict[str, Any], *, timeout_s: float = NOTIFY_TIMEOUT_S) -> int:
    """POST ``body`` as JSON to ``url``; returns the HTTP status (< 400).

    The request runs on a daemon thread joined for ``timeout_s`` (urllib's own timeout bounds
    each socket operation, not the whole request), so a webhook that trickles its answer is cut
    at the deadline too.

    Raises:
        NotifyError: not an http(s) URL; an HTTP status >= 400; no connection; no answer
            within ``timeout_s``.
    """
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise NotifyError(f"--notify {_where(url) if parts.netloc else repr(url)}: not an "
                          "http(s) URL", fix="pass the webhook's full URL, e.g. "
                          "--notify https://hooks.example.org/services/T0/B0/XYZ")
    req = urllib.request.Request(url, data=msgspec.json.encode(body), method="POST",
                                 headers={"Content-Type": "application/json; charset=utf-8",
                                          "User-Agent": "proofdiff"})
    box: dict[str, Any] = {}

    def send() -> None:
        try:
            with urllib.request.urlopen(req, timeout=timeout_s) as resp:
                box["status"] = int(resp.status)
        except Exception as exc:  # noqa: BLE001 - handed to the caller's thread below
            box["error"] = exc

    worker = threading.Thread(target=send, name="proofdiff-notify", daemon=True)
    worker.start()
    worker.join(timeout_s)
    where = _where(url)
    fix = ("check that the webhook URL is current and reachable from this host (a proxy is read "
           "from https_proxy / no_proxy), or drop --notify")
    exc = box.get("error")
    late = isinstance(exc, TimeoutError) or (isinstance(exc, urllib.error.URLError)
                                             and isinstance(exc.reason, TimeoutError))
    if worker.is_alive() or late:
        raise NotifyError(f"webhook {where} did not answer within {timeout_s:g} s", fix=fix)
    if isinstance(exc, urllib.error.HTTPError):
        raise NotifyError(f"webhook {where} answered HTTP {exc.code} {exc.reason}", fix=fix)
    if isinstance(exc, urllib.error.URLError):
        raise NotifyError(f"webhook {where} could not be reached: {exc.reason}", fix=fix)
    if exc is not None:
        raise NotifyError(f"webhook {where} failed: {type(exc).__name__}: {exc}", fix=fix)
    return int(box["status"])


def notify(url: str, view: ReportView, report: Path, *,
           timeout_s: float = NOTIFY_TIMEOUT_S) -> tuple[bool, str]:
    """POST :func:`summary_of` ``view`` to ``url``.

    Returns:
        (sent, the line to print): what was sent where, or why it was not. A
        :class:`NotifyError` becomes that line, never an exception: the run's own outcome
        and exit code stand.
    """
    try:
        status = post_json(url, summary_of(view, report), timeout_s=timeout_s)
    except NotifyError as exc:
        return False, f"notify FAILED (the exit code is the run's own): {exc}"
    return True, f"notify: summary sent to {_where(url)} (HTTP {status})"
