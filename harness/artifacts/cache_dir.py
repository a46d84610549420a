"""The cache root outside the clone: where it is, locks, atomic publication of results."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from filelock import FileLock, Timeout

from proofdiff.artifacts.build_errors import BuildError


def cache_root(root: Path | str) -> Path:
    """The cache root ``root`` (``RunOptions.cache_root``), resolved and created if missing."""
    root = Path(root).expanduser().resolve()
    root.mkdir(parents=True, exist_ok=True)
    return root


@contextmanager
def locked(root: Path, name: str, step: str, timeout_s: float) -> Iterator[None]:
    """Hold the inter-process lock ``<root>/locks/<name>.lock`` (flock: freed if the holder dies).

    Raises:
        BuildError: the lock was not obtained within ``timeout_s`` seconds.
    """
    path = root / "locks" / f"{name}.lock"
    path.parent.mkdir(parents=True, exist_ok=True)
    lock = FileLock(str(path))
    try:
        lock.acquire(timeout=timeout_s)
    except Timeout as exc:
        raise BuildError(
            step,
            f"another build held {path} for more than {timeout_s:.0f} s",
            "wait for the other proofdiff build to finish (`pgrep -af proofdiff.artifacts`); the lock "
            "is released automatically when its holder exits",
        ) from exc
    try:
        yield
    finally:
        lock.release()


def scratch_dir(root: Path, prefix: str) -> Path:
    """Create and return a fresh directory under ``<root>/tmp`` (same file system as the cache)."""
    base = root / "tmp"
    base.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=prefix, dir=base))


def publish_dir(tmp: Path, final: Path) -> None:
    """Make ``tmp`` world-readable, then move it to ``final`` atomically (``rename``).

    World-readable (dirs 0755, files at least 0644) because containers read it through a bind
    mount as user 65534. If ``final`` already exists (another process won the race) ``tmp`` is
    discarded.
    """
    for path in [tmp, *tmp.rglob("*")]:
        if path.is_symlink():
            continue
        mode = path.stat().st_mode & 0o7777
        path.chmod(mode | (0o755 if path.is_dir() else 0o644))
    final.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.rename(tmp, final)
    except OSError:
        if not final.is_dir():
            raise
        shutil.rmtree(tmp, ignore_errors=True)


def write_json(path: Path, data: dict[str, Any]) -> None:
    """Write ``data`` as indented JSON to ``path`` atomically (temp file + rename)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    os.replace(tmp, path)


def dir_size_bytes(path: Path) -> int:
    """Total size in bytes of the regular files under ``path``."""
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())
