"""``proofdiff build`` and ``proofdiff reap``."""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import TYPE_CHECKING

from proofdiff.cli.option_flags import add_run_options, run_options

if TYPE_CHECKING:  # rich is imported when a command runs, not for --help
    from rich.console import Console

__all__ = ["add_build", "add_reap", "build", "reap"]


def add_build(p: argparse.ArgumentParser) -> None:
    """Options of ``proofdiff build``."""
    p.add_argument("--workload", metavar="NAME", action="append", default=[], dest="workloads",
                   help="workload to prepare (repeatable). Default: wpost-2k")
    p.add_argument("--no-docker", action="store_true",
                   help="a host without Docker (process and attach runtimes): build no image, "
                        "only the binaries, params and workloads. Default: build the images too")
    p.add_argument("--pin-verifier", action="store_true",
                   help="pin the verifier to the committed tree HEAD:targets/refprover (writes "
                        "verifier.lock; commit it) and exit. Do this on purpose only: the "
                        "pinned verifier judges every proof, whatever image is tested")
    add_run_options(p, ("artifacts",), only=("bin-dir", "crate", "cache-dir"))


def build(args: argparse.Namespace, console: Console) -> int:
    """Build or reuse everything and print what each step did; 0 ok, 3 the build failed (the
    step, the cause and the fix printed), 130 interrupted (nothing half-written is reused)."""
    from rich.text import Text
    from proofdiff.artifacts import BuildError, ensure_artifacts

    opts = run_options(args)
    if args.pin_verifier:
        from proofdiff.artifacts.pinned_verifier import repo_root, write_pin

        try:
            pin = write_pin(repo_root(Path.cwd()))
        except BuildError as exc:
            console.print(Text(str(exc), style="red"))
            return 3
        console.print(Text(f"pinned {pin.source} tree {pin.tree} (commit {pin.commit[:12]}) in "
                           f"{pin.path}"))
        return 0
    if not opts.crate_dir:
        console.print(Text("no refprover crate: run from the proofdiff checkout, pass --crate "
                           "DIR or set PROOFDIFF_CRATE", style="red"))
        return 3
    start = time.monotonic()
    try:
        art = ensure_artifacts(list(opts.workloads) or ["wpost-2k"],
                               lambda line: console.print(Text(line)),
                               cache_root=Path(opts.cache_root), crate_dir=Path(opts.crate_dir),
                               docker=not args.no_docker,
                               bin_dir=Path(opts.bin_dir) if opts.bin_dir else None)
    except BuildError as exc:
        console.print(Text(str(exc), style="red"))
        return 3
    except KeyboardInterrupt:
        console.print(Text("interrupted; partial results were discarded, nothing half-written "
                           "is reused", style="yellow"))
        return 130
    lines = ["", "step       action   seconds"]
    lines += [f"{s.step:<10} {s.action:<7} {s.elapsed_s:8.1f}" for s in art.steps]
    lines += [f"{'total':<18} {time.monotonic() - start:8.1f}", "",
              f"image        {art.image_tag or '(none: --no-docker)'} ({art.image_id[:19]})",
              f"verifier     {art.verifier_tag} ({art.verifier_id[:19]}), pinned tree "
              f"{art.verifier_tree[:12]}",
              f"binaries     {art.bin_dir}", f"param cache  {art.param_cache}"]
    lines += [f"workload     {name}: {path}" for name, path in art.workloads.items()]
    console.print(Text("\n".join(lines)))
    return 0


def add_reap(p: argparse.ArgumentParser) -> None:
    """Options of ``proofdiff reap``."""
    p.add_argument("--run-id", metavar="ID", help="only this run's containers. Default: every "
                   "proofdiff container")


def reap(args: argparse.Namespace, console: Console) -> int:
    """Remove labelled containers; 0 ok, 3 no Docker engine."""
    from rich.text import Text
    from proofdiff.runtime.docker import reap as reap_containers
    from proofdiff.runtime.spec import ContainerError

    try:
        removed = reap_containers(run_id=args.run_id)
    except ContainerError as exc:
        console.print(Text(str(exc), style="red"))
        return 3
    console.print(Text(f"removed {len(removed)} container(s)" + (f": {', '.join(removed)}"
                                                                  if removed else "")))
    return 0
