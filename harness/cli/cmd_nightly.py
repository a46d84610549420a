"""``proofdiff nightly``: tonight's differential with timing, stored in the history and compared
with the nights before it (:mod:`proofdiff.nightly`)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from proofdiff.cli.cmd_run import console_log, notify_webhook
from proofdiff.cli.exit_codes import exit_help
from proofdiff.cli.option_flags import EVERY_GROUP, add_run_options, run_options
from proofdiff.model.run_options import RunOptions
from proofdiff.oracles.suite_table import SUITES

if TYPE_CHECKING:  # rich is imported when a command runs, not for --help
    from rich.console import Console

__all__ = ["EXIT_HELP", "add_arguments", "nightly"]

EXIT_HELP = exit_help("nightly")


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Options of ``proofdiff nightly``: every run option (``--history`` defaults to
    REPORT_DIR/history.sqlite, ``--suite`` to the default suites and timing) but the single
    bisection's ``--bisect-budget``, which the night's own ``--bisect-budget`` replaces: the
    same budget, spent over every bisection of the night, and 0 allowed (no bisection).
    ``--bisect-budget-s`` is its other spelling, as on the commands of one bisection."""
    budget: dict[str, Any] = {"dest": "bisect_budget_s", "metavar": "SECONDS",
                              "type": _seconds_or_zero, "default": RunOptions().bisect_budget_s}
    p.add_argument("--bisect-budget", **budget,
                   help="wall-clock budget of the bisections of tonight's NEW divergences "
                        "(each from its baseline to its profile, its check as the oracle), "
                        "one after another: each gets what is left, no probe starts after "
                        "it, and a divergence not reached is reported as not bisected "
                        "(budget spent); 0 disables bisection; --bisect-budget-s is the same "
                        f"option. Default: {RunOptions().bisect_budget_s:.0f}, the single "
                        "bisection's")
    p.add_argument("--bisect-budget-s", **budget, help=argparse.SUPPRESS)
    p.add_argument("--allure-history", metavar="DIR", type=_allure_dir, default="",
                   help="the previous night's Allure history, copied into tonight's "
                        "allure-results/history/ so that `allure generate` continues each "
                        "check's history and the trends: the report `allure generate` made of "
                        "the previous night (or its history/ folder); a DIR that does not "
                        "exist yet is the first night. Default: the latest earlier night's "
                        "REPORT_DIR/<night>/allure-report/history/ (or the history its "
                        "allure-results carried)")
    add_run_options(p, [*(g for g in EVERY_GROUP if g != "bisect"), "fleet"],
                    choices={"suite": [*SUITES, "all"]})
    add_run_options(p, ("bisect",), only=("bisect-jobs",))


def _allure_dir(text: str) -> str:
    """``--allure-history``: a folder, or a path that does not exist yet (argparse's type)."""
    path = Path(text).expanduser()
    if path.exists() and not path.is_dir():
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a folder: give the Allure report folder of the previous night "
            "(or its history/ folder)")
    return text


def _seconds_or_zero(text: str) -> float:
    """A budget in seconds: 0 or more (argparse's type; a bad value is its usage error)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not value >= 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r}: give 0 (no bisection) or more seconds")
    return value


def nightly(args: argparse.Namespace, console: Console) -> int:
    """Run the night, print its standings and decision, return its exit code
    (:data:`EXIT_HELP`)."""
    from rich.text import Text

    from proofdiff.nightly.nightly import run_nightly
    from proofdiff.nightly.nightly_result import Standing
    from proofdiff.nightly.nightly_view import nightly_view

    opts = run_options(args)
    result = run_nightly(opts, log=console_log(console), bisect_budget_s=args.bisect_budget_s,
                         allure_history=args.allure_history)
    for c in result.checks:
        style = {Standing.NEW: "bold red", Standing.ERROR: "red",
                 Standing.FIXED: "green"}.get(c.standing, "yellow")
        before = ", ".join(o or "-" for o in c.past) or "no earlier night"
        console.print(Text(f"  {c.standing.value}: {c.check} on {c.profile}/{c.workload} "
                           f"(tonight {c.outcome or 'no record'}; before: {before})",
                           style=style),
                      soft_wrap=True)
    for s in result.slowdowns:
        console.print(Text(f"  slower: {s.metric} on {s.profile}/{s.workload}: {s.headline}",
                           style="bold red"), soft_wrap=True)
    for b in result.bisections:
        console.print(Text(f"  bisected: {b.summary()}" if b.found else f"  {b.summary()}",
                           style="bold" if b.found else "yellow"), soft_wrap=True)
    for a in result.accepted:
        console.print(Text(f"  accepted: {a}", style="yellow"), soft_wrap=True)
    for h in result.hosts:
        console.print(Text(f"  host {h.host}: {h.decision.value}: {h.decision_line} (report: "
                           f"{opts.report_root / h.run_id / 'index.html'})",
                           style={0: "green", 2: "yellow"}.get(h.exit_code, "red")),
                      soft_wrap=True)
    for e in result.errors:
        console.print(Text(e, style="red"), soft_wrap=True)
    style = {0: "green", 2: "yellow"}.get(result.exit_code, "red")
    console.print(Text(result.decision_line, style=f"bold {style}"), soft_wrap=True)
    page = opts.report_root / result.run_id / "index.html"
    console.print(Text(f"report: {page}"), soft_wrap=True)
    if opts.notify:
        notify_webhook(console, opts.notify, nightly_view(result), page)
    return result.exit_code
