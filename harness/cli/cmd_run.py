"""``proofdiff run``: a differential run from the command line, through the same
:func:`~proofdiff.core.differential.run_differential` the pytest plugin and workflows use."""

from __future__ import annotations

import argparse
import signal
from pathlib import Path
from types import FrameType

from rich.console import Console

from proofdiff.core.differential import run_differential
from proofdiff.model.profile_file import DEFAULT_PROFILE_SET
from proofdiff.oracles.suite_table import DEFAULT_SUITES, SUITES
from proofdiff.report.console import print_result

__all__ = ["EXIT_HELP", "add_arguments", "add_run_options", "positive_seconds", "raise_interrupt",
           "run", "workload_file"]

EXIT_HELP = """exit codes:
  0    SAME: every selected check passed on every profile
  1    DIVERGED: an oracle fails on a profile but not on the baseline (the first profile)
  2    FAILED or INCOMPLETE: failures on every profile alike, or checks skipped, no divergence
  3    ERROR: the run could not be carried out (profile file, build, Docker, daemon start)
  130  interrupted (the run's containers are removed, the report is kept)"""


def workload_file(text: str) -> tuple[str, str]:
    """``NAME=PATH`` of ``--workload-file``."""
    name, sep, path = text.partition("=")
    if not sep or not name or not path:
        raise argparse.ArgumentTypeError(f"{text!r}: expected NAME=PATH, e.g. "
                                         "wpost-2k=/root/.cache/proofdiff/workloads/x/wpost-2k.json")
    return name, path


def positive_seconds(text: str) -> float:
    """A positive number of seconds (``--verify-timeout``)."""
    try:
        val = float(text)
    except ValueError:
        val = -1.0
    if val <= 0:
        raise argparse.ArgumentTypeError(f"{text!r}: expected a positive number of seconds")
    return val


def add_run_options(p: argparse.ArgumentParser) -> None:
    """Options every differential command shares (run, catch-matrix)."""
    p.add_argument("--profiles", metavar="SET|FILE", default=DEFAULT_PROFILE_SET,
                   help="a shipped profile set (refprover, cuzk) or a TOML file. Default: "
                   f"{DEFAULT_PROFILE_SET}")
    p.add_argument("--set", metavar="PROFILE.KEY=VALUE", action="append", default=[],
                   dest="overrides", help="override a profile key, e.g. "
                   "prod.env.REFPROVER_FAULTS=partition-race (repeatable; '*' = every profile)")
    p.add_argument("--report-dir", metavar="DIR", type=Path, default=Path("reports"),
                   help="report root. Default: ./reports")
    p.add_argument("--param-cache", metavar="DIR", type=Path, default=None,
                   help="host dir of .params/.vk, mounted read-only. Default: the build's")
    p.add_argument("--workload-file", metavar="NAME=PATH", action="append", default=[],
                   type=workload_file, help="a workload file (repeatable). Default: the build's")
    p.add_argument("--verifier-image", metavar="TAG", default=None,
                   help="image whose `verify` checks every proof (a cuzk image has none). "
                   "Default: the reference image the build made")
    p.add_argument("--verify-timeout", metavar="SECONDS", type=positive_seconds, default=300.0,
                   help="deadline of one verifier container. Default: 300")
    p.add_argument("--params-manifest", metavar="FILE", type=Path, default=None,
                   help="parameters.json to check the params against (the published one for "
                   "the official Filecoin params). Default: the one the build wrote into the "
                   "param cache")
    p.add_argument("--bin-dir", metavar="DIR", type=Path, default=None,
                   help="refprover's host binaries (refprover, verify, bench, paramgen, seal) "
                   "for process and attach runtimes, e.g. carried to a host without cargo. "
                   "Default: the build's (cargo)")
    p.add_argument("--run-id", metavar="ID", help="run id. Default: a new one")


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Options of ``proofdiff run``."""
    add_run_options(p)
    p.add_argument("--profile", metavar="NAME", action="append", default=[],
                   help="profile to run (repeatable; the first is the baseline). Default: all")
    p.add_argument("--workload", metavar="NAME", action="append", default=[],
                   help="workload (repeatable). Default: the profiles' workload")
    p.add_argument("--full", action="store_true", help="every workload, the slow PoRep tier "
                   "included (porep-2k, porep-2k-2p: ~1.7 GB of params, a minute or more per "
                   "proof on 2 cores)")
    p.add_argument("--suite", metavar="NAME", action="append", default=[],
                   choices=[*SUITES, "all", "regressions"], help=f"suite to run (repeatable; "
                   f"'all' = every suite; 'regressions' replays every regression case instead, "
                   f"as suites/test_regressions.py). Default: {', '.join(DEFAULT_SUITES)}")
    p.add_argument("--image", metavar="TAG", action="append", default=[],
                   help="run every profile on this image (repeatable: one differential per "
                   "image). Default: each profile's image (the reference image when unset)")


def raise_interrupt(_signum: int, _frame: FrameType | None) -> None:
    """SIGTERM handler: raise KeyboardInterrupt, so a terminated run cleans up as Ctrl-C does
    (containers removed, the report written, exit 130)."""
    raise KeyboardInterrupt


def _regressions(args: argparse.Namespace, console: Console) -> int:
    from rich.table import Table

    from proofdiff.regressions import cases_dir
    from proofdiff.regressions.replay_all import exit_code, replay_all

    root = cases_dir()
    verdicts = replay_all(root, report_dir=args.report_dir,
                          log=lambda line: console.print(f"proofdiff: {line}", markup=False,
                                                         highlight=False, soft_wrap=True))
    table = Table(title=f"regression cases in {root}")
    for col in ("case", "status", "verdict", "what happened"):
        table.add_column(col)
    for v in verdicts:
        table.add_row(v.case, v.status, v.verdict, v.message[:200])
    console.print(table)
    code = exit_code(verdicts)
    console.print(f"{len(verdicts)} case(s); exit {code}", markup=False)
    return code


def run(args: argparse.Namespace, console: Console) -> int:
    """Run, print the table and the verdict, return the verdict's exit code."""
    from proofdiff.artifacts import WORKLOADS

    signal.signal(signal.SIGTERM, raise_interrupt)
    if "regressions" in args.suite:
        return _regressions(args, console)
    workloads = list(WORKLOADS) if args.full else args.workload
    result = run_differential(
        args.profiles, overrides=args.overrides, select=args.profile, workloads=workloads,
        suites=args.suite, images=args.image, report_dir=args.report_dir, run_id=args.run_id,
        param_cache=args.param_cache, workload_files=dict(args.workload_file),
        verifier_image=args.verifier_image, verify_timeout_s=args.verify_timeout,
        params_manifest=args.params_manifest, bin_dir=args.bin_dir,
        log=lambda line: console.print(f"proofdiff: {line}", markup=False, highlight=False,
                                       soft_wrap=True))
    print_result(console, result, str(args.report_dir / result.run_id / "index.html"))
    return result.exit_code
