"""``python -m proofdiff.artifacts [--workload NAME ...] [--cache-dir DIR]``: build or reuse everything.

Prints each step (built or reused, seconds) and the artifacts; exits 1 on a BuildError, with the
step, the cause and the fix on stderr.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from proofdiff.artifacts import WORKLOADS, Artifacts, BuildError, ensure_artifacts


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m proofdiff.artifacts",
        description="Build (or reuse from the cache) the refprover image, params and workloads.",
    )
    p.add_argument(
        "--workload",
        dest="workloads",
        action="append",
        choices=sorted(WORKLOADS),
        metavar="NAME",
        help=f"workload to prepare, repeatable; one of {sorted(WORKLOADS)}. Default: wpost-2k.",
    )
    p.add_argument(
        "--cache-dir",
        type=Path,
        default=None,
        metavar="DIR",
        help="cache root. Default: $PROOFDIFF_CACHE, else ~/.cache/proofdiff.",
    )
    p.add_argument(
        "--pin-verifier",
        action="store_true",
        help="pin the verifier to the committed tree HEAD:targets/refprover (writes "
        "verifier.lock; commit it) and exit. Do this on purpose only: the pinned verifier "
        "judges every proof, whatever image is tested.",
    )
    return p


def _summary(art: Artifacts, total_s: float) -> str:
    lines = ["", "step       action   seconds"]
    lines += [f"{s.step:<10} {s.action:<7} {s.elapsed_s:8.1f}" for s in art.steps]
    lines += [
        f"{'total':<18} {total_s:8.1f}",
        "",
        f"image        {art.image_tag} ({art.image_id[:19]})",
        f"verifier     {art.verifier_tag} ({art.verifier_id[:19]}), pinned tree "
        f"{art.verifier_tree[:12]}",
        f"param cache  {art.param_cache}",
    ]
    lines += [f"workload     {name}: {path}" for name, path in art.workloads.items()]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the build; return the exit status (0 ok, 1 BuildError)."""
    args = _parser().parse_args(argv)
    if args.pin_verifier:
        from proofdiff.artifacts.pinned_verifier import repo_root, write_pin

        try:
            pin = write_pin(repo_root(Path.cwd()))
        except BuildError as exc:
            print(f"error: {exc.cause}\nfix: {exc.fix}", file=sys.stderr)
            return 1
        print(f"pinned {pin.source} tree {pin.tree} (commit {pin.commit[:12]}) in {pin.path}")
        return 0
    start = time.monotonic()
    try:
        art = ensure_artifacts(
            workloads=args.workloads or ["wpost-2k"],
            log=lambda line: print(line, flush=True),
            cache_root=args.cache_dir,
        )
    except BuildError as exc:
        print(
            f"\nerror: build step {exc.step!r} failed\ncause: {exc.cause}\nfix: {exc.fix}",
            file=sys.stderr,
        )
        return 1
    except KeyboardInterrupt:
        print(
            "\ninterrupted; partial results were discarded, nothing half-written is reused",
            file=sys.stderr,
        )
        return 130
    print(_summary(art, time.monotonic() - start))
    return 0


if __name__ == "__main__":
    sys.exit(main())
