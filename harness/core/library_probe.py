"""Which shared libraries the programs of a profile need and cannot find, looked at where they
run: in a short container of the profile's image (its own loader, its own ``/lib``), or on this
host for the process runtime; and whether the CUDA driver library (``libcuda.so.1``) is
visible there, when the profile asks for GPUs.

One ``sh`` script does the look: for each program, its path (``command -v``), then ``ldd``
on it (Debian's ``ldd`` runs the image's loader with ``--list``), or the loader's
``--list`` itself when the image has no ``ldd``; for the CUDA check, each directory the loader
searches for it, and ``ldconfig -p``. :func:`parse_ldd` reads glibc's ``ldd`` output. The
probe container gets the profile's GPU request, so that the NVIDIA runtime mounts the driver
library into it as it does into the daemon's.

Source of the check: the seed incident of a curio-cuzk image that was built and pushed, then
failed on the GPU host because ``libconfig++``, ``libaio``, ``libfuse3`` and ``libarchive``
were absent at run time.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from proofdiff.model.choices import Role, Runtime
from proofdiff.model.errors import ProofdiffError
from proofdiff.runtime.runner import Runner
from proofdiff.runtime.spec import ContainerError, LaunchSpec

__all__ = ["CUDA_DIRS", "CUDA_LIBRARY", "LOADERS", "Ldd", "LibraryLook", "ProgramLibs",
           "look_libraries", "parse_ldd", "parse_look"]

#: The CUDA driver library a GPU prover loads (the NVIDIA container runtime mounts it).
CUDA_LIBRARY = "libcuda.so.1"
#: Where the loader and the NVIDIA runtime put it, besides ``LD_LIBRARY_PATH``.
CUDA_DIRS = ("/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64",
             "/usr/lib", "/usr/local/nvidia/lib64", "/usr/local/nvidia/lib",
             "/usr/local/cuda/compat", "/usr/lib/wsl/lib")
#: The loaders tried when the image has no ``ldd`` (x86-64, then aarch64).
LOADERS = ("/lib64/ld-linux-x86-64.so.2", "/lib/ld-linux-aarch64.so.1")

_SCRIPT = r"""
for p; do
  q=$(command -v "$p" 2>/dev/null) || { echo "@@absent $p"; continue; }
  echo "@@program $p $q"
  if command -v ldd >/dev/null 2>&1; then ldd "$q" 2>&1; echo "@@rc $?"
  else
    done_=
    for l in LOADERS; do
      if [ -x "$l" ]; then "$l" --list "$q" 2>&1; echo "@@rc $?"; done_=1; break; fi
    done
    [ -n "$done_" ] || echo "@@noldd"
  fi
done
if [ -n "$PROOFDIFF_CUDA_CHECK" ]; then
  for d in $(echo "${LD_LIBRARY_PATH:-}" | tr ':' ' ') CUDA_DIRS; do
    echo "@@cuda-dir $d"; [ -e "$d/CUDA_LIBRARY" ] && echo "@@cuda $d/CUDA_LIBRARY"
  done
  ldconfig -p 2>/dev/null | grep -F "CUDA_LIBRARY" | head -1 | sed 's/^/@@cuda-ldconfig /'
fi
echo "@@done"
""".replace("CUDA_DIRS", " ".join(CUDA_DIRS)).replace("LOADERS", " ".join(LOADERS)) \
   .replace("CUDA_LIBRARY", CUDA_LIBRARY)

_NOT_FOUND = re.compile(r"^\s*(\S+) => not found\s*$")
_FOUND = re.compile(r"^\s*(\S+) => (\S+) \(0x[0-9a-f]+\)\s*$")
_VERSION = re.compile(r"version [`'](\S+)' not found \(required by (\S+)\)")
_LIB_OF_VERSION = re.compile(r":\s*(\S+):\s*version [`']")


@dataclass(frozen=True)
class Ldd:
    """What ``ldd`` (or the loader's ``--list``) says of one program: ``found`` (soname ->
    path), ``missing`` sonames (``=> not found``), ``versions`` (``SYMBOL_VERSION of
    soname``: a library present but too old), ``dynamic`` (False: static, or a script)."""

    found: dict[str, str] = field(default_factory=dict)
    missing: tuple[str, ...] = ()
    versions: tuple[str, ...] = ()
    dynamic: bool = True


def parse_ldd(text: str) -> Ldd:
    """Read glibc ``ldd`` / ``ld.so --list`` output (one line per needed library:
    ``libx.so.1 => /path (0x...)``, ``libx.so.1 => not found``; ``version `GLIBC_2.38' not
    found (required by ...)`` lines for a library too old; ``not a dynamic executable``)."""
    found: dict[str, str] = {}
    missing: list[str] = []
    versions: list[str] = []
    for line in text.splitlines():
        if m := _NOT_FOUND.match(line):
            missing.append(m.group(1))
        elif m := _FOUND.match(line):
            found[m.group(1)] = m.group(2)
        elif m := _VERSION.search(line):
            lib = _LIB_OF_VERSION.search(line)
            versions.append(f"{m.group(1)} of {os.path.basename(lib.group(1)) if lib else '?'}")
    dynamic = "not a dynamic executable" not in text
    return Ldd(found=found, missing=tuple(dict.fromkeys(missing)),
               versions=tuple(dict.fromkeys(versions)), dynamic=dynamic)


@dataclass(frozen=True)
class ProgramLibs:
    """One program a profile starts: ``role`` (``daemon``, ``bench tool``), the ``name`` the
    profile gives, its ``path`` ('' when not found there) and what ``ldd`` said (``None``:
    no ``ldd`` nor loader to ask)."""

    role: str
    name: str
    path: str
    ldd: Ldd | None


@dataclass(frozen=True)
class LibraryLook:
    """The look of one profile: ``where`` (``image TAG`` or ``this host``), each program,
    and for a GPU profile the CUDA driver library: ``cuda`` (the paths it was found at; empty:
    not visible), ``cuda_dirs`` (where it was looked for), ``cuda_checked``."""

    where: str
    programs: tuple[ProgramLibs, ...]
    cuda_checked: bool = False
    cuda: tuple[str, ...] = ()
    cuda_dirs: tuple[str, ...] = ()

    @property
    def at(self) -> str:
        """``in image TAG`` or ``on this host``, for messages."""
        return f"{'in' if self.where.startswith('image') else 'on'} {self.where}"


def parse_look(out: str, roles: dict[str, str], where: str, cuda_checked: bool) -> LibraryLook:
    """The script's output as a :class:`LibraryLook` (``roles``: program name -> role).

    Raises:
        ProofdiffError: the output lacks its last line (the probe died or its output was lost).
    """
    lines = out.splitlines()
    if "@@done" not in (x.strip() for x in lines):
        raise ProofdiffError(f"the library look in {where} ended without its last line: "
                             f"{out.strip()[-300:] or '(no output)'}",
                             fix="run again; if it persists, run `ldd` on the program by hand")
    programs: list[ProgramLibs] = []
    cuda: list[str] = []
    dirs: list[str] = []
    name, path = "", ""
    chunk: list[str] = []

    def close(no_ldd: bool = False) -> None:
        if name:
            programs.append(ProgramLibs(roles.get(name, "program"), name, path,
                                        None if no_ldd else parse_ldd("\n".join(chunk))))

    for line in lines:
        tag, _, rest = line.partition(" ")
        if tag == "@@absent":
            programs.append(ProgramLibs(roles.get(rest, "program"), rest, "", None))
        elif tag == "@@program":
            name, _, path = rest.partition(" ")
            chunk = []
        elif tag == "@@rc":
            close()
            name = ""
        elif tag == "@@noldd":
            close(no_ldd=True)
            name = ""
        elif tag == "@@cuda-dir":
            dirs.append(rest)
        elif tag in ("@@cuda", "@@cuda-ldconfig"):
            cuda.append(rest.split(" => ")[-1].strip())
        elif name:
            chunk.append(line)
    return LibraryLook(where=where, programs=tuple(programs), cuda_checked=cuda_checked,
                       cuda=tuple(dict.fromkeys(cuda)), cuda_dirs=tuple(dirs))


def look_libraries(runner: Runner, *, programs: Sequence[tuple[str, str]], image: str,
                   runtime: Runtime, gpus: str | int | tuple[str, ...] | None, profile: str,
                   timeout_s: float = 60.0) -> LibraryLook:
    """Run the look for ``programs`` (``(role, name or path)``) where they run: a short
    container of ``image`` (docker, with the profile's ``gpus`` request) or a process on this
    host (the runner's tool dirs first on its ``PATH``, as the process runtime finds programs).

    Raises:
        ProofdiffError: the probe could not start (no engine, the image absent, the GPU
            request refused: with the fix) or its output was cut short.
    """
    in_image = runtime is Runtime.DOCKER
    env = {"PROOFDIFF_CUDA_CHECK": "1"} if gpus is not None else {}
    if not in_image:
        env["PATH"] = os.pathsep.join([*map(str, runner.processes.tool_dirs),
                                        os.environ.get("PATH", "")])
    where = f"image {image}" if in_image else "this host"
    try:
        res = runner.run(LaunchSpec(
            image=image, role=Role.PREFLIGHT, profile=profile,
            entrypoint=("sh", "-c", _SCRIPT, "sh"), command=tuple(n for _, n in programs),
            env=env, gpus=gpus if in_image else None,
            runtime=Runtime.DOCKER if in_image else Runtime.PROCESS), timeout_s=timeout_s)
    except ContainerError as exc:
        raise ProofdiffError(f"the library look in {where} did not start: {exc.headline}",
                             fix=exc.fix) from None
    if res.timed_out:
        raise ProofdiffError(f"the library look in {where} ran past {timeout_s:.0f} s",
                             fix="is the engine overloaded? run again")
    return parse_look(res.output, {n: r for r, n in programs}, where, gpus is not None)
