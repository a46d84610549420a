"""Content keys: SHA-256 hex digests over exactly the inputs of each cached build result.

A key changes when one of its inputs changes and stays equal otherwise, so a cached result is
reused exactly when it is still valid. Every key is framed (each part is length-prefixed), so
moving bytes from one part to the next changes it.

| result | inputs |
|---|---|
| base rootfs image | suite, variant, mirror, architecture, script version |
| refprover image | base image id, the generated Dockerfile, each binary's name and bytes |
| params of a circuit | Cargo.lock, Cargo.toml, paramgen's sources (TOOL_SOURCES), circuit name |
| a param cache (several circuits) | the circuits' keys |
| a workload | Cargo.lock, Cargo.toml, seal's sources (TOOL_SOURCES), seal args, param cache key |
"""

from __future__ import annotations

import hashlib
import tomllib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

#: Sources (relative to the crate, files or directories) that decide a tool's output. Missing
#: paths count too ("absent"), so adding one changes the key. Cargo.toml [[bin]] paths are added.
TOOL_SOURCES: dict[str, tuple[str, ...]] = {
    "seal": (
        "src/bin/seal.rs",
        "src/bin/seal",
        "src/seal.rs",
        "src/seal",
        "src/wpost.rs",
        "src/wpost",
        "src/porep.rs",
        "src/porep",
    ),
}

#: Crate-wide inputs of every tool's output (dependency versions, features, profile).
CRATE_INPUTS: tuple[str, ...] = ("Cargo.lock", "Cargo.toml")

_CHUNK_BYTES = 1 << 20


def digest(*parts: bytes | str) -> str:
    """SHA-256 hex digest over ``parts``, each length-prefixed (str is UTF-8 encoded)."""
    h = hashlib.sha256()
    for part in parts:
        data = part.encode() if isinstance(part, str) else part
        h.update(len(data).to_bytes(8, "big"))
        h.update(data)
    return h.hexdigest()


def file_digest(path: Path) -> str:
    """SHA-256 hex digest of a file's bytes (read in 1 MiB chunks); ``absent`` if it is missing."""
    if not path.is_file():
        return "absent"
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(_CHUNK_BYTES):
            h.update(chunk)
    return h.hexdigest()


def paths_digest(base: Path, rel_paths: Iterable[str]) -> str:
    """Digest over files and directory trees under ``base``: each relative name with its bytes.

    Directories are walked recursively in sorted order; a path that does not exist is recorded
    as absent. The order of ``rel_paths`` does not matter.
    """
    parts: list[str] = []
    for rel in sorted(set(rel_paths)):
        path = base / rel
        if path.is_dir():
            files = sorted(p for p in path.rglob("*") if p.is_file())
            parts += [f"{p.relative_to(base).as_posix()}={file_digest(p)}" for p in files]
            if not files:
                parts.append(f"{rel}=empty-dir")
        else:
            parts.append(f"{rel}={file_digest(path)}")
    return digest(*parts)


def tool_sources(crate_dir: Path, tool: str) -> list[str]:
    """Relative paths of the sources of ``tool``: TOOL_SOURCES plus its Cargo.toml [[bin]] path."""
    rels = list(TOOL_SOURCES.get(tool, (f"src/bin/{tool}.rs", f"src/bin/{tool}")))
    try:
        manifest = tomllib.loads((crate_dir / "Cargo.toml").read_text())
    except (OSError, tomllib.TOMLDecodeError):
        return rels
    for bin_ in manifest.get("bin", []):
        if (
            isinstance(bin_, dict)
            and bin_.get("name") == tool
            and isinstance(bin_.get("path"), str)
        ):
            rels.append(bin_["path"])
    return rels


@dataclass(frozen=True)
class RootfsRecipe:
    """How a base rootfs is made: ``debootstrap --variant=VARIANT [--include=PKG,...] SUITE DIR
    MIRROR`` on ARCH (``include``: extra Debian packages, for the fleet's SSH host image)."""

    suite: str = "bookworm"
    variant: str = "minbase"
    mirror: str = "http://deb.debian.org/debian"
    arch: str = "amd64"
    script_version: int = 1
    include: tuple[str, ...] = ()


def rootfs_key(recipe: RootfsRecipe) -> str:
    """Key of the base rootfs image: the recipe's fields."""
    return digest(
        "rootfs",
        recipe.suite,
        recipe.variant,
        recipe.mirror,
        recipe.arch,
        str(recipe.script_version),
        # only when given: the plain base keeps the key (and the image) it always had
        *([",".join(recipe.include)] if recipe.include else []),
    )


def image_key(base_image_id: str, dockerfile: str, binaries: Mapping[str, Path]) -> str:
    """Key of the refprover image: base image id, Dockerfile text, each binary's name and bytes."""
    parts = [f"{name}={file_digest(path)}" for name, path in sorted(binaries.items())]
    return digest("image", base_image_id, dockerfile, *parts)


def circuit_params_key(crate_dir: Path, circuit: str, cache_id: str) -> str:
    """Key of the params of one circuit: Cargo.lock (the proof crates' versions), the circuit
    name and its cache identifier (``paramgen --print-cache-id``: the SHA-256 of the parameter
    set that the proof crates name the files by). Refactoring refprover's sources leaves it
    unchanged, so a 13-minute PoRep param generation is not redone for nothing."""
    return digest("params", paths_digest(crate_dir, ["Cargo.lock"]), circuit, cache_id)


def params_set_key(circuit_keys: Mapping[str, str]) -> str:
    """Key of a param cache holding several circuits' params (order-independent)."""
    return digest("param-set", *(f"{c}={k}" for c, k in sorted(circuit_keys.items())))


def workload_key(crate_dir: Path, name: str, seal_args: Sequence[str], params_key: str) -> str:
    """Key of one workload file: crate inputs, seal's sources, seal arguments, params key."""
    rels = [*CRATE_INPUTS, *tool_sources(crate_dir, "seal")]
    return digest("workload", paths_digest(crate_dir, rels), name, *seal_args, params_key)
