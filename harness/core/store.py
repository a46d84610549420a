"""Where a session keeps what it computed: in memory, or shared between pytest-xdist workers.

Keys are strings (``run/bench/wpost-2k``, ``suite/isolation/wpost-2k``); values are records.
:class:`MemoryStore` is a dict. :class:`FileStore` is the pytest-xdist hand-over (the FileLock
recipe of the pytest-xdist docs): the first worker to need a key takes its lock, computes it
and writes it as JSON; the others wait (with a deadline) and read it. JSON on disk is only the
hand-over between processes: within one process state stays in memory.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol, TypeVar

import filelock

from proofdiff.model.errors import ProofdiffError
from proofdiff.model import serde

__all__ = ["FileStore", "MemoryStore", "Store", "StoreTimeout"]

T = TypeVar("T")


class StoreTimeout(ProofdiffError):
    """Another worker held a key's lock for longer than the wait allowed."""


class Store(Protocol):
    """Compute a value once per key."""

    def get_or_compute(self, key: str, type_: type[T], compute: Callable[[], T],
                       wait_s: float) -> T:
        """The value of ``key``: computed by ``compute`` the first time, then reused.

        Raises:
            StoreTimeout: another process computes it and did not finish within ``wait_s``.
        """
        ...

    def cached(self, key: str, type_: type[T]) -> T | None:
        """The value of ``key`` if it was computed, else ``None`` (never computes)."""
        ...


class MemoryStore:
    """One process: a dict."""

    def __init__(self) -> None:
        self._values: dict[str, Any] = {}

    def get_or_compute(self, key: str, type_: type[T], compute: Callable[[], T],
                       wait_s: float) -> T:
        """See :class:`Store`."""
        if key not in self._values:
            self._values[key] = compute()
        return self._values[key]  # type: ignore[no-any-return]

    def cached(self, key: str, type_: type[T]) -> T | None:
        """See :class:`Store`."""
        return self._values.get(key)


class FileStore:
    """Shared by the processes of one run: ``<root>/<key>.json`` under a file lock.

    Args:
        root: the run's hand-over directory (``<run dir>/handover``).
    """

    def __init__(self, root: Path) -> None:
        self.root = root
        self._memo = MemoryStore()

    def path(self, key: str) -> Path:
        """The file of ``key``."""
        return self.root / (key.replace("/", "--") + ".json")

    def get_or_compute(self, key: str, type_: type[T], compute: Callable[[], T],
                       wait_s: float) -> T:
        """See :class:`Store`."""
        def shared() -> T:
            path = self.path(key)
            path.parent.mkdir(parents=True, exist_ok=True)
            try:
                with filelock.FileLock(str(path) + ".lock", timeout=wait_s):
                    if path.exists():
                        return serde.read(path, type_)
                    value = compute()
                    serde.write(path, value)
                    return value
            except filelock.Timeout:
                raise StoreTimeout(f"waited {wait_s:.0f} s for another worker to compute {key}; "
                                   "it is stuck or crashed",
                                   fix="rerun with -n0 to run without xdist") from None
        return self._memo.get_or_compute(key, type_, shared, wait_s)

    def cached(self, key: str, type_: type[T]) -> T | None:
        """See :class:`Store`."""
        got = self._memo.cached(key, type_)
        if got is None and self.path(key).exists():
            got = serde.read(self.path(key), type_)
        return got

    def values(self, prefix: str, type_: type[T]) -> list[T]:
        """Every stored value whose key starts with ``prefix`` (for the final report)."""
        stem = prefix.replace("/", "--")
        return [serde.read(p, type_) for p in sorted(self.root.glob(f"{stem}*.json"))]
