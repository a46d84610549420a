"""Digests of ``.params``/``.vk`` files, in the format of Filecoin's ``parameters.json``.

Each entry of ``parameters.json`` (the file filecoin-proofs ships and paramfetch checks) is
``{"<file name>": {"cid": ..., "digest": <hex>, "sector_size": <bytes>}}``, where the digest is
the first 32 hex digits of the file's BLAKE2b-512 hash (as rust-fil-proofs' param digest tool
and ``b2sum`` compute it). The build writes such a manifest for the params it generates
(``<param cache>/parameters.json``, ``cid`` empty); for the official params, point at the
published file.

Hashing 1.1 GB of PoRep params takes seconds, so digests are cached by (path, size, mtime)
in ``<cache root>/param-digests.json`` (a file lock guards it).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import filelock

__all__ = ["MANIFEST", "DigestCache", "digest_bytes", "digest_cache_file", "file_digest",
           "read_manifest", "write_manifest"]

#: The manifest's file name inside a param cache.
MANIFEST = "parameters.json"
_CHUNK = 1 << 22


def digest_bytes(data: bytes) -> str:
    """The parameters.json digest of ``data``: the first 32 hex digits of BLAKE2b-512."""
    return hashlib.blake2b(data).hexdigest()[:32]


def file_digest(path: Path) -> str:
    """The parameters.json digest of a file, read in 4 MiB chunks.

    Raises:
        OSError: the file cannot be read.
    """
    h = hashlib.blake2b()
    with open(path, "rb") as fh:
        while chunk := fh.read(_CHUNK):
            h.update(chunk)
    return h.hexdigest()[:32]


class DigestCache:
    """File digests kept by (resolved path, size in bytes, mtime in ns).

    Args:
        path: the cache file (:func:`digest_cache_file` of the cache root).
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.hits = self.misses = 0

    def _load(self) -> dict[str, str]:
        try:
            doc = json.loads(self.path.read_text(encoding="utf-8"))
            return {str(k): str(v) for k, v in doc.items()} if isinstance(doc, dict) else {}
        except (OSError, ValueError):
            return {}

    def digests(self, files: Iterable[Path]) -> dict[Path, str]:
        """Each file's digest; cached ones are not read again.

        Raises:
            OSError: a file cannot be stat'ed or read.
        """
        out: dict[Path, str] = {}
        with filelock.FileLock(str(self.path) + ".lock", timeout=600):
            known = self._load()
            for f in files:
                st = f.stat()
                key = f"{f.resolve()}|{st.st_size}|{st.st_mtime_ns}"
                if key in known:
                    self.hits += 1
                else:
                    self.misses += 1
                    known[key] = file_digest(f)
                out[f] = known[key]
            tmp = self.path.with_name(self.path.name + f".{os.getpid()}.tmp")
            tmp.write_text(json.dumps(known, indent=1, sort_keys=True), encoding="utf-8")
            tmp.replace(self.path)
        return out


def digest_cache_file(cache_root: Path | str) -> Path:
    """Where the digests of a cache root are kept: ``<cache root>/param-digests.json``."""
    return Path(cache_root) / "param-digests.json"


def read_manifest(path: Path) -> dict[str, dict[str, Any]]:
    """A parameters.json: file name -> entry (``digest`` at least).

    Raises:
        ValueError: not JSON, or not the parameters.json shape (names the file).
        OSError: it cannot be read.
    """
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}: not JSON ({exc.msg} at line {exc.lineno})") from None
    if not isinstance(doc, dict) or not all(isinstance(v, dict) and isinstance(v.get("digest"), str)
                                            for v in doc.values()):
        raise ValueError(f"{path}: not a parameters.json (each entry needs a \"digest\")")
    return doc


def write_manifest(param_dir: Path, cache: DigestCache,
                   sector_sizes: Mapping[str, int] | None = None) -> Path:
    """Write ``param_dir/parameters.json`` for every ``.params``/``.vk`` file there."""
    files = sorted(p for p in param_dir.iterdir() if p.suffix in (".params", ".vk"))
    got = cache.digests(files)
    doc = {f.name: {"cid": "", "digest": got[f], "sector_size": (sector_sizes or {}).get(f.name, 2048)}
           for f in files}
    tmp = param_dir / f".{MANIFEST}.{os.getpid()}.tmp"
    tmp.write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    os.chmod(tmp, 0o644)
    tmp.replace(param_dir / MANIFEST)
    return param_dir / MANIFEST
