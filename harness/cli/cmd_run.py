"""``proofdiff run``: a differential run from the command line, through the same
:func:`~proofdiff.core.differential.run_differential` the pytest plugin and workflows use."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

from proofdiff.cli.exit_codes import exit_help
from proofdiff.cli.history_append import append_history, exit_with_history
from proofdiff.cli.option_flags import EVERY_GROUP, add_run_options, run_options
from proofdiff.model.run_options import RunOptions
from proofdiff.oracles.suite_table import DEFAULT_SUITES, SUITES

if TYPE_CHECKING:  # rich is imported when a command runs, not for --help
    from rich.console import Console
    from rich.table import Table

    from proofdiff.model.result import DifferentialResult
    from proofdiff.regressions.replay_all import CaseVerdict
    from proofdiff.report.view import ReportView

__all__ = ["EXIT_HELP", "add_arguments", "console_log", "notify_webhook", "run"]

EXIT_HELP = exit_help("run")


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Options of ``proofdiff run``."""
    add_run_options(p, (*EVERY_GROUP, "fleet"),
                    choices={"suite": [*SUITES, "all", "regressions"]})
    p.add_argument("--full", action="store_true", help="every workload, the slow PoRep tier "
                   "included (porep-2k, porep-2k-2p: ~1.7 GB of params, a minute or more per "
                   f"proof on 2 cores). Default suites: {', '.join(DEFAULT_SUITES)}; "
                   "--suite regressions replays every regression case instead")
    p.add_argument("--allow-skipped", action="store_true",
                   help="with --suite regressions: a case skipped because its inputs, image or "
                        "binaries are missing here does not fail the replay (it is still "
                        "counted and named). Default: a skipped case makes the replay exit 2; "
                        "every case skipped always does")
    p.add_argument("--bisect", action="store_true",
                   help="bisect the first divergence (its baseline -> its profile, its check "
                        "as the oracle) within --bisect-budget; when a 1-minimal change is "
                        "found and confirmed, it replaces the divergence's ranked suspects in "
                        "the report. The exit code stays the run's verdict's")


def console_log(console: Console) -> Callable[[str], None]:
    """A progress logger printing ``proofdiff: <line>`` literally (no rich markup)."""
    def log(line: str) -> None:
        console.print(f"proofdiff: {line}", markup=False, highlight=False, soft_wrap=True)
    return log


def notify_webhook(console: Console, url: str, view: ReportView, page: Path) -> None:
    """``--notify URL``: POST the run's summary (:mod:`proofdiff.report.notify`) and print
    what became of it; a webhook that fails is printed in red and changes no exit code."""
    from rich.text import Text

    from proofdiff.report.notify import notify

    sent, line = notify(url, view, page)
    console.print(Text(f"proofdiff: {line}", style="" if sent else "bold red"), soft_wrap=True)


def _regressions(opts: RunOptions, console: Console, *, allow_skipped: bool = False) -> int:
    from proofdiff.model.errors import ProofdiffError
    from proofdiff.regressions.replay_all import exit_code, replay_all

    stored = [True]

    def store(res: DifferentialResult) -> None:  # each replay, where --history asks
        stored[0] &= append_history(opts, res, console, command="replay")

    try:
        verdicts = replay_all(opts, log=console_log(console), on_result=store)
    except ProofdiffError as exc:  # the cluster cannot be used: no case was replayed
        console.print(f"proofdiff: ERROR: {exc}", markup=False, highlight=False)
        return 3
    console.print(verdict_table(verdicts, f"regression cases in {opts.regressions_dir}"))
    skipped = [v.case for v in verdicts if v.verdict == "SKIP"]
    if skipped:
        console.print(f"{len(skipped)} of {len(verdicts)} case(s) skipped, not judged: "
                      + ", ".join(skipped) + ("" if allow_skipped else
                                              " (exit 2; --allow-skipped accepts them)"),
                      markup=False)
    code = exit_with_history(exit_code(verdicts, allow_skipped=allow_skipped), stored[0])
    console.print(f"{len(verdicts)} case(s); exit {code}", markup=False)
    return code


def verdict_table(verdicts: Sequence[CaseVerdict], title: str) -> Table:
    """The replayed cases, one row each: case, status, verdict and what happened, each shown as
    written (rich.text.Text: a message's ``[fix]`` is text, not console markup)."""
    from rich.table import Table
    from rich.text import Text

    table = Table(title=title)
    for col in ("case", "status", "verdict", "what happened"):
        table.add_column(col)
    for v in verdicts:
        table.add_row(*(Text(x) for x in (v.case, v.status, v.verdict, v.message[:400])))
    return table


def run(args: argparse.Namespace, console: Console) -> int:
    """Run, print the table and the verdict, return the verdict's exit code."""
    from proofdiff.report.console import print_result

    opts = run_options(args)
    if "regressions" in opts.suites:
        return _regressions(opts, console, allow_skipped=args.allow_skipped)
    if args.full:
        from proofdiff.artifacts.sealed_workloads import WORKLOADS

        opts = msgspec.structs.replace(opts, workloads=tuple(WORKLOADS))
    if not args.bisect:
        result = _differential(opts, console_log(console), write_report=True)
    else:
        result = _run_and_bisect(opts, console)
    page = opts.report_root / result.run_id / "index.html"
    print_result(console, result, str(page))
    stored = append_history(opts, result, console, command="run")
    if opts.notify:
        from proofdiff.report.differential_view import differential_view

        notify_webhook(console, opts.notify, differential_view(result), page)
    return exit_with_history(result.exit_code, stored)


def _differential(opts: RunOptions, log: Callable[[str], None], *,
                  write_report: bool) -> DifferentialResult:
    """The differential: here, or as one unit on the cluster of ``--cluster`` / ``--hosts``."""
    if opts.cluster or opts.hosts:
        from proofdiff.fleet.differential import differential_on_fleet

        return differential_on_fleet(opts, log=log, write_report=write_report)
    from proofdiff.core.differential import run_differential

    return run_differential(opts, log=log, write_report=write_report)


def _run_and_bisect(opts: RunOptions, console: Console) -> DifferentialResult:
    """The differential, then the bisection of its first divergence; the run's report is
    written once, with the bisection's result in it (even when the bisection is interrupted)."""
    from proofdiff.bisect.bisect_view import print_bisect
    from proofdiff.bisect.on_divergence import bisect_first_divergence
    from proofdiff.model.status import Verdict
    from proofdiff.report.writer import write_report

    result = _differential(opts, console_log(console), write_report=False)
    try:
        if result.verdict is not Verdict.INTERRUPTED:  # a Ctrl-C ends the run, bisect too
            result, bis = bisect_first_divergence(result, opts, log=console_log(console))
            if bis is not None:
                print_bisect(bis, console)
    finally:
        write_report(result, opts.report_root)
    return result
