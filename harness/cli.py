"""``proofdiff``: the command line.

    proofdiff run [--image TAG] [--profiles FILE] [--profile NAME]... [--workload NAME]...
                  [--full] [--report-dir DIR] [--set PROFILE.KEY=VALUE]... [--keep-going]
                  [-n WORKERS]
    proofdiff build [--workload NAME]...
    proofdiff reap [--run-id ID]
    proofdiff catch-matrix [--fault NAME]... [--repeat-clean N] [--targeted] (harness.catch_matrix)

``run --suite NAME`` (repeatable) picks suites; default: every suite but ``timing`` (minutes of
interleaved samples on a quiet host), ``--suite all`` adds it.

``run`` ensures the artifacts (harness.build), runs ``suites/`` through pytest in-process with
the matching ``--proofdiff-*`` options, prints a side-by-side table and a one-line verdict from
``reports/<run id>/summary.json``, and exits:

    0 every profile valid and in agreement; 1 the profiles diverged; 2 no divergence but some
    proof or job failed; 3 the run could not be carried out (profile file, build, Docker,
    daemon start); 130 interrupted (containers of the run are removed).
"""

from __future__ import annotations

import argparse
import signal
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from types import FrameType
from typing import Any

from rich.console import Console
from rich.table import Table

from .launcher import LaunchError, new_run_id, reap
from .profiles import ProfileError, load_profiles, select_profiles
from .report import build_summary, load_summary, side_by_side, write_report

__all__ = ["EXIT_DIVERGED", "EXIT_ERROR", "EXIT_FAILED", "EXIT_INTERRUPTED", "EXIT_OK", "main"]

EXIT_OK, EXIT_DIVERGED, EXIT_FAILED, EXIT_ERROR, EXIT_INTERRUPTED = 0, 1, 2, 3, 130
REPO = Path(__file__).resolve().parents[1]
DEFAULT_IMAGE = "proofdiff/refprover:latest"
#: The suites of suites/, in run order; ``proofdiff run`` runs DEFAULT_SUITES unless --suite.
SUITES = ("preflight", "validity", "warmup", "isolation", "timing")
DEFAULT_SUITES = ("preflight", "validity", "warmup", "isolation")


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="proofdiff", description="Differential regression testing "
                                "of proof-generation daemons: bench vs prod on one image.")
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="build/reuse artifacts, run the suites, print the verdict")
    r.add_argument("--image", metavar="TAG", help="image for every profile. Default: the "
                   "profiles' image, pinned to the tag the build made")
    r.add_argument("--profiles", metavar="FILE", type=Path,
                   default=REPO / "profiles" / "refprover.toml",
                   help="profile file. Default: profiles/refprover.toml")
    r.add_argument("--profile", metavar="NAME", action="append", default=[],
                   help="profile to run (repeatable; first = baseline). Default: all")
    r.add_argument("--workload", metavar="NAME", action="append", default=[],
                   help="workload (repeatable). Default: the profiles' workload")
    r.add_argument("--full", action="store_true",
                   help="run every known workload, the slow PoRep tier included (porep-2k, "
                   "porep-2k-2p: ~1.7 GB of params, about a minute or more per proof on 2 "
                   "cores). Default: only the profiles' (or --workload) workloads")
    r.add_argument("--report-dir", metavar="DIR", type=Path, default=REPO / "reports",
                   help="report root. Default: reports/")
    r.add_argument("--set", metavar="PROFILE.KEY=VALUE", action="append", default=[],
                   dest="overrides", help="override a profile key, e.g. "
                   "prod.env.REFPROVER_FAULTS=partition-race (repeatable)")
    r.add_argument("--keep-going", action="store_true",
                   help="keep running other profiles after a daemon fails to start")
    r.add_argument("-n", "--workers", metavar="N", type=int, default=0,
                   help="pytest-xdist workers. Default: 0 (one process)")
    r.add_argument("--run-id", metavar="ID", help="run id. Default: a new one")
    r.add_argument("--param-cache", metavar="DIR", type=Path, default=None,
                   help="param cache for the daemons and the verifier, e.g. the official "
                   "Filecoin params a real cuzk image proves with. Default: the params the "
                   "build generated")
    r.add_argument("--suite", metavar="NAME", action="append", default=[],
                   choices=[*SUITES, "all"],
                   help=f"suite to run (repeatable): {', '.join(SUITES)} or all. Default: "
                   f"{', '.join(DEFAULT_SUITES)} (timing takes minutes: --suite all)")
    r.add_argument("--pytest-arg", metavar="ARG", action="append", default=[],
                   help="extra pytest argument (repeatable), e.g. --pytest-arg=-x")
    b = sub.add_parser("build", help="build/reuse the image, params and workloads")
    b.add_argument("--workload", metavar="NAME", action="append", default=[])
    from .catch_matrix import add_arguments as _catch_args

    _catch_args(sub.add_parser("catch-matrix", help="run the suites against the clean image and "
                               "each fault switch on prod; print fault x suite"))
    rp = sub.add_parser("reap", help="remove leftover proofdiff containers")
    rp.add_argument("--run-id", metavar="ID", help="only this run's. Default: every run's")
    return p


def _sigterm(_signum: int, _frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``proofdiff`` console script; returns the exit code."""
    args = _parser().parse_args(argv)
    signal.signal(signal.SIGTERM, _sigterm)
    console = Console(stderr=False)
    if not console.is_terminal:  # CI logs: keep the side-by-side table's columns readable
        console = Console(stderr=False, width=132)
    if args.cmd == "reap":
        try:
            removed = reap(args.run_id)
        except LaunchError as exc:
            console.print(f"[red]{exc}[/red]")
            return EXIT_ERROR
        console.print(f"removed {len(removed)} container(s)" + (f": {', '.join(removed)}"
                                                                if removed else ""))
        return EXIT_OK
    if args.cmd == "build":
        return _build(console, args.workload or ["wpost-2k"])
    if args.cmd == "catch-matrix":
        from .catch_matrix import run_matrix

        return run_matrix(args, console)
    return _run(console, args)


def _build(console: Console, workloads: list[str]) -> int:
    from harness.build import BuildError, ensure_artifacts

    try:
        art = ensure_artifacts(workloads=workloads, log=lambda line: console.print(line))
    except BuildError as exc:
        console.print(f"[red]{exc}[/red]")
        return EXIT_ERROR
    console.print(f"image {art.image_tag}\nparams {art.param_cache}")
    for name, path in art.workloads.items():
        console.print(f"workload {name} {path}")
    return EXIT_OK


def _error_report(args: argparse.Namespace, run_id: str, error: str,
                  profiles: dict[str, Any] | None = None) -> Path:
    summary = build_summary(run_id=run_id, profiles=profiles or {}, runs=[], errors=[error],
                            image_tag=args.image or "")
    return write_report(args.report_dir, summary)


def _run(console: Console, args: argparse.Namespace) -> int:
    run_id = args.run_id or new_run_id()
    t0 = time.monotonic()
    profiles: dict[str, Any] = {}
    launched = False  # containers can exist only once pytest started
    try:
        try:
            profiles = select_profiles(load_profiles(args.profiles, args.overrides), args.profile)
        except ProfileError as exc:
            out = _error_report(args, run_id, str(exc))
            console.print(f"[red]profile error:[/red] {exc}\nreport: {out / 'index.html'}")
            return EXIT_ERROR
        workloads = args.workload or list(dict.fromkeys(p.workload for p in profiles.values()))
        from harness.build import WORKLOADS, BuildError, ensure_artifacts

        if args.full:
            workloads = list(dict.fromkeys([*workloads, *WORKLOADS]))

        try:
            art = ensure_artifacts(workloads=workloads,
                                   log=lambda line: console.print(f"[dim]build: {line}[/dim]"))
        except BuildError as exc:
            out = _error_report(args, run_id, str(exc), profiles)
            console.print(f"[red]{exc}[/red]\nreport: {out / 'index.html'}")
            return EXIT_ERROR
        image = args.image
        if image is None and all(p.image == DEFAULT_IMAGE for p in profiles.values()):
            image = art.image_tag
        launched = True
        rc = _pytest(args, run_id, image, args.param_cache or art.param_cache, art.workloads,
                     workloads, verifier_image=art.image_tag)
        if rc == 2:  # pytest.ExitCode.INTERRUPTED: its fixtures already removed the daemons
            console.print(f"[yellow]interrupted; report so far: {args.report_dir / run_id}[/yellow]")
            return EXIT_INTERRUPTED
        return _finish(console, args, run_id, rc, time.monotonic() - t0)
    except KeyboardInterrupt:
        console.print(f"[yellow]interrupted; removing the containers of run {run_id}[/yellow]")
        return EXIT_INTERRUPTED
    finally:
        if launched:
            try:
                reap(run_id)
            except Exception as exc:  # Docker unreachable: nothing of ours is running there
                console.print(f"[yellow]reap of run {run_id} failed: {exc}[/yellow]")


def _pytest(args: argparse.Namespace, run_id: str, image: str | None, param_cache: Path,
            workload_files: dict[str, Path], workloads: list[str],
            verifier_image: str = "") -> int:
    import pytest

    pargs = [*_suite_paths(args), f"--rootdir={REPO}", "-p", "no:cacheprovider",
             "-rfE", "--tb=short",
             f"--proofdiff-profiles={args.profiles}", f"--proofdiff-run-id={run_id}",
             f"--proofdiff-report-dir={args.report_dir}",
             f"--proofdiff-param-cache={param_cache}",
             # JUnit for CI gates, allure-results for the step/attachment view (DESIGN.md §6)
             f"--junitxml={args.report_dir / run_id / 'junit.xml'}",
             f"--alluredir={args.report_dir / run_id / 'allure-results'}"]
    pargs += [f"--proofdiff-workload-file={n}={p}" for n, p in workload_files.items()]
    pargs += [f"--proofdiff-workload={w}" for w in workloads]
    pargs += [f"--proofdiff-profile={p}" for p in args.profile]
    pargs += [f"--proofdiff-set={s}" for s in args.overrides]
    if image:
        pargs.append(f"--proofdiff-image={image}")
    if verifier_image:
        pargs.append(f"--proofdiff-verifier-image={verifier_image}")
    if args.keep_going:
        pargs.append("--proofdiff-keep-going")
    if args.workers:
        pargs += ["-n", str(args.workers)]
    pargs += list(args.pytest_arg)
    return int(pytest.main(pargs))


def _suite_paths(args: argparse.Namespace) -> list[str]:
    """``suites/`` for ``--suite all``, else one file per selected suite (default set)."""
    chosen = list(getattr(args, "suite", []) or DEFAULT_SUITES)
    if "all" in chosen:
        return [str(REPO / "suites")]
    return [str(REPO / "suites" / f"test_{n}.py") for n in dict.fromkeys(chosen)]


def _finish(console: Console, args: argparse.Namespace, run_id: str, rc: int,
            elapsed_s: float) -> int:
    path = args.report_dir / run_id
    try:
        summary = load_summary(path)
    except (OSError, ValueError) as exc:
        out = _error_report(args, run_id, f"pytest exited {rc} without writing a report "
                            f"({exc}); see the pytest output above")
        console.print(f"[red]no report from the run (pytest exit {rc})[/red]; wrote {out}")
        return EXIT_ERROR if rc != 0 else EXIT_FAILED
    table = Table(title=f"proofdiff run {run_id} ({elapsed_s:.0f} s)")
    for col in ("profile", "workload", "outcome", "proofs", "valid", "invalid", "failed",
                "median ms", "start-to-ready ms"):
        table.add_column(col, justify="left" if col in ("profile", "workload", "outcome")
                         else "right")
    for row in side_by_side(summary):
        colour = "green" if row["outcome"] == "valid" else "red"
        table.add_row(row["profile"], row["workload"], f"[{colour}]{row['outcome']}[/{colour}]",
                      f"{row['proofs']}/{row['jobs']}",
                      str(row["valid"]) + (f" (+{row['unverified']} unverified)"
                                           if row.get("unverified") else ""),
                      str(row["invalid"]),
                      str(row["failed"]),
                      "-" if row["median_ms"] is None else f"{row['median_ms']:.0f}",
                      "-" if row["start_to_ready_ms"] is None
                      else f"{row['start_to_ready_ms']:.0f}")
    console.print(table)
    for div in summary["divergences"]:
        console.print(f"[red]{div['headline']}[/red]")
        for i, s in enumerate(div["suspects"][:5]):
            console.print(f"  suspect {i + 1}: {s['line']}")
    for div in summary.get("oracle_divergences", []):
        console.print(f"[red]{div['headline']}[/red]\n  {div['message'].splitlines()[-1][:300]}")
        for i, s in enumerate(div.get("suspects", [])[:3]):
            console.print(f"  suspect {i + 1}: {s['line']}")
    verdict = summary["verdict"]
    colour = "green" if verdict == "pass" else "red"
    console.print(f"[{colour}]{verdict.upper()}[/{colour}]: {summary['verdict_line']}")
    console.print(f"report: {path / 'index.html'}")
    if verdict == "diverged":
        return EXIT_DIVERGED
    if verdict == "error":
        return EXIT_ERROR
    if verdict == "invalid" or rc != 0:
        return EXIT_FAILED
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
