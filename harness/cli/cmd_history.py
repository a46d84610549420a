"""``proofdiff history``: a metric over the stored runs, per machine, profile and workload,
with its change points, as a terminal table and an HTML page."""

from __future__ import annotations

from typing import TYPE_CHECKING

import argparse
from pathlib import Path

from proofdiff.cli.exit_codes import exit_help
from proofdiff.cli.option_flags import add_run_options, run_options

if TYPE_CHECKING:  # rich is imported when a command runs, not for --help
    from rich.console import Console

__all__ = ["EXIT_HELP", "add_arguments", "history"]

EXIT_HELP = exit_help("history")


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Options of ``proofdiff history``."""
    from proofdiff.history.changes import MAX_PVALUE, MIN_MAGNITUDE
    from proofdiff.history.metrics import METRICS

    p.add_argument("--metric", metavar="NAME", default="latency",
                   help=f"what to show: {', '.join(METRICS)}. Default: latency")
    p.add_argument("--machine", metavar="FINGERPRINT|HOST", default=None,
                   help="one machine: a fingerprint prefix or a hostname. Default: every one")
    p.add_argument("--command", metavar="NAME", action="append", default=[],
                   help="only runs made by this command (run, nightly, pytest; repeatable). "
                        "Default: every command")
    p.add_argument("--last", metavar="N", type=int, default=None,
                   help="the last N runs of each series. Default: all")
    p.add_argument("--html", metavar="FILE", type=Path, default=None,
                   help="the HTML page. Default: REPORT_DIR/history-METRIC.html")
    p.add_argument("--max-pvalue", metavar="P", type=float, default=MAX_PVALUE,
                   help=f"a change point's significance (t-test). Default: {MAX_PVALUE}")
    p.add_argument("--min-magnitude", metavar="FRACTION", type=float, default=MIN_MAGNITUDE,
                   help=f"the smallest relative step flagged. Default: {MIN_MAGNITUDE}")
    add_run_options(p, ("select", "select-profile", "report", "history"),
                    only=("profile", "workload", "report-dir", "history"))


def history(args: argparse.Namespace, console: Console) -> int:
    """Show the metric (module docstring); returns the exit code (:data:`EXIT_HELP`)."""
    from rich.text import Text

    from proofdiff.history.database import HistoryError, history_url, open_history
    from proofdiff.history.query import load_series, metric_spec, recorded_metrics, run_count
    from proofdiff.history.view import analyse, print_series, too_short, write_html

    opts = run_options(args)
    url = history_url(opts.history or "default", opts.report_root)
    if url.startswith("sqlite:///") and not Path(url[len("sqlite:///"):]).is_file():
        console.print(Text(f"no history at {url[len('sqlite:///'):]}: no run was stored there "
                           "(store runs with `proofdiff run --history [URL|FILE]`)"), soft_wrap=True)
        return 2
    try:
        spec = metric_spec(args.metric)
        db = open_history(url)
        try:
            runs = run_count(db)
            if not runs:
                console.print(Text(f"history {db.url} holds no runs yet: nothing to show "
                                   "(store runs with `proofdiff run --history`)"), soft_wrap=True)
                return 2
            series = load_series(db, spec.name, profile=opts.select, workload=opts.workloads,
                                 machine=args.machine, last=args.last,
                                 command=args.command)
            if not any(s.valued for s in series):
                have = recorded_metrics(db)
                console.print(Text(f"history {db.url} ({runs} runs) has no value of "
                                   f"{spec.name!r} for this selection; recorded metrics: "
                                   f"{', '.join(have) or 'none'}"), soft_wrap=True)
                return 2
        finally:
            db.close()
    except HistoryError as exc:
        console.print(Text(str(exc), style="bold red"), soft_wrap=True)
        return 3
    views = analyse(series, max_pvalue=args.max_pvalue, min_magnitude=args.min_magnitude)
    print_series(console, views)
    page = write_html(args.html or opts.report_root / f"history-{spec.name}.html", views,
                      url=db.url, metric=spec.name, runs=runs)
    console.print(Text(f"page: {page}"), soft_wrap=True)
    if any(c.regression for v in views for c in v.changes):
        return 1
    short = [v for v in views if too_short(v)]
    if short:
        console.print(Text(f"undecided: {len(short)} of {len(views)} series too short to judge "
                           "(store more runs)", style="bold yellow"), soft_wrap=True)
        return 2
    return 0
