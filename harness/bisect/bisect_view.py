"""A bisection's report: its view for the one writer (``summary.json``: the
:class:`~proofdiff.bisect.bisect_result.BisectResult`; ``index.html``: the conclusion and its
exit code, the failing check, the minimal change with both values, the failing probes, the
passing ones folded; junit.xml and allure-results: one check per
probe and the conclusion) and the console's table (rich)."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console
from rich.table import Table

from proofdiff.bisect.bisect_result import BisectResult
from proofdiff.report.view import Check, CheckStatus, ReportView
from proofdiff.report.writer import write_view

__all__ = ["EXIT_MEANING", "bisect_view", "print_bisect", "write_bisect_report"]

#: What each conclusion (and its exit code, :data:`~proofdiff.bisect.bisect_result.EXIT`)
#: means.
EXIT_MEANING = {"found": "the minimal failure-inducing change is proven (1-minimal, confirmed)",
                "good-fails": "nothing to bisect: the good profile fails too",
                "bad-passes": "nothing to bisect: the bad profile passes",
                "unresolved": "no minimal change isolated: probes were unresolved",
                "budget": "the budget ran out before the change was confirmed",
                "error": "the bisection could not run", "interrupted": "interrupted"}

_PROBE = {"PASS": CheckStatus.PASSED, "FAIL": CheckStatus.FAILED,
          "UNRESOLVED": CheckStatus.UNKNOWN}


def bisect_view(result: BisectResult) -> ReportView:
    """The bisection's report view (module docstring)."""
    t = int(result.created_unix_s * 1000)
    checks = [Check(suite="bisect-probe", name=f"probe-{p.index:02d}",
                    status=_PROBE.get(p.outcome, CheckStatus.BROKEN),
                    message=f"{' + '.join(p.units) or result.good}: {p.outcome} {p.reason}"[:300],
                    text=f"units applied to {result.good}: {' + '.join(p.units) or '(none)'}\n"
                         f"outcome {p.outcome}: {', '.join(p.failing)}\n{p.reason}",
                    start_ms=int(p.started_unix_s * 1000) or t,
                    stop_ms=int(p.stopped_unix_s * 1000) or t) for p in result.probes]
    checks.append(Check(suite="bisect", name="conclusion",
                        status=(CheckStatus.PASSED if result.status == "found" else
                                CheckStatus.BROKEN if result.status in ("error", "interrupted")
                                else CheckStatus.FAILED), message=result.line,
                        text=result.line + (f"\n{result.reason}" if result.reason else ""),
                        start_ms=int(result.started_unix_s * 1000)
                        or t - int(result.wall_s * 1000), stop_ms=t))
    return ReportView(run_id=result.run_id, kind="bisect", decision=result.status,
                      decision_line=result.line, exit_code=result.exit_code,
                      exit_meaning=EXIT_MEANING.get(result.status, ""), result=result,
                      template="bisect.html.j2", checks=tuple(checks),
                      environment={"proofdiff.run_id": result.run_id,
                                   "image": f"{result.image.tag}@{result.image.digest}",
                                   "good": result.good, "bad": result.bad})


def write_bisect_report(result: BisectResult, run_dir: Path) -> Path:
    """Write the bisection's report into ``run_dir`` (the one writer); returns ``run_dir``."""
    return write_view(lambda: bisect_view(result), run_dir)


def print_bisect(result: BisectResult, console: Console) -> None:
    """The probe table, the minimal change and the conclusion, on the console."""
    probes = Table(title=f"bisect {result.run_id}: {result.good} -> {result.bad}, "
                         f"oracle {result.oracle or 'any failure'}")
    for col in ("#", f"units applied to {result.good}", "outcome", "failing", "s"):
        probes.add_column(col)
    for p in result.probes:
        probes.add_row(f"{p.index}{' again' if p.fresh else ''}",
                       " + ".join(p.units) or f"(none: {result.good})", p.outcome,
                       ", ".join(p.failing), f"{p.wall_s:.0f}")
    console.print(probes)
    if result.change:
        change = Table(title="minimal failure-inducing change" if result.status == "found"
                       else "candidate change, NOT confirmed 1-minimal")
        for col in ("item", result.good, result.bad):
            change.add_column(col)
        for c in result.change:
            change.add_row(c.path, repr(c.good), repr(c.bad))
        console.print(change)
    console.print(f"{result.line}  ({result.n_probes} probes, {result.wall_s:.0f} s; "
                  f"exit {result.exit_code})", markup=False)
