"""A gate's two builds as host binaries, for a host without Docker (``proofdiff gate
--candidate-bin-dir DIR --baseline-bin-dir DIR``).

Each side is a folder holding the build's programs by the names the profiles give them
(``binary``: the daemon, ``refprover`` by default or ``cuzk-daemon``; ``bench_tool`` for a
``bench-cli`` profile: ``bench`` or ``cuzk-bench``), as ``--bin-dir`` holds them for a run. Every
profile runs with the process runtime, its programs taken from that side's folder; a program
given as a path stays that path on both sides (it is no part of either build).

The side's identity (the gate's subject) is the daemon program's SHA-256, with every program's
digest in ``detail``: one digest on both sides is an A/A gate, as with images. Proofs are judged
by ``verify`` from ``--bin-dir`` (the build's, or the verifier you carried), never the
candidate's; the baseline folder's own ``verify``, when it has one, is cross-checked against it
as a baseline image's is.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

import msgspec

from proofdiff.fleet.shipping import PREFIX
from proofdiff.model.choices import DriverKind, Runtime
from proofdiff.model.errors import ProofdiffError
from proofdiff.model.image import ImageInfo
from proofdiff.model.profile import DEFAULT_BINARY, DEFAULT_VERIFIER, Profile
from proofdiff.runtime.identity import file_sha256

__all__ = ["HostBuildError", "host_side", "on_side", "verifier_in"]


class HostBuildError(ProofdiffError):
    """A side's folder or one of its programs is missing or not executable."""


def _programs(p: Profile) -> list[str]:
    names = [p.binary or DEFAULT_BINARY]
    if p.driver is DriverKind.BENCH_CLI:
        names.append(p.bench_tool)
    return names


def _in(folder: str, name: str) -> str:
    """``name`` in ``folder`` (a path stays as it is; a folder shipped to a fleet's host,
    ``@shipped/...``, is made that host's path there, so it is not resolved here)."""
    if os.sep in name:
        return name
    return str((Path(folder) if folder.startswith(PREFIX) else Path(folder).resolve()) / name)


def on_side(p: Profile, folder: str, verifier: str, name: str | None = None) -> Profile:
    """``p`` run from the build in ``folder``: the process runtime, its daemon program and
    bench tool taken from the folder (a path stays as it is), its proofs judged by
    ``verifier`` (a path: never the side's own); ``name`` renames it."""
    return msgspec.structs.replace(
        p, name=name or p.name, runtime=Runtime.PROCESS, verifier_binary=verifier,
        binary=_in(folder, p.binary or DEFAULT_BINARY),
        bench_tool=_in(folder, p.bench_tool) if p.driver is DriverKind.BENCH_CLI else p.bench_tool)


def host_side(role: str, folder: str, profiles: Mapping[str, Profile]) -> ImageInfo:
    """The identity of the build in ``folder`` for ``profiles`` (module docstring).

    Raises:
        HostBuildError: the folder is missing, or a program a profile needs is not an
            executable file in it (each named, with the fix).
    """
    if not Path(folder).is_dir():
        raise HostBuildError(f"the {role} build {folder} is not a folder",
                             fix=f"pass --{role}-bin-dir DIR, a folder holding the build's "
                                 "programs (the daemon, and the bench tool of bench-cli profiles)")
    names = list(dict.fromkeys(n for p in profiles.values() for n in _programs(p)))
    digests: dict[str, str] = {}
    for n in names:
        path = _in(folder, n)
        if not (Path(path).is_file() and os.access(path, os.X_OK)):
            raise HostBuildError(f"the {role} build in {folder} has no executable {n!r} "
                                 f"(looked for {path})",
                                 fix=f"copy the build's {n} into {folder} (the profiles name "
                                     "their programs with the keys binary and bench_tool)")
        digests[n] = file_sha256(path)
    daemon = _programs(next(iter(profiles.values())))[0] if profiles else DEFAULT_BINARY
    return ImageInfo(tag=str(Path(folder).resolve()), digest=digests.get(daemon, ""),
                     detail="host binaries: " + ", ".join(f"{n} {d}" for n, d in digests.items()))


def verifier_in(folder: str) -> ImageInfo:
    """The ``verify`` in ``folder`` (the run's ``--bin-dir``), with its digest.

    Raises:
        HostBuildError: it has none.
    """
    path = Path(folder).resolve() / DEFAULT_VERIFIER
    if not (path.is_file() and os.access(path, os.X_OK)):
        raise HostBuildError(f"no executable verify in {folder} to judge the proofs",
                             fix="pass --bin-dir DIR holding refprover's verify (`proofdiff "
                                 "build --no-docker` makes it), never the candidate's folder")
    return ImageInfo(tag=str(path), digest=file_sha256(str(path)),
                     detail="the verifier program, from --bin-dir")
