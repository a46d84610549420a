"""What a daemon's first run left behind: for each declared first-run artifact (a name or glob),
the files that match it where the daemon sees its files, with their sizes and modification
times, looked at by one ``sh`` script run beside the daemon (its container, or its process's
private directory and environment). Judged by :mod:`proofdiff.oracles.first_run`.

A pattern is a path as the daemon sees it; ``{tmp}/`` at its start stands for the daemon's
temporary directory (``$TMPDIR``, else ``/tmp``), which only the daemon's side knows.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from proofdiff.model.errors import ProofdiffError
from proofdiff.runtime.daemon import Daemon
from proofdiff.runtime.spec import ContainerError

__all__ = ["ArtifactFile", "ArtifactLook", "TMP", "look_artifacts", "parse_artifacts"]

#: The placeholder for the daemon's temporary directory at a pattern's start.
TMP = "{tmp}"
#: Tries when the engine loses a short command's output (as proofdiff.core.probes.EXEC_TRIES).
EXEC_TRIES = 3

_SCRIPT = r"""
T="${TMPDIR:-/tmp}"
IFS='
'
i=0
for p; do
  case "$p" in "{tmp}/"*) p="$T/${p#"{tmp}/"}";; esac
  echo "@@pattern $i $p"
  for f in $p; do [ -e "$f" ] && echo "@@file $i $(stat -c '%s %Y' "$f") $f"; done
  i=$((i + 1))
done
echo "@@done"
"""


@dataclass(frozen=True)
class ArtifactFile:
    """One file matching a pattern: its ``path``, ``size_bytes`` and ``mtime_unix_s``."""

    path: str
    size_bytes: int
    mtime_unix_s: float


@dataclass(frozen=True)
class ArtifactLook:
    """What :func:`look_artifacts` saw beside one daemon: ``found`` (declared pattern -> (the
    pattern as resolved there, the files matching it)), the daemon's ``started_unix_s`` and
    ``what`` (how it is named in messages)."""

    found: dict[str, tuple[str, list[ArtifactFile]]]
    started_unix_s: float
    what: str


def parse_artifacts(out: str, patterns: Sequence[str]) -> dict[str, tuple[str, list[ArtifactFile]]]:
    """The script's output as ``{declared pattern: (the pattern as resolved there, files)}``.

    Raises:
        ValueError: the output lacks its last line (an answer cut short).
    """
    lines = [x.strip() for x in out.splitlines()]
    if "@@done" not in lines:
        raise ValueError("answer cut short")
    got: dict[str, tuple[str, list[ArtifactFile]]] = {p: (p, []) for p in patterns}
    for line in lines:
        tag, _, rest = line.partition(" ")
        idx, _, rest = rest.partition(" ")
        if tag not in ("@@pattern", "@@file") or not idx.isdigit() or int(idx) >= len(patterns):
            continue
        key = patterns[int(idx)]
        if tag == "@@pattern":
            got[key] = (rest, got[key][1])
        else:
            size, mtime, path = (rest.split(" ", 2) + ["", ""])[:3]
            if size.isdigit() and mtime.isdigit():
                got[key][1].append(ArtifactFile(path, int(size), float(mtime)))
    return got


def look_artifacts(daemon: Daemon, names: Sequence[str], read_path: str) -> ArtifactLook:
    """The files matching each of ``names`` beside ``daemon``: a relative name is taken in
    ``read_path`` (the param cache as the daemon sees it), an absolute one or one starting
    with ``{tmp}/`` as it is (:func:`parse_artifacts`).

    Raises:
        ProofdiffError: nothing could be run beside it (an attached daemon, one that exited),
            or its answer was cut short in :data:`EXEC_TRIES` tries.
    """
    where = {n: n if n.startswith(("/", TMP)) else f"{read_path.rstrip('/')}/{n}" for n in names}
    patterns = [where[n] for n in names]
    for _ in range(EXEC_TRIES):
        try:
            code, out = daemon.handle.exec(["sh", "-c", _SCRIPT, "sh", *patterns])
        except ContainerError as exc:
            raise ProofdiffError(f"nothing can be run beside the daemon ({daemon.what}): "
                                 f"{exc.headline}", fix=exc.fix) from None
        if code != 0:
            raise ProofdiffError(f"`sh` beside the daemon ({daemon.what}) exited {code}: "
                                 f"{out.strip()[:300]}", fix="is the daemon still running? "
                                 "see its log (warmup/liveness)")
        try:
            got = parse_artifacts(out, patterns)
        except ValueError:
            continue
        return ArtifactLook({n: got[where[n]] for n in names}, daemon.started_unix_s,
                            daemon.what)
    raise ProofdiffError(f"`sh` beside the daemon ({daemon.what}) exited 0 but its answer was "
                         f"cut short in {EXEC_TRIES} tries: the engine lost its output",
                         fix="run again; if it persists, see the engine's log")
