"""The nightly's report view: summary.json (:class:`~proofdiff.nightly.nightly_result.
NightlyResult`), the page (``nightly.html.j2``: the decision and its exit code first, then new
failures (each with tonight's failing jobs and suspects) and slowdowns, with each new
divergence's bisection, then the history's trend with its change points, flaky, still failing
and fixed checks folded below, a link to tonight's differential), and its checks for
junit.xml and allure-results: a new failure or slowdown is FAILED, a flaky or still failing
check UNKNOWN (reported, not new), a fixed one PASSED, one that erred tonight BROKEN, one
missing tonight SKIPPED, so CI's test views agree with the exit code."""

from __future__ import annotations

import hashlib
from pathlib import Path

import msgspec

from proofdiff.bisect.bisect_result import proven_suspects
from proofdiff.model.oracle_records import Divergence
from proofdiff.model.result import DifferentialResult
from proofdiff.model.serde import SerdeError
from proofdiff.nightly.night_trend import trend_plots
from proofdiff.nightly.nightly_result import NightlyResult, Standing
from proofdiff.report.differential_view import failing_jobs
from proofdiff.report.summary_json import load_summary
from proofdiff.report.view import Check, CheckStatus, ReportView
from proofdiff.report.writer import write_view

__all__ = ["EXIT_MEANING", "nightly_view", "write_nightly_report"]

_STATUS = {Standing.NEW: CheckStatus.FAILED, Standing.STILL_FAILING: CheckStatus.UNKNOWN,
           Standing.FLAKY: CheckStatus.UNKNOWN, Standing.FIXED: CheckStatus.PASSED,
           Standing.ERROR: CheckStatus.BROKEN, Standing.MISSING: CheckStatus.SKIPPED}

#: A bisection's check: a proven change PASSED (the failure is FAILED on its own row); one
#: that could not run BROKEN; not started SKIPPED; any other end (unresolved, budget) UNKNOWN.
_BISECT = {"found": CheckStatus.PASSED, "error": CheckStatus.BROKEN,
           "interrupted": CheckStatus.BROKEN, "disabled": CheckStatus.SKIPPED,
           "budget-spent": CheckStatus.SKIPPED, "not-bisectable": CheckStatus.SKIPPED}


def _ms(unix_s: float, default_ms: int) -> int:
    """``unix_s`` in ms since the epoch (Allure's timeline); ``default_ms`` when unknown (0)."""
    return int(unix_s * 1000) if unix_s > 0 else default_ms


def _of_exit(code: int) -> CheckStatus:
    """A decision's check status: PASSED clean, BROKEN could not run or interrupted, else
    FAILED (new, undecided)."""
    return (CheckStatus.PASSED if code == 0 else CheckStatus.BROKEN if code in (3, 130)
            else CheckStatus.FAILED)


def _checks(r: NightlyResult) -> list[Check]:
    t = int(r.created_unix_s * 1000)
    out = []
    for c in r.checks:
        past = ", ".join(o or "-" for o in c.past) or "no earlier night"
        text = (f"{c.check} on {c.profile}/{c.workload}: {c.standing.value} (tonight "
                f"{c.outcome}; earlier nights, oldest first: {past}; {c.flips} flip(s)); "
                "the record: differential/index.html")
        suite, name = c.check.split("/", 1)
        out.append(Check(suite=suite, name=name, status=_STATUS[c.standing], message=text,
                         text=text, profile=c.profile, workload=c.workload,
                         start_ms=_ms(c.started_unix_s, t), stop_ms=_ms(c.stopped_unix_s, t),
                         history_id=hashlib.md5(
                             f"{c.check}[{c.profile}-{c.workload}]".encode()).hexdigest()))
    for s in r.slowdowns:
        out.append(Check(suite="timing-history", name=s.metric, status=CheckStatus.FAILED,
                         message=s.headline, text=f"{s.headline}\n{s.evidence}",
                         profile=s.profile, workload=s.workload,
                         start_ms=_ms(s.started_unix_s, t), stop_ms=_ms(s.stopped_unix_s, t)))
    for b in r.bisections:
        text = "\n".join([b.summary(), *(f"{c.path}: {c.good!r} -> {c.bad!r} ({c.unit})"
                                          for c in b.change),
                          f"report: {b.run_id}/index.html" if b.run_id else ""]).strip()
        out.append(Check(suite="bisect", name=b.check, status=_BISECT.get(
            b.status, CheckStatus.UNKNOWN), message=b.summary(), text=text, profile=b.profile,
            workload=b.workload, start_ms=_ms(b.started_unix_s, t),
            stop_ms=_ms(b.stopped_unix_s, t)))
    for h in r.hosts:  # a fleet's night: each host's decision (its checks are in its report)
        out.append(Check(suite="nightly-host", name=h.host, status=_of_exit(h.exit_code),
                         message=h.decision_line,
                         text=f"{h.decision_line}\nreport: ../{h.run_id}/index.html",
                         start_ms=_ms(r.started_unix_s, t), stop_ms=t))
    status = _of_exit(r.exit_code)
    out.append(Check(suite="nightly", name="decision", status=status, message=r.decision_line,
                     text="\n".join([r.decision_line, *r.errors]),
                     start_ms=_ms(r.started_unix_s, t - int(r.wall_s * 1000)), stop_ms=t))
    return out


#: What each exit code of ``proofdiff nightly`` means (docs/guide/nightly.md, "Exit codes").
EXIT_MEANING = {0: "nothing new since the last night",
                1: "a new failure or a new slowdown since the last night",
                2: "nothing new, but a check was skipped, undecided or missing, or none passed",
                3: "the night could not run or not be compared, or a check could not be judged",
                130: "interrupted"}


def _tonight(run_dir: Path | None) -> DifferentialResult | None:
    """Tonight's differential as its report wrote it (``<run dir>/differential/``), or
    ``None`` when there is none to read."""
    if run_dir is None:
        return None
    try:
        return load_summary(run_dir / "differential")
    except (OSError, SerdeError):
        return None


def _with_proven(diff: DifferentialResult | None,
                 result: NightlyResult) -> dict[tuple[str, str, str], Divergence]:
    """Tonight's divergences by (check, profile, workload); one that the night's bisection
    resolved shows the proven change as its cause, not the ranking (as ``run --bisect``)."""
    found = {(b.check, b.profile, b.workload): b for b in result.bisections
             if b.status == "found" and b.change}
    shown = {}
    for d in diff.divergences if diff else ():
        key = (f"{d.suite}/{d.oracle}", d.profile, d.workload)
        if (b := found.get(key)) is not None:
            d = msgspec.structs.replace(d, suspects=proven_suspects(
                b.change, f"bisected: the 1-minimal failure-inducing change, {b.probes} probes "
                          f"(report {b.run_id})"))
        shown[key] = d
    return shown


def nightly_view(result: NightlyResult, *, run_dir: Path | None = None,
                 history: str | None = None) -> ReportView:
    """The nightly's report view (module docstring). With ``run_dir``, each new failure shows
    tonight's divergence (failing jobs, partitions, suspects) from ``differential/``; with
    ``history`` (a history URL), the page plots each timing series with its change points."""
    diff = _tonight(run_dir)
    # a fleet's night has no series of its own: each host's page plots that host's
    trend, trend_note = trend_plots(history, result.run_id, run_dir.parent if run_dir
                                    else Path.cwd()) if not result.hosts else ([], "")
    return ReportView(
        run_id=result.run_id, kind="nightly", decision=result.decision.value,
        decision_line=result.decision_line, exit_code=result.exit_code,
        exit_meaning=EXIT_MEANING.get(result.exit_code, ""), result=result,
        template="nightly.html.j2",
        context={"Standing": Standing, "trend": trend, "trend_note": trend_note,
                 "divergences": _with_proven(diff, result),
                 "acceptance_of": diff.acceptance_of if diff else (lambda _d: None),
                 "failing_jobs": (lambda p, w: failing_jobs(diff, p, w)) if diff
                 else (lambda _p, _w: [])},
        checks=tuple(_checks(result)),
        environment={"proofdiff.run_id": result.run_id, "decision": result.decision.value,
                     "machine": result.machine, "history": result.history,
                     "nights": ",".join(result.nights)})


def write_nightly_report(result: NightlyResult, run_dir: Path, *,
                         history: str | None = None) -> Path:
    """Write the night's report into ``run_dir`` (the one writer); returns ``run_dir``.
    ``history``: the history's URL, to plot the trend (:func:`nightly_view`); default the one
    the night names (``result.history``: a PostgreSQL URL there has its password hidden, so
    pass the real one)."""
    return write_view(lambda: nightly_view(
        result, run_dir=run_dir, history=history if history is not None else result.history),
        run_dir)
