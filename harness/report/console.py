"""The console view of a result (rich): the side-by-side table, each divergence with its top
suspects, and the verdict. Every text that comes from a daemon, a profile file or an error is
printed literally (rich would read ``[profiles.prod]`` as markup and drop it)."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.text import Text

from proofdiff.model.result import DifferentialResult
from proofdiff.model.status import Verdict

from proofdiff.report.table_rows import side_by_side

__all__ = ["print_result"]

_COLOUR = {Verdict.SAME: "green", Verdict.DIVERGED: "red", Verdict.FAILED: "red",
           Verdict.ERROR: "red", Verdict.INCOMPLETE: "yellow", Verdict.INTERRUPTED: "yellow"}


def print_result(console: Console, result: DifferentialResult, report: str = "") -> None:
    """Print the table, divergences (headline, the failing record's first lines, 3 suspects;
    an accepted one marked so, with its allowlist entry), the other accepted differences, the
    allowlist's stale or expired entries, errors and the one-line verdict; ``report`` is the
    path shown last."""
    rows = side_by_side(result)
    if rows:
        table = Table(title=f"proofdiff {result.run_id}")
        for col in ("profile", "workload", "validity", "jobs", "valid", "invalid", "failed",
                    "unverified", "median ms", "ready ms"):
            table.add_column(col, justify="right" if col not in ("profile", "workload",
                                                                 "validity") else "left")
        for r in rows:
            table.add_row(Text(r["profile"]), Text(r["workload"]), Text(r["outcome"]),
                          str(r["jobs"]), str(r["valid"]), str(r["invalid"]), str(r["failed"]),
                          str(r["unverified"]),
                          f"{r['median_ms']:.0f}" if r["median_ms"] is not None else "-",
                          f"{r['start_to_ready_ms']:.0f}" if r["start_to_ready_ms"] is not None
                          else "-")
        console.print(table)
    for d in result.divergences:
        acc = result.acceptance_of(d)
        console.print(Text(d.headline + (" (ACCEPTED)" if acc else ""),
                           style="bold yellow" if acc else "bold red"), soft_wrap=True)
        if acc:
            console.print(Text(f"  accepted by {acc.entry} until {acc.expires}: {acc.reason} "
                               f"({acc.link})"), soft_wrap=True)
        for line in d.message.splitlines()[:8]:
            console.print(Text("  " + line), soft_wrap=True)
        for i, s in enumerate(d.suspects[:3], 1):
            console.print(Text(f"  suspect {i}: {s.render()} ({s.why})"), soft_wrap=True)
    shown = {(f"{d.suite}/{d.oracle}", d.profile, d.workload, d.image)
             for d in result.divergences}
    for a in result.accepted:
        if a.key not in shown:
            console.print(Text(f"accepted difference: {a.check} on {a.profile}/{a.workload} by "
                               f"{a.entry} until {a.expires}: {a.reason} ({a.link})",
                               style="yellow"), soft_wrap=True)
    for st in result.stale:
        console.print(Text(f"allowlist {st.status}: {st.message}", style="yellow"),
                      soft_wrap=True)
    for e in result.errors:
        console.print(Text(e, style="red"), soft_wrap=True)
    console.print(Text(f"{result.verdict.value}: ", style=f"bold {_COLOUR[result.verdict]}")
                  + Text(result.verdict_line), soft_wrap=True)
    if report:
        console.print(Text(f"report: {report}"), soft_wrap=True)
