"""``proofdiff gate``: block an image push when the candidate is broken or slower."""

from __future__ import annotations

import argparse
import signal
from pathlib import Path

from rich.console import Console
from rich.text import Text

from proofdiff.model.profile_file import DEFAULT_PROFILE_SET

from proofdiff.cli.cmd_run import positive_seconds, raise_interrupt

__all__ = ["EXIT_HELP", "add_arguments", "gate"]

EXIT_HELP = """exit codes:
  0    pass: the candidate is clean on every profile and not slower than the baseline
  1    fail: a check fails on the candidate, bench and prod diverge on it, it is slower
       (timing DIFFERENT), or an allowlist entry has expired
  2    inconclusive: timing undecided within --budget-s (the verdicts so far are reported)
  3    the gate could not run (the reason is named: a missing image, a bad allowlist or
       profile, no Docker, or the baseline's own verifier disagrees with the pinned one)
  130  interrupted (containers removed, the report kept)"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Options of ``proofdiff gate``."""
    p.add_argument("--candidate", metavar="IMAGE", required=True, help="the image to push")
    p.add_argument("--baseline", metavar="IMAGE", required=True,
                   help="the image it replaces (the same digest twice is an A/A gate)")
    p.add_argument("--profiles", metavar="SET|FILE", default=DEFAULT_PROFILE_SET,
                   help=f"a shipped profile set or a TOML file. Default: {DEFAULT_PROFILE_SET}")
    p.add_argument("--profile", metavar="NAME", action="append", default=[],
                   help="profile to gate on (repeatable; the first is the baseline profile of "
                        "the candidate's differential). Default: all")
    p.add_argument("--workload", metavar="NAME", action="append", default=[],
                   help="workload (repeatable). Default: the profiles' workload")
    p.add_argument("--set", metavar="PROFILE.KEY=VALUE", action="append", default=[],
                   dest="overrides", help="override a profile key (repeatable), e.g. "
                   "'*.timing_floor=0.10'")
    p.add_argument("--budget-s", metavar="SECONDS", type=positive_seconds, default=900.0,
                   help="time budget of the timing rounds over all profiles. Default: 900")
    p.add_argument("--allowlist", metavar="FILE", type=Path, default=None,
                   help="TOML of accepted known differences (README: Gate an image push)")
    p.add_argument("--report-dir", metavar="DIR", type=Path, default=Path("reports"),
                   help="report root. Default: ./reports")
    p.add_argument("--run-id", metavar="ID", help="run id. Default: a new one")


def gate(args: argparse.Namespace, console: Console) -> int:
    """Run the gate, print its decision, return its exit code (:data:`EXIT_HELP`)."""
    from proofdiff.gate import run_gate

    signal.signal(signal.SIGTERM, raise_interrupt)
    result = run_gate(args.candidate, args.baseline, profiles=args.profiles,
                      overrides=args.overrides, select=args.profile, workloads=args.workload,
                      budget_s=args.budget_s, allowlist=args.allowlist,
                      report_dir=args.report_dir, run_id=args.run_id,
                      log=lambda line: console.print(Text(f"proofdiff: {line}"), soft_wrap=True))
    for t in result.timing:
        for m in t.metrics:
            console.print(Text(f"  {t.profile}/{t.workload} {m.metric}: {m.verdict} "
                               f"{m.direction} ratio {m.ratio} [{m.ratio_ci[0]}, {m.ratio_ci[1]}]"
                               f" ({m.n_pairs} pairs)"))
    for f in result.findings:
        head = f.message.splitlines()[0][:160] if f.message else ""
        state = f"accepted ({f.accepted_by})" if f.accepted else "BLOCKS"
        console.print(Text(f"  {state}: {f.check} on {f.profile}: {head}"))
    for e in result.stale:
        console.print(Text(f"  allowlist {e.status}: {e.message}"))
    style = {0: "green", 2: "yellow"}.get(result.exit_code, "red")
    console.print(Text(result.decision_line, style=f"bold {style}"))
    console.print(Text(f"report: {args.report_dir / result.run_id / 'index.html'}"))
    return result.exit_code
