"""``proofdiff bisect``: the minimal config change from a passing profile to a failing one."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from proofdiff.cli.cmd_run import console_log
from proofdiff.cli.exit_codes import exit_help
from proofdiff.cli.option_flags import add_run_options, run_options

if TYPE_CHECKING:  # rich is imported when a command runs, not for --help
    from rich.console import Console

__all__ = ["EXIT_HELP", "add_arguments", "bisect"]

EXIT_HELP = exit_help("bisect")


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Options of ``proofdiff bisect``."""
    p.add_argument("--good", metavar="NAME", default="bench",
                   help="the passing profile. Default: bench")
    p.add_argument("--bad", metavar="NAME", default="prod",
                   help="the failing profile. Default: prod")
    p.add_argument("--oracle", metavar="SUITE/ORACLE", default=None,
                   help="what counts as failing, e.g. validity/proofs or a whole suite "
                        "(isolation). Default: any failure of preflight, validity, warmup, "
                        "isolation")
    add_run_options(p, ("select", "artifacts", "report", "deadlines", "bisect", "fleet"))


def bisect(args: argparse.Namespace, console: Console) -> int:
    """Run the bisection, print the probe table and the minimal change, return the exit
    code (:data:`EXIT_HELP`)."""
    from rich.text import Text
    from proofdiff.bisect import bisect_profiles
    from proofdiff.bisect.bisect_view import print_bisect

    opts = run_options(args)
    result = bisect_profiles(opts, good=args.good, bad=args.bad, oracle=args.oracle,
                             log=console_log(console))
    print_bisect(result, console)
    console.print(Text(f"report: {opts.report_root / result.run_id / 'index.html'}"))
    return result.exit_code
