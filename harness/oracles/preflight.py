"""Preflight, per profile, before any proof: what must hold for proving to mean anything.

* ``image``: the profile's image exists locally, with its id (the content digest).
* ``workload``: the workload file loads and matches its schema.
* ``params``: every ``.params``/``.vk`` file the workload needs is readable INSIDE the running
  daemon container, as its user, in the directory the daemon will actually read: what the daemon
  reports (``GET /status`` ``param_cache``, else its start log line), else the merged config's
  ``srs.param_cache`` (cuzk and refprover set FIL_PROOFS_PARAMETER_CACHE from it, so an env value
  that differs is ignored, and named as such).
* ``config-keys``: config keys the daemon does not know (cuzk ignores them silently; refprover
  lists them in ``/status`` ``ignored_keys`` and logs ``ignored config key``); an error when
  neither ``/status`` nor the log could be read.
* ``bench-cli``: a ``driver = "bench-cli"`` profile's command line is accepted by the image's
  tool (the driver's one dry parse, :meth:`~harness.drivers.bench_cli.BenchCliDriver.check_command_line`).

A failed ``image``, ``workload``, ``params`` or ``bench-cli`` check (or a daemon that did not
start) blocks the proving suites of that profile (:data:`BLOCKING`).
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Sequence
from pathlib import Path

from harness.drivers.bench_cli import BenchCliDriver
from harness.model.oracles import OracleRecord
from harness.model.status import Outcome
from harness.model.workload import WorkloadError
from harness.target.containers import ContainerError, ContainerSpec
from harness.target.daemon import Daemon, LaunchError
from harness.target.status import fetch_status, ignored_keys_from_log, param_cache_from_log

from .base import Evidence, Recorder

__all__ = ["BLOCKING", "KNOWN_KEYS", "ORACLES", "evaluate", "required_param_files"]

ORACLES = ("image", "workload", "params", "config-keys", "bench-cli")
#: Checks whose failure makes proving on that profile pointless.
BLOCKING = ("image", "workload", "params", "bench-cli")
PARAMGEN_TOOL = "/usr/local/bin/paramgen"
#: The keys cuzk knows (DESIGN.md section 3) plus refprover's ``pipeline.self_check``; used only
#: to suggest a spelling for a key the daemon ignored.
KNOWN_KEYS = ("daemon.listen", "daemon.status_listen", "srs.param_cache", "pipeline.enabled",
              "pipeline.self_check", "pipeline.synthesis_concurrency",
              "pipeline.max_parallel_synthesis", "gpus.devices", "gpus.gpu_workers_per_device",
              "synthesis.partition_workers", "scheduler.max_batch_size", "memory.total_budget",
              "logging.level")
PARAM_PATHS = ("config.srs.param_cache", "mounts.params", "env.FIL_PROOFS_PARAMETER_CACHE")


def required_param_files(ev: Evidence, image: str, workload: str, profile: str,
                         timeout_s: float) -> tuple[list[str], str]:
    """The ``.params``/``.vk`` names ``workload`` needs, and where the list came from: the
    circuits of ``harness.build.WORKLOADS``, named by the cache ids the image's own ``paramgen
    --print-cache-id`` prints; every file of the host cache when the image has no paramgen.

    Raises:
        RuntimeError: a circuit's files are not in the host param cache (with the fix).
    """
    from harness.build.workloads import WORKLOADS  # the build's table: circuits per workload

    cache = ev.param_cache
    every = sorted(p.name for p in cache.iterdir() if p.suffix in (".params", ".vk"))
    spec = WORKLOADS.get(workload)
    if spec is None:
        return every, f"every .params/.vk of {cache} (a workload the build does not know)"
    try:
        res = ev.runner.run(ContainerSpec(
            image=image, role="preflight", profile=profile, entrypoint=(PARAMGEN_TOOL,),
            command=("--param-cache", "/nonexistent", "--print-cache-id", *spec.circuits)),
            timeout_s=timeout_s)
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
        return every, f"every .params/.vk of {cache} (the image has no {PARAMGEN_TOOL})"
    files = []
    for circuit, cid in zip(spec.circuits, ids):
        mine = [f for f in every if cid in f]
        if not {".params", ".vk"} <= {Path(f).suffix for f in mine}:
            raise RuntimeError(f"the host param cache {cache} has no .params/.vk for circuit "
                               f"{circuit} (cache id {cid}); build them with `proofdiff build "
                               f"--workload {workload}`")
        files += mine
    return files, f"the image's paramgen --print-cache-id {' '.join(spec.circuits)}"


def _unreadable(daemon: Daemon, directory: str, files: Sequence[str]) -> list[str]:
    """Files not readable in ``directory`` inside the daemon container, as its user."""
    script = ('cd "$1" 2>/dev/null || { echo "__NODIR__"; exit 0; }; shift; '
              'for f; do [ -r "$f" ] || echo "$f"; done')
    code, out = daemon.container.exec(["sh", "-c", script, "sh", directory, *files])
    if code != 0:
        raise RuntimeError(f"`docker exec {daemon.container.short_id} sh` exited {code}: "
                           f"{out.strip()[:300]}")
    lines = [x.strip() for x in out.splitlines() if x.strip()]
    return list(files) if "__NODIR__" in lines else [x for x in lines if x in files]


def _params(ev: Evidence, rec: Recorder, daemon: Daemon, status: dict[str, object] | None,
            log: str) -> None:
    p = daemon.profile
    try:
        files, listed_by = required_param_files(ev, p.image_tag, rec.workload, p.name,
                                                ev.deadlines(p.name).tool_s)
    except RuntimeError as exc:
        rec("params", p.name, Outcome.FAIL, str(exc), names=PARAM_PATHS)
        return
    if not files:
        rec("params", p.name, Outcome.ERROR, f"no .params/.vk file to check: the host param "
            f"cache {ev.param_cache} is empty; build the params (proofdiff build)")
        return
    if status and status.get("param_cache"):
        path, source = str(status["param_cache"]), "the daemon's GET /status param_cache"
    elif logged := param_cache_from_log(log):
        path, source = logged, "the daemon's start log (param_cache=)"
    else:
        path, source = p.param_read_path(), "the merged config srs.param_cache"
    configured, env_path = p.param_read_path(), p.env.get("FIL_PROOFS_PARAMETER_CACHE")
    note = (f"; env FIL_PROOFS_PARAMETER_CACHE={env_path!r} is ignored: the daemon sets it from "
            f"srs.param_cache={configured!r}" if env_path and env_path != configured else "")
    try:
        missing = _unreadable(daemon, path, files)
    except (RuntimeError, ContainerError) as exc:
        rec("params", p.name, Outcome.ERROR, f"could not look inside container "
            f"{daemon.container.short_id}: {exc}; is the daemon still running? see its log")
        return
    ev_ = {"read_path": path, "source": source, "configured": configured,
           "mounted_at": p.param_mount_path(), "required": files, "listed_by": listed_by,
           "missing": missing}
    if not missing:
        rec("params", p.name, Outcome.PASS, f"{len(files)} file(s) readable at {path} "
            f"({source}){note}", evidence=ev_)
        return
    detail = (f"{len(missing)} of {len(files)} param file(s) the workload needs are not readable "
              f"in container {daemon.container.short_id} at {path!r}, where the daemon reads them "
              f"({source}); missing: {', '.join(missing)}")
    if path != configured:
        detail += (f". The daemon does NOT read the configured srs.param_cache={configured!r} "
                   f"(params are mounted at {p.param_mount_path()!r})")
    fix = (f"mount the params at {path!r} (mounts.params) or make the daemon read "
           f"{p.param_mount_path()!r}" + (" (it ignores srs.param_cache: a daemon bug)"
                                          if path != configured else ""))
    rec("params", p.name, Outcome.FAIL, f"{detail}{note}\n  fix: {fix}", evidence=ev_,
        names=PARAM_PATHS)


def _config_keys(rec: Recorder, profile: str, status: dict[str, object] | None, log: str) -> None:
    if status is None and not log.strip():
        rec("config-keys", profile, Outcome.ERROR, f"profile {profile!r}: neither GET /status nor "
            "the daemon log could be read, so ignored config keys cannot be told; publish a "
            "status port (daemon.status_listen, ports.status) or check the daemon's logging")
        return
    raw = status.get("ignored_keys") if status else None
    keys = [str(k) for k in raw] if isinstance(raw, list) else []
    source = "GET /status ignored_keys" if isinstance(raw, list) else "daemon log"
    keys += [k for k in ignored_keys_from_log(log) if k not in keys]
    if not keys:
        rec("config-keys", profile, Outcome.PASS, f"the daemon knows every config key ({source})")
        return
    hints = []
    for k in keys:
        close = difflib.get_close_matches(k, KNOWN_KEYS, n=1, cutoff=0.75)
        hints.append(f"{k!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
    rec("config-keys", profile, Outcome.FAIL, f"profile {profile!r}: the daemon ignores "
        f"{len(keys)} config key(s) ({source}): {', '.join(hints)}; the setting has NO effect\n"
        "  fix: rename or remove the key in the profile's config",
        evidence={"ignored_keys": keys}, names=tuple(f"config.{k}" for k in keys))


def _judge_profile(ev: Evidence, rec: Recorder, name: str) -> None:
    p = ev.profiles[name]
    try:
        img = ev.runner.image(p.image_tag)
        digests = list(img.attrs.get("RepoDigests") or [])
        rec("image", name, Outcome.PASS, f"{p.image_tag} is {img.id}" + (
            f" ({digests[0]})" if digests else " (local build, no registry digest)"),
            evidence={"id": img.id, "repo_digests": digests})
    except ContainerError as exc:
        rec("image", name, Outcome.FAIL, str(exc), names=("image",))
    try:
        workload = ev.workload(rec.workload)
        rec("workload", name, Outcome.PASS, f"workload {rec.workload} loads ({len(workload.jobs)} "
            f"jobs, {workload.partitions} partition(s) per proof)")
    except WorkloadError as exc:
        workload = None
        rec("workload", name, Outcome.FAIL, f"{exc}\n  fix: regenerate the workload file "
            "(proofdiff build) or fix the path")
    try:
        daemon = ev.daemon(name)
    except LaunchError as exc:
        for o in ("params", "config-keys"):
            rec(o, name, Outcome.ERROR, f"the daemon did not start: {exc}")
        if p.driver == "bench-cli":
            rec("bench-cli", name, Outcome.ERROR, f"the daemon did not start: {exc}")
        return
    status = fetch_status(daemon.status_port)
    log = daemon.logs(500)
    _params(ev, rec, daemon, status, log)
    _config_keys(rec, name, status, log)
    driver = ev.driver(name)
    if isinstance(driver, BenchCliDriver) and workload is not None:
        problem = driver.check_command_line(workload, ev.deadlines(name))
        rec("bench-cli", name, Outcome.FAIL if problem else Outcome.PASS, problem or
            f"the tool accepts `{p.bench_tool} ... batch {' '.join(p.bench_args)}`",
            names=("bench_args", "bench_tool") if problem else ())


def evaluate(ev: Evidence, workload: str) -> list[OracleRecord]:
    """The preflight records of every profile on ``workload`` (``bench-cli`` only for profiles
    that use that driver)."""
    rec = Recorder(ev, "preflight", workload)
    for name in ev.profiles:
        _judge_profile(ev, rec, name)
    return rec.records
