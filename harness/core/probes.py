"""What the session looks at around a daemon for the preflight checks, so that the oracles
only judge: which param files a workload needs (the image's own ``paramgen``), whether the
daemon can read them where it reads (a command run beside it, as its user), their digests on
both sides, and what the daemon says of itself (``GET /status``, its log).

Each function runs a short-lived tool or a command through the one runner or the daemon's
handle, with a deadline, and returns plain facts; the session caches them per profile.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from proofdiff.artifacts.param_manifest import DigestCache, digest_cache_file
from proofdiff.model.choices import Role, Runtime
from proofdiff.model.errors import ProofdiffError
from proofdiff.runtime.daemon import Daemon
from proofdiff.runtime.identity import PARAMGEN
from proofdiff.runtime.runner import Runner
from proofdiff.runtime.spec import ContainerError, LaunchSpec

__all__ = ["PARAMGEN_TOOL", "ParamFiles", "daemon_digests", "host_digests",
           "required_param_files", "unreadable"]

#: refprover's paramgen inside its image.
PARAMGEN_TOOL = "/usr/local/bin/paramgen"

#: ``(file names, how the list was made)``.
ParamFiles = tuple[list[str], str]


def required_param_files(runner: Runner, param_cache: Path, *, program: str, runtime: Runtime,
                         workload: str, profile: str, timeout_s: float) -> ParamFiles:
    """The ``.params``/``.vk`` names ``workload`` needs, and where the list came from: the
    circuits of the build's workload table, named by the cache ids that the image's own
    ``paramgen --print-cache-id`` prints (a process or attach runtime: the bin dir's
    ``paramgen``); every file of the host cache when there is no paramgen.

    Args:
        program: the image tag (docker) or anything (the bin dir's paramgen is used).
        timeout_s: deadline of the paramgen run, seconds.

    Raises:
        ProofdiffError: a circuit's files are not in the host param cache (with the fix).
    """
    from proofdiff.artifacts.sealed_workloads import WORKLOADS  # circuits per workload

    every = sorted(p.name for p in param_cache.iterdir() if p.suffix in (".params", ".vk"))
    spec = WORKLOADS.get(workload)
    if spec is None:
        return every, f"every .params/.vk of {param_cache} (a workload the build does not know)"
    in_image = runtime is Runtime.DOCKER
    try:
        res = runner.run(LaunchSpec(
            image=program, role=Role.PREFLIGHT, profile=profile,
            entrypoint=(PARAMGEN_TOOL if in_image else PARAMGEN,),
            command=("--param-cache", "/nonexistent", "--print-cache-id", *spec.circuits),
            runtime=Runtime.DOCKER if in_image else Runtime.PROCESS), timeout_s=timeout_s)
        code, out = res.exit_code, res.stdout
    except ContainerError:
        code, out = -1, ""
    ids = []
    for line in out.splitlines():
        try:
            ids.append(str(json.loads(line)["cache_id"]))
        except (ValueError, KeyError, TypeError):
            continue
    if code != 0 or len(ids) != len(spec.circuits):
        tool = PARAMGEN_TOOL if in_image else PARAMGEN
        return every, f"every .params/.vk of {param_cache} (no {tool})"
    files = []
    for circuit, cid in zip(spec.circuits, ids):
        mine = [f for f in every if cid in f]
        if not {".params", ".vk"} <= {Path(f).suffix for f in mine}:
            raise ProofdiffError(f"the host param cache {param_cache} has no .params/.vk for "
                                 f"circuit {circuit} (cache id {cid})",
                                 fix=f"build them with `proofdiff build --workload {workload}`")
        files += mine
    return files, (f"{'the image' if in_image else 'the bin dir'}'s paramgen --print-cache-id "
                   f"{' '.join(spec.circuits)}")


#: How many times a command beside the daemon is run when its answer comes back incomplete:
#: Docker's exec can lose a short-lived process's output while reporting exit 0 (docker-py
#: issue 2042, moby issue 27289); a lost answer is no evidence about the files either way.
EXEC_TRIES = 3


def unreadable(daemon: Daemon, directory: str, files: Sequence[str]) -> list[str]:
    """The ``files`` not readable in ``directory`` beside the daemon, as its user (all of them
    when the directory does not exist).

    Raises:
        ProofdiffError: ``sh`` could not run there (the daemon exited, an attached daemon on
            another host), or its answer lacked its last line in :data:`EXEC_TRIES` tries (an
            empty answer would otherwise read as "every file readable").
    """
    script = ('cd "$1" 2>/dev/null || { echo "__NODIR__"; echo "__DONE__"; exit 0; }; shift; '
              'for f; do [ -r "$f" ] || echo "$f"; done; echo "__DONE__"')
    for _ in range(EXEC_TRIES):
        code, out = daemon.handle.exec(["sh", "-c", script, "sh", directory, *files])
        if code != 0:
            raise ProofdiffError(f"`sh` beside the daemon ({daemon.what}) exited {code}: "
                                 f"{out.strip()[:300]}",
                                 fix="is the daemon still running? see its log")
        lines = [x.strip() for x in out.splitlines() if x.strip()]
        if "__DONE__" in lines:
            return list(files) if "__NODIR__" in lines else [x for x in lines if x in files]
    raise ProofdiffError(f"`sh` beside the daemon ({daemon.what}) exited 0 but its answer was "
                         f"cut short in {EXEC_TRIES} tries: the engine lost its output",
                         fix="run again; if it persists, see the engine's log")


def daemon_digests(daemon: Daemon, directory: str, files: Sequence[str]) -> dict[str, str]:
    """The parameters.json digest (first 32 hex digits of BLAKE2b-512, as ``b2sum`` prints)
    of each file where the daemon reads it, computed beside the daemon from its own copy.

    Raises:
        ProofdiffError: ``b2sum`` could not run there, or its output named fewer files than
            asked in :data:`EXEC_TRIES` tries (an engine that lost the output).
    """
    got: dict[str, str] = {}
    for _ in range(EXEC_TRIES):
        code, out = daemon.handle.exec(["sh", "-c", 'cd "$1" && shift && b2sum "$@"', "sh",
                                        directory, *files])
        if code != 0:
            raise ProofdiffError(f"b2sum beside the daemon ({daemon.what}) exited {code}: "
                                 f"{out.strip()[:300]}",
                                 fix="is the daemon still running? see its log")
        got = {}
        for line in out.splitlines():
            digest, _, name = line.partition("  ")
            got[name.strip()] = digest[:32]
        if all(f in got for f in files):
            return got
    missing = [f for f in files if f not in got]
    raise ProofdiffError(f"b2sum beside the daemon ({daemon.what}) exited 0 but named "
                         f"{len(files) - len(missing)} of {len(files)} file(s) in "
                         f"{EXEC_TRIES} tries (missing: {', '.join(missing[:3])}): the "
                         "engine lost its output", fix="run again; if it persists, run b2sum "
                         "in the container by hand and see the engine's log")


def host_digests(param_cache: Path, files: Sequence[str],
                 cache_root: str) -> tuple[dict[str, str], int, int]:
    """Each file's digest in the host param cache (what the verifier reads), cached by path,
    size and mtime under ``cache_root``; with the counts of cached and hashed files.

    Raises:
        OSError: a file cannot be read.
    """
    cache = DigestCache(digest_cache_file(cache_root))
    got = cache.digests([param_cache / n for n in files])
    return {n: got[param_cache / n] for n in files}, cache.hits, cache.misses
