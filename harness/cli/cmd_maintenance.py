"""``proofdiff build`` and ``proofdiff reap``."""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.console import Console
from rich.text import Text

from proofdiff.runtime.docker import ContainerError, reap as reap_containers

__all__ = ["add_build", "add_reap", "build", "reap"]


def add_build(p: argparse.ArgumentParser) -> None:
    """Options of ``proofdiff build``."""
    p.add_argument("--workload", metavar="NAME", action="append", default=[],
                   help="workload to prepare (repeatable). Default: wpost-2k")
    p.add_argument("--crate", metavar="DIR", type=Path, default=None,
                   help="the refprover crate. Default: $PROOFDIFF_CRATE, else ./targets/refprover")
    p.add_argument("--no-docker", action="store_true",
                   help="a host without Docker (process and attach runtimes): build no image, "
                        "only the binaries, params and workloads. Default: build the images too")
    p.add_argument("--bin-dir", metavar="DIR", type=Path, default=None,
                   help="use refprover binaries built elsewhere (refprover, verify, bench, "
                        "paramgen, seal) instead of cargo. Default: cargo builds them")


def build(args: argparse.Namespace, console: Console) -> int:
    """Build or reuse everything; 0 ok, 3 the build failed (step, cause and fix printed)."""
    from proofdiff.artifacts import BuildError, ensure_artifacts

    try:
        art = ensure_artifacts(args.workload or ["wpost-2k"],
                               lambda line: console.print(Text(line)), crate_dir=args.crate,
                               docker=not args.no_docker, bin_dir=args.bin_dir)
    except BuildError as exc:
        console.print(Text(str(exc), style="red"))
        return 3
    console.print(Text(f"image {art.image_tag or '(none: --no-docker)'}; binaries "
                       f"{art.bin_dir}; params {art.param_cache}"))
    for name, path in art.workloads.items():
        console.print(Text(f"workload {name}: {path}"))
    return 0


def add_reap(p: argparse.ArgumentParser) -> None:
    """Options of ``proofdiff reap``."""
    p.add_argument("--run-id", metavar="ID", help="only this run's containers. Default: every "
                   "proofdiff container")


def reap(args: argparse.Namespace, console: Console) -> int:
    """Remove labelled containers; 0 ok, 3 no Docker engine."""
    try:
        removed = reap_containers(run_id=args.run_id)
    except ContainerError as exc:
        console.print(Text(str(exc), style="red"))
        return 3
    console.print(Text(f"removed {len(removed)} container(s)" + (f": {', '.join(removed)}"
                                                                  if removed else "")))
    return 0
