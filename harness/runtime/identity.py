"""What runs a profile's daemon, and its digest: the evidence a report ties its results to.

* docker: the image's id (``sha256:...``, the content digest) and any registry digests;
* process: the program file's SHA-256 (``sha256:...``), read once per path, size and mtime;
* attach: nothing proofdiff can see.
"""

from __future__ import annotations

import hashlib
import os
from functools import lru_cache

from proofdiff.model.choices import Role, Runtime
from proofdiff.model.image import ImageInfo
from proofdiff.model.profile import Profile

from proofdiff.runtime.runner import Runner
from proofdiff.runtime.spec import ContainerError, LaunchSpec

__all__ = ["PARAMGEN", "file_sha256", "image_info", "program_identity"]

#: refprover's paramgen in a bin dir (process and attach runtimes).
PARAMGEN = "paramgen"


@lru_cache(maxsize=64)
def _sha256(path: str, size: int, mtime_ns: int) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(1 << 22):
            h.update(chunk)
    return "sha256:" + h.hexdigest()


def file_sha256(path: str) -> str:
    """``sha256:<hex>`` of a file (cached by path, size and mtime).

    Raises:
        OSError: it cannot be read.
    """
    st = os.stat(path)
    return _sha256(path, st.st_size, st.st_mtime_ns)


def image_info(runner: Runner, tag: str) -> ImageInfo:
    """The local image ``tag``: its id and registry digests (never pulled).

    Raises:
        ContainerError: no engine, or the image is not present (says how to build it).
    """
    img = runner.image(tag)
    repo = tuple(img.attrs.get("RepoDigests") or ())
    return ImageInfo(tag=tag, digest=str(img.id), repo_digests=repo,
                     detail=repo[0] if repo else "local build, no registry digest")


def program_identity(runner: Runner, profile: Profile) -> ImageInfo:
    """What runs ``profile``'s daemon (module docstring).

    Raises:
        ContainerError: the image is not present, or the program is not an executable file
            here (each with the fix).
    """
    if profile.runtime is Runtime.ATTACH:
        return ImageInfo(tag=profile.program, detail="an attached daemon: not started by proofdiff")
    if profile.runtime is Runtime.PROCESS:
        spec = LaunchSpec(image=profile.program, role=Role.DAEMON, profile=profile.name,
                          entrypoint=(profile.program,), runtime=Runtime.PROCESS)
        path = runner.processes.program(spec)
        try:
            return ImageInfo(tag=path, digest=file_sha256(path),
                             detail=f"the program file, {os.path.getsize(path)} bytes")
        except OSError as exc:
            raise ContainerError(f"profile {profile.name!r}: program {path} cannot be read "
                                 f"({exc.strerror})", fix=f"make it readable: chmod a+r {path}",
                                 role=Role.DAEMON, profile=profile.name) from None
    return image_info(runner, profile.image_tag)
