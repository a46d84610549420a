"""``--notify URL`` against a real HTTP server on 127.0.0.1 (http.server on a thread): the body
a command POSTs (decision, new findings, the report's path, a chat line), and a webhook that
fails or does not answer is reported with the exit code left as the run's."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from proofdiff.cli import main
from proofdiff.core.differential import assemble
from proofdiff.model.oracle_records import OracleRecord
from proofdiff.model.profile_file import load_profiles
from proofdiff.model.status import Outcome
from proofdiff.report.differential_view import differential_view
from proofdiff.report.notify import notify

SECRET = "/services/T0/B0/s3cr3t"


@dataclass
class Hook:
    """The served webhook: what it answers (``status``; ``hold``: answer only once set) and
    every request it got (method, path, headers, parsed JSON body)."""

    url: str
    status: int = 200
    hold: threading.Event | None = None
    got: list[dict[str, Any]] = field(default_factory=list)


@pytest.fixture
def hook() -> Iterator[Hook]:
    state = Hook(url="")

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - http.server's name
            body = self.rfile.read(int(self.headers["Content-Length"]))
            state.got.append({"path": self.path, "type": self.headers["Content-Type"],
                              "body": json.loads(body)})
            if state.hold is not None:
                state.hold.wait(30)  # released by the test; bounded so the thread always ends
            self.send_response(state.status)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *_args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    state.url = f"http://127.0.0.1:{server.server_address[1]}{SECRET}"
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                              daemon=True)
    thread.start()
    yield state
    if state.hold is not None:
        state.hold.set()
    server.shutdown()
    server.server_close()
    thread.join(10)


def _bad_profiles(tmp_path: Path) -> Path:
    bad = tmp_path / "bad.toml"
    bad.write_text("[profiles.bench\n", encoding="utf-8")
    return bad


def test_run_posts_its_decision_and_report_path(hook: Hook, tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["run", "--profiles", str(_bad_profiles(tmp_path)), "--report-dir",
               str(tmp_path / "rep"), "--run-id", "n1", "--notify", hook.url])
    assert rc == 3
    (req,) = hook.got
    assert req["path"] == SECRET and req["type"].startswith("application/json")
    body = req["body"]
    page = tmp_path / "rep" / "n1" / "index.html"
    assert (body["kind"], body["run_id"], body["decision"], body["exit_code"]) == \
        ("run", "n1", "ERROR", 3)
    assert body["report"] == str(page) and page.is_file()
    (finding,) = body["new_findings"]
    assert finding["check"] == "run/run" and finding["status"] == "broken"
    assert "malformed TOML" in finding["message"]
    assert body["text"].startswith("proofdiff run n1: ERROR: ") and str(page) in body["text"]
    out = capsys.readouterr().out
    assert "notify: summary sent to http://127.0.0.1:" in out and SECRET not in out


def test_gate_posts_its_decision(hook: Hook, tmp_path: Path) -> None:
    rc = main(["gate", "--candidate", "c:1", "--baseline", "b:1", "--profiles",
               str(_bad_profiles(tmp_path)), "--report-dir", str(tmp_path / "rep"),
               "--run-id", "g1", "--notify", hook.url])
    assert rc == 3
    body = hook.got[0]["body"]
    assert (body["kind"], body["decision"], body["exit_code"]) == ("gate", "error", 3)
    assert body["new_findings"] == [] and "malformed TOML" in body["decision_line"]
    assert body["report"] == str(tmp_path / "rep" / "g1" / "index.html")


def test_findings_are_the_failing_checks_less_the_accepted(hook: Hook, tmp_path: Path) -> None:
    from proofdiff.model.allowlist import load_allowlist

    allow = tmp_path / "allow.toml"
    allow.write_text('[[accept]]\ncheck = "isolation/colliding-ids"\nprofile = "prod"\n'
                     'match = "first one"\nreason = "known"\nlink = "https://example.org/1"\n'
                     "expires = 2999-01-01\n", encoding="utf-8")
    recs = [OracleRecord(suite=s, oracle=o, profile=p, workload="wpost-2k", outcome=out,
                         message=m)
            for s, o, p, out, m in [
                ("validity", "proofs", "bench", Outcome.PASS, "4/4 valid"),
                ("validity", "proofs", "prod", Outcome.FAIL, "3/4 valid: partition 1 INVALID"),
                ("isolation", "colliding-ids", "prod", Outcome.FAIL, "both got the first one's")]]
    res = assemble(run_id="n2", profiles=load_profiles("refprover"), records=recs, runs=[],
                   allowlist=load_allowlist(allow), allowlist_file=str(allow))
    sent, line = notify(hook.url, differential_view(res), tmp_path / "index.html")
    assert sent, line
    body = hook.got[0]["body"]
    assert body["decision"] == "DIVERGED" and body["exit_code"] == 1
    assert [(f["check"], f["profile"], f["status"]) for f in body["new_findings"]] == \
        [("validity/proofs", "prod", "failed")]


def test_a_failing_webhook_is_reported_and_the_exit_code_stays(
        hook: Hook, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    hook.status = 500
    rc = main(["run", "--profiles", str(_bad_profiles(tmp_path)), "--report-dir",
               str(tmp_path / "rep"), "--run-id", "n3", "--notify", hook.url])
    assert rc == 3 and len(hook.got) == 1
    out = " ".join(capsys.readouterr().out.split())
    assert "notify FAILED (the exit code is the run's own): webhook http://127.0.0.1:" in out
    assert "answered HTTP 500" in out and SECRET not in out


def test_a_webhook_password_in_the_url_is_never_printed(
        hook: Hook, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    hook.status = 500
    url = hook.url.replace("http://", "http://bot:pa55word@")
    rc = main(["run", "--profiles", str(_bad_profiles(tmp_path)), "--report-dir",
               str(tmp_path / "rep"), "--run-id", "n6", "--notify", url])
    out = " ".join(capsys.readouterr().out.split())
    assert rc == 3 and "webhook http://127.0.0.1:" in out, out
    assert "pa55word" not in out and "bot" not in out and SECRET not in out, out


def test_a_webhook_that_does_not_answer_is_cut_at_the_deadline(hook: Hook,
                                                               tmp_path: Path) -> None:
    hook.hold = threading.Event()
    res = assemble(run_id="n4", profiles=load_profiles("refprover"), records=[], runs=[])
    sent, line = notify(hook.url, differential_view(res), tmp_path / "index.html",
                        timeout_s=0.5)
    hook.hold.set()
    assert not sent
    assert "did not answer within 0.5 s" in line and SECRET not in line


def test_a_url_that_is_not_http_is_reported(tmp_path: Path) -> None:
    res = assemble(run_id="n5", profiles=load_profiles("refprover"), records=[], runs=[])
    sent, line = notify("file:///etc/passwd", differential_view(res), tmp_path / "i.html")
    assert not sent and "not an http(s) URL" in line
