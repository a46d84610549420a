"""Image variants for self-tests: the reference image with one shared library left out, so
that its programs are linked against a library the image does not have, as the curio-cuzk
image of the seed incident lacked ``libconfig++``, ``libaio``, ``libfuse3`` and
``libarchive`` at run time (caught by ``preflight/libraries``).

Made the way the base image is made: a root filesystem tar given to ``docker import``
(:mod:`proofdiff.artifacts.base_image`), here the source image's own filesystem (``docker
create`` + ``export``) with the library's files filtered out, and the source image's
entrypoint, user, working directory, ports and labels set again with ``--change``
(``import`` keeps none of them). Tagged by content: the source image id and the library.
"""

from __future__ import annotations

import hashlib
import json
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Any

import docker.errors

from proofdiff.artifacts.build_errors import BuildError
from proofdiff.artifacts.cache_dir import locked
from proofdiff.artifacts.engine import DOCKER_FIX, find_image
from proofdiff.runtime.hardening import LABEL_READ_ONLY_ROOT

__all__ = ["DROPPED_LIBRARY", "VARIANT_REPO", "ensure_without_library", "variant_changes"]

#: The library the variant leaves out: every refprover program needs it (Rust's unwinder).
DROPPED_LIBRARY = "libgcc_s.so.1"
VARIANT_REPO = "proofdiff/refprover-without"
#: Deadline of the export and import, seconds.
TIMEOUT_S = 300.0


def variant_changes(config: dict[str, Any], source_tag: str) -> list[str]:
    """The Dockerfile instructions that give an imported filesystem what running the source
    image needs of its ``Config`` (docker inspect's): entrypoint, cmd, user, working directory,
    exposed ports and the hardening label (:data:`LABEL_READ_ONLY_ROOT`); plus a label naming
    the source. The engine takes them in the request's URL, so the rest (env, other labels) is
    left out: a long URL is refused ("header line too long")."""
    out = []
    for key, word in (("Entrypoint", "ENTRYPOINT"), ("Cmd", "CMD")):
        if config.get(key):
            out.append(f"{word} {json.dumps(config[key])}")
    if config.get("User"):
        out.append(f"USER {config['User']}")
    if config.get("WorkingDir"):
        out.append(f"WORKDIR {config['WorkingDir']}")
    out += [f"EXPOSE {p}" for p in config.get("ExposedPorts") or {}]
    ro = (config.get("Labels") or {}).get(LABEL_READ_ONLY_ROOT)
    if ro is not None:
        out.append(f"LABEL {LABEL_READ_ONLY_ROOT}={json.dumps(ro)}")
    out.append(f"LABEL proofdiff.variant-of={json.dumps(source_tag)}")
    return out


def ensure_without_library(client: Any, root: Path, source_tag: str, *,
                           library: str = DROPPED_LIBRARY,
                           log: Any = print) -> str:
    """The tag of ``source_tag`` without ``library`` (every file whose name starts with it,
    links included): ``proofdiff/refprover-without:<library stem>-<key12>``; reused when
    present.

    Raises:
        BuildError: the source image is absent, or the engine failed the export or import.
    """
    source = find_image(client, source_tag)
    if source is None:
        raise BuildError("variant", f"no image {source_tag} to make a variant of",
                         "build it first (`proofdiff build`)")
    key = hashlib.sha256(f"{source.id}\n{library}\nv1".encode()).hexdigest()
    tag = f"{VARIANT_REPO}:{library.split('.so')[0]}-{key[:12]}"
    if find_image(client, tag) is not None:
        return tag
    with locked(root, "variant", "variant", TIMEOUT_S):
        if find_image(client, tag) is not None:
            return tag
        t0 = time.monotonic()
        container = client.containers.create(source_tag, labels={"proofdiff.run": "build"})
        try:
            with tempfile.TemporaryFile(dir=root) as out:
                dropped = _filtered(container.export(), out, library, root)
                out.seek(0)
                if not dropped:
                    raise BuildError("variant", f"{source_tag} has no {library} to leave out",
                                     "pick a library its programs need (ldd on them)")
                # chunks, not the file: requests would send the file with its length, and the
                # engine, told the body is chunked, refuses it ("header line too long")
                client.api.import_image_from_stream(
                    iter(lambda: out.read(1 << 20), b""), repository=tag.split(":")[0], tag=tag.split(":")[1],
                    changes=variant_changes(source.attrs.get("Config") or {}, source_tag))
        except docker.errors.DockerException as exc:
            raise BuildError("variant", f"making {tag} failed: {exc}", DOCKER_FIX) from exc
        finally:
            container.remove(force=True)
        log(f"  variant: {tag} ({source_tag} without {', '.join(dropped)}) in "
            f"{time.monotonic() - t0:.1f} s")
    return tag


def _filtered(chunks: Any, out: Any, library: str, scratch: Path) -> list[str]:
    """Copy the exported tar stream ``chunks`` into ``out`` without ``library``'s files (the
    export spooled in ``scratch`` first); returns the member names left out."""
    dropped: list[str] = []
    with tempfile.TemporaryFile(dir=scratch) as raw:
        for chunk in chunks:
            raw.write(chunk)
        raw.seek(0)
        with tarfile.open(fileobj=raw, mode="r|") as src, tarfile.open(fileobj=out,
                                                                       mode="w|") as dst:
            for member in src:
                if Path(member.name).name.startswith(library):
                    dropped.append(member.name)
                    continue
                dst.addfile(member, src.extractfile(member) if member.isfile() else None)
    return dropped
