"""``proofdiff bisect``: the minimal config change from a passing profile to a failing one."""

from __future__ import annotations

import argparse
import os
import signal
from pathlib import Path

from rich.console import Console
from rich.text import Text

from proofdiff.model.profile_file import DEFAULT_PROFILE_SET

from proofdiff.cli.cmd_run import positive_seconds, raise_interrupt

__all__ = ["EXIT_HELP", "add_arguments", "bisect"]

EXIT_HELP = """exit codes:
  0    found: the minimal failure-inducing change is printed, each item with both values
  1    nothing to bisect: the good profile already fails, or the bad one passes (which, and
       the evidence, are printed)
  2    unresolved: a flaky oracle, probes that broke, or --budget-s ran out (probes so far kept)
  3    the bisection could not run (the reason is named: a profile, an oracle, an image)
  130  interrupted (containers removed, the report kept)"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Options of ``proofdiff bisect``."""
    p.add_argument("--profiles", metavar="SET|FILE", default=DEFAULT_PROFILE_SET,
                   help=f"a shipped profile set or a TOML file. Default: {DEFAULT_PROFILE_SET}")
    p.add_argument("--good", metavar="NAME", default="bench",
                   help="the passing profile. Default: bench")
    p.add_argument("--bad", metavar="NAME", default="prod",
                   help="the failing profile. Default: prod")
    p.add_argument("--workload", metavar="NAME", default=None,
                   help="workload. Default: the bad profile's")
    p.add_argument("--oracle", metavar="SUITE/ORACLE", default=None,
                   help="what counts as failing, e.g. validity/proofs or a whole suite "
                        "(isolation). Default: any failure of preflight, validity, warmup, "
                        "isolation")
    p.add_argument("--set", metavar="PROFILE.KEY=VALUE", action="append", default=[],
                   dest="overrides", help="override a profile key (repeatable), e.g. "
                   "'*.env.REFPROVER_FAULTS=partition-race'")
    p.add_argument("--budget-s", metavar="SECONDS", type=positive_seconds, default=1800.0,
                   help="no probe starts after this. Default: 1800")
    p.add_argument("--jobs", metavar="N", type=int, default=max(1, (os.cpu_count() or 1) // 4),
                   help="probes side by side (each is a daemon proving). Default: cores / 4")
    p.add_argument("--report-dir", metavar="DIR", type=Path, default=Path("reports"),
                   help="report root. Default: ./reports")
    p.add_argument("--run-id", metavar="ID", help="run id. Default: a new one")


def bisect(args: argparse.Namespace, console: Console) -> int:
    """Run the bisection, print the probe table and the minimal change, return the exit
    code (:data:`EXIT_HELP`)."""
    from proofdiff.bisect import bisect_profiles
    from proofdiff.bisect.bisect_view import print_bisect

    signal.signal(signal.SIGTERM, raise_interrupt)
    result = bisect_profiles(args.profiles, overrides=args.overrides, good=args.good,
                             bad=args.bad, workload=args.workload, oracle=args.oracle,
                             budget_s=args.budget_s, jobs=args.jobs,
                             report_dir=args.report_dir, run_id=args.run_id,
                             log=lambda line: console.print(Text(f"proofdiff: {line}"),
                                                            soft_wrap=True))
    print_bisect(result, console)
    console.print(Text(f"report: {args.report_dir / result.run_id / 'index.html'}"))
    return result.exit_code
