"""What proofdiff a process runs: the package version and a digest of its source.

The package version alone (``0.1.0`` for every commit) cannot tell two checkouts apart, so a
worker is compared by the sha256 of every ``.py`` and ``.toml`` file of the installed package
(relative path and bytes, in path order): a worker on other code gives another digest.
"""

from __future__ import annotations

import functools
import hashlib
from importlib import metadata
from pathlib import Path

__all__ = ["proofdiff_version"]


@functools.cache
def proofdiff_version() -> str:
    """``<package version>+<12 hex digits of the source digest>``, e.g. ``0.1.0+3f9a0c1b2d4e``
    (computed once per process, over every file of the package)."""
    root = Path(__file__).resolve().parents[1]
    h = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.suffix in (".py", ".toml")
                       and "__pycache__" not in p.parts):
        h.update(path.relative_to(root).as_posix().encode() + b"\0")
        h.update(path.read_bytes() + b"\0")
    try:
        version = metadata.version("proofdiff")
    except metadata.PackageNotFoundError:  # run from a copied tree, not installed
        version = "0"
    return f"{version}+{h.hexdigest()[:12]}"
