"""The nightly's report view: summary.json (:class:`~proofdiff.nightly.nightly_result.
NightlyResult`), the page (``nightly.html.j2``: the decision first, then new failures and
slowdowns, then flaky, still failing and fixed checks, a link to tonight's differential), and
its checks for junit.xml and allure-results: a new failure or slowdown is FAILED, a flaky or
still failing check UNKNOWN (reported, not new), a fixed one PASSED, so CI's test views agree
with the exit code."""

from __future__ import annotations

import hashlib
from pathlib import Path

from proofdiff.nightly.nightly_result import NightlyResult, Standing
from proofdiff.report.view import Check, CheckStatus, ReportView
from proofdiff.report.writer import write_view

__all__ = ["nightly_view", "write_nightly_report"]

_STATUS = {Standing.NEW: CheckStatus.FAILED, Standing.STILL_FAILING: CheckStatus.UNKNOWN,
           Standing.FLAKY: CheckStatus.UNKNOWN, Standing.FIXED: CheckStatus.PASSED}


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
                         text=text, profile=c.profile, workload=c.workload, start_ms=t,
                         stop_ms=t, history_id=hashlib.md5(
                             f"{c.check}[{c.profile}-{c.workload}]".encode()).hexdigest()))
    for s in r.slowdowns:
        out.append(Check(suite="timing-history", name=s.metric, status=CheckStatus.FAILED,
                         message=s.headline, text=f"{s.headline}\n{s.evidence}",
                         profile=s.profile, workload=s.workload, start_ms=t, stop_ms=t))
    status = (CheckStatus.PASSED if r.exit_code == 0 else CheckStatus.BROKEN
              if r.exit_code in (3, 130) else CheckStatus.FAILED)
    out.append(Check(suite="nightly", name="decision", status=status, message=r.decision_line,
                     text="\n".join([r.decision_line, *r.errors]), start_ms=t,
                     stop_ms=t + int(r.wall_s * 1000)))
    return out


def nightly_view(result: NightlyResult) -> ReportView:
    """The nightly's report view (module docstring)."""
    return ReportView(
        run_id=result.run_id, kind="nightly", decision=result.decision.value,
        decision_line=result.decision_line, exit_code=result.exit_code, result=result,
        template="nightly.html.j2", context={"Standing": Standing},
        checks=tuple(_checks(result)),
        environment={"proofdiff.run_id": result.run_id, "decision": result.decision.value,
                     "machine": result.machine, "history": result.history,
                     "nights": ",".join(result.nights)})


def write_nightly_report(result: NightlyResult, run_dir: Path) -> Path:
    """Write the night's report into ``run_dir`` (the one writer); returns ``run_dir``."""
    return write_view(nightly_view(result), run_dir)
