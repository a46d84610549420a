"""``proofdiff repro``: a regression case from a failing run's report or from production
artifacts (harness/regressions/repro.py)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from proofdiff.cli.cmd_run import console_log
from proofdiff.cli.exit_codes import exit_help
from proofdiff.cli.option_flags import add_run_options, run_options

if TYPE_CHECKING:  # rich is imported when a command runs, not for --help
    from rich.console import Console

__all__ = ["EXIT_HELP", "add_arguments", "repro"]

EXIT_HELP = exit_help("repro")


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Options of ``proofdiff repro``."""
    p.add_argument("--id", required=True, metavar="CASE_ID", dest="case_id",
                   help="the case's id and folder name, e.g. wpost-partition-race")
    p.add_argument("--title", required=True, help="one line: what went wrong")
    p.add_argument("--incident", default="", help="the incident, as text")
    p.add_argument("--link", default="", help="a link to the incident")
    src = p.add_argument_group("source: a report, or production artifacts")
    src.add_argument("--from-report", metavar="DIR", type=Path, default=None,
                     help="reports/<run id> of a failing `proofdiff run`")
    src.add_argument("--config", metavar="FILE", default="", help="the daemon config as deployed")
    src.add_argument("--env-file", metavar="FILE", default="", help="the daemon's env (KEY=VALUE)")
    src.add_argument("--command", metavar="ARGS", default=None,
                     help="the daemon's args after the entrypoint, shell-quoted")
    src.add_argument("--mount", metavar="NAME=PATH", action="append", default=[],
                     help="a container mount, e.g. params=/var/tmp/filecoin-proof-parameters")
    src.add_argument("--inputs", metavar="FILE", default="",
                     help="the inputs in the workload format (C1 envelopes or WindowPoSt "
                          "vanilla proofs with public inputs); copied into the case. Default: "
                          "the workload (--workload, else the --like profile's)")
    src.add_argument("--image", metavar="TAG", default="", help="default: the reference image")
    src.add_argument("--concurrency", type=int, default=None, help="jobs in flight in production")
    src.add_argument("--job-ids", default=None, help="the job-id scheme production used")
    p.add_argument("--like", default="prod", help="the profile the artifacts are laid over "
                   "(client side). Default: prod")
    p.add_argument("--good", default="bench", help="the passing profile. Default: bench")
    p.add_argument("--oracle", metavar="SUITE/ORACLE", default=None,
                   help="the check expected to fail. Default: the first that fails")
    p.add_argument("--fix", metavar="PROFILE.KEY=VALUE", action="append", default=[],
                   help="an override that makes the case hold, when known (repeatable)")
    p.add_argument("--bisect", action="store_true", help="also bisect good -> the failing profile")
    p.add_argument("--binaries-build", metavar="TEXT", default="",
                   help="profiles run as host processes (runtime 'process'): how a user builds "
                        "their programs, written as the case's [binaries] build; the programs "
                        "are pinned by digest as found in --bin-dir. Default: a line naming "
                        "the programs, to be completed")
    p.add_argument("--out", metavar="DIR", type=Path, default=Path("regressions"),
                   help="where case folders go. Default: ./regressions")
    add_run_options(p, ("select", "artifacts", "report", "deadlines", "bisect", "fleet"))


def repro(args: argparse.Namespace, console: Console) -> int:
    """Make the case; print where it is and what it expects (:data:`EXIT_HELP`)."""
    from rich.text import Text
    from proofdiff.bisect.bisect_view import print_bisect
    from proofdiff.model.errors import ProofdiffError
    from proofdiff.regressions.repro import ProductionArtifacts
    from proofdiff.regressions.repro import repro as make

    opts = run_options(args)
    production = None
    if args.from_report is None:
        production = ProductionArtifacts(
            config=args.config, env_file=args.env_file, command=args.command,
            mounts=tuple(args.mount), inputs=args.inputs,
            workload=opts.workloads[0] if opts.workloads else "", image=args.image,
            concurrency=args.concurrency, job_ids=args.job_ids)
    try:
        res = make(opts, case_id=args.case_id, title=args.title, out_dir=args.out,
                   report=args.from_report, production=production, like=args.like,
                   good=args.good, oracle=args.oracle, incident=args.incident, link=args.link,
                   fix=args.fix, do_bisect=args.bisect, binaries_build=args.binaries_build,
                   log=console_log(console))
    except ProofdiffError as exc:
        console.print(Text(f"error: {exc}", style="bold red"), soft_wrap=True)
        return 3
    except KeyboardInterrupt:
        return 130
    if res.bisect is not None:
        print_bisect(res.bisect, console)
    if not res.reproduced:
        console.print(Text(res.message, style="yellow"), soft_wrap=True)
        return 1
    console.print(Text(f"case written: {res.case_dir}/case.toml ({res.wall_s:.0f} s); it "
                       f"expects {res.check} to fail: {res.message}", style="green"),
                  soft_wrap=True)
    return 0
