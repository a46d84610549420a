"""``make rust-test``: refprover's own tests (``cargo test --release``), run on a copy of the
crate at one path per machine under the build cache, kept equal to the clone's files.

cargo fingerprints a path crate by its absolute path and its files' mtimes, so in each fresh
clone ``cargo test --release`` would compile the crate and its test harnesses again, a cost
every CI run would pay. The copy keeps one path, and a file whose bytes did not change keeps
its old mtime, so cargo compiles what changed and nothing else, then runs every test.

    python -m proofdiff.artifacts.crate_tests CRATE_DIR CACHE_ROOT
"""

from __future__ import annotations

import filecmp
import os
import shutil
import subprocess
import sys
from pathlib import Path

from proofdiff.artifacts.build_errors import BuildError
from proofdiff.artifacts.cache_dir import locked

__all__ = ["main", "mirror"]

#: Deadline of the tests, their build included, in seconds (a cold build takes tens of
#: minutes on a small machine).
TIMEOUT_S = 3600.0


def _files(root: Path) -> set[Path]:
    return {p.relative_to(root) for p in root.rglob("*")
            if p.is_file() and "target" not in p.relative_to(root).parts}


def mirror(src: Path, dst: Path) -> list[str]:
    """Make ``dst`` hold exactly ``src``'s files (``target/`` left out): a file is copied only
    where its bytes differ or it is new, and files ``src`` no longer has are removed. Returns
    the relative paths written or removed, sorted."""
    want, have = _files(src), _files(dst) if dst.is_dir() else set()
    changed = []
    for rel in sorted(want):
        out = dst / rel
        if rel in have and filecmp.cmp(src / rel, out, shallow=False):
            continue
        out.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src / rel, out)  # a fresh mtime: cargo sees the change
        changed.append(rel.as_posix())
    for rel in sorted(have - want):
        (dst / rel).unlink()
        changed.append(rel.as_posix())
    return changed


def main(argv: list[str]) -> int:
    """Mirror the crate, then run its tests there under the cache's cargo lock; the exit code
    is cargo's (2 on bad arguments)."""
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    crate, root = Path(argv[0]).resolve(), Path(argv[1]).expanduser()
    copy = root / "crate-tests" / crate.name
    env = {**os.environ, "CARGO_TARGET_DIR": str(root / "cargo-target")}
    try:
        with locked(root, "cargo", "rust-test", TIMEOUT_S):
            changed = mirror(crate, copy)
            print(f"rust-test: cargo test --release in {copy} ({len(changed)} file(s) changed "
                  "since its last run)", flush=True)
            return subprocess.run(["cargo", "test", "--release", "--locked", "-q"], cwd=copy,
                                  env=env, timeout=TIMEOUT_S, check=False).returncode
    except BuildError as exc:
        print(f"rust-test: {exc}", file=sys.stderr)
    except subprocess.TimeoutExpired:
        print(f"rust-test: cargo test ran past {TIMEOUT_S:.0f} s", file=sys.stderr)
    except FileNotFoundError:
        print("rust-test: `cargo` is not on PATH: install Rust (docs/guide/run.md, 'Set-up')", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
