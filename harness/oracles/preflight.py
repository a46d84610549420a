"""Preflight, per profile, before any proof: what must hold for proving to mean anything.

* ``image``: the profile's image exists locally, with its id (the content digest).
* ``libraries``: every program the profile starts finds its shared libraries where it runs,
  and a GPU profile sees the CUDA driver library (:mod:`proofdiff.oracles.libraries`).
* ``workload``: the workload file loads and matches its schema.
* ``params``: every ``.params``/``.vk`` file the workload needs is readable INSIDE the running
  daemon container, as its user, in the directory the daemon will actually read: what the daemon
  reports (``GET /status`` ``param_cache``, else its start log line), else the merged config's
  ``srs.param_cache`` (cuzk and refprover set FIL_PROOFS_PARAMETER_CACHE from it, so an env value
  that differs is ignored, and named as such).
* ``params-integrity``: every file the daemon reads for the workload has the digest of the
  params manifest (Filecoin's ``parameters.json`` format: the build writes one for the params it
  generates; pass the published one for the official params), and is the same file the
  verifier reads: a flipped byte, a truncated file or two different copies fail, naming the
  file, before any proof. Digests are cached by (path, size, mtime); the time it took is kept.
* ``config-keys``: config keys the daemon does not know (cuzk ignores them silently; refprover
  lists them in ``/status`` ``ignored_keys`` and logs ``ignored config key``); an error when
  neither ``/status`` nor the log could be read.
* ``bench-cli``: a ``driver = "bench-cli"`` profile's command line is accepted by the image's
  tool (the driver's one dry parse, :meth:`~proofdiff.drivers.bench_cli.BenchCliDriver.check_command_line`).

A failed ``image``, ``libraries``, ``workload``, ``params``, ``params-integrity`` or ``bench-cli`` check (or
a daemon that did not start) blocks the proving suites of that profile (:data:`BLOCKING`).
"""

from __future__ import annotations

import difflib
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from proofdiff.artifacts.param_manifest import MANIFEST, read_manifest
from proofdiff.model import progress
from proofdiff.model.choices import DriverKind, Runtime
from proofdiff.model.errors import ProofdiffError
from proofdiff.model.oracle_records import OracleRecord
from proofdiff.model.profile import Profile
from proofdiff.model.status import Outcome
from proofdiff.model.workload import WorkloadError
from proofdiff.oracles import libraries
from proofdiff.oracles.evidence import Evidence, Recorder
from proofdiff.oracles.suite_table import SUITES
from proofdiff.runtime.daemon import Daemon, LaunchError
from proofdiff.runtime.daemon_status import (deprecated_keys_from_log, ignored_keys_from_log,
                                             param_cache_from_log)
from proofdiff.runtime.spec import ContainerError

__all__ = ["BLOCKING", "DEPRECATED_KEYS", "KNOWN_KEYS", "ORACLES", "evaluate",
           "integrity_problems"]

#: The oracles of this suite, stated once in the suite table.
ORACLES = SUITES["preflight"].oracles
#: Checks whose failure makes proving on that profile pointless.
BLOCKING = ("image", "libraries", "workload", "params", "params-integrity", "bench-cli")
#: The keys cuzk reads (cuzk-core/src/config.rs of curio e0294b0f: its Config structs), and
#: refprover's own (``pipeline.self_check``, ``memory.partition_working_set``). Used to suggest
#: a spelling, and as the list to check against when the daemon reports nothing itself.
KNOWN_KEYS = ("daemon.listen", "daemon.status_listen", "memory.total_budget",
              "memory.safety_margin", "memory.eviction_min_idle", "gpus.devices",
              "gpus.gpu_threads", "gpus.gpu_workers_per_device", "scheduler.max_batch_size",
              "scheduler.max_batch_wait_ms", "scheduler.sort_by_type", "synthesis.threads",
              "pipeline.enabled", "pipeline.synthesis_lookahead", "pipeline.synthesis_concurrency",
              "pipeline.max_parallel_synthesis", "pipeline.slot_size",
              "pipeline.max_gpu_queue_depth", "srs.param_cache", "logging.level",
              "logging.format", "pipeline.self_check", "memory.partition_working_set")
#: Keys cuzk reads only to warn that they are deprecated and ignored (the same source).
DEPRECATED_KEYS = ("synthesis.partition_workers", "srs.preload", "memory.pinned_budget",
                   "memory.working_memory_budget")
PARAM_PATHS = ("config.srs.param_cache", "mounts.params", "env.FIL_PROOFS_PARAMETER_CACHE")


def _params(ev: Evidence, rec: Recorder, daemon: Daemon, status: dict[str, object] | None,
            log: str) -> tuple[list[str], str] | None:
    """The ``params`` record; returns (files needed, the directory the daemon reads) when
    they are all readable there, for the integrity check."""
    p = daemon.profile
    try:
        files, listed_by = ev.param_files(p.name, rec.workload)
    except ProofdiffError as exc:
        rec("params", p.name, Outcome.FAIL, str(exc), names=PARAM_PATHS)
        return None
    if not files:
        rec("params", p.name, Outcome.ERROR, f"no .params/.vk file to check: the host param "
            f"cache {ev.param_cache} is empty; build the params (proofdiff build)")
        return None
    if status and status.get("param_cache"):
        path, source = str(status["param_cache"]), "the daemon's GET /status param_cache"
    elif logged := param_cache_from_log(log):
        path, source = logged, "the daemon's start log (param_cache=)"
    else:
        path, source = daemon.handle.see(p.param_read_path()), "the merged config srs.param_cache"
    configured = daemon.handle.see(p.param_read_path())
    env_path = daemon.handle.see(p.env.get("FIL_PROOFS_PARAMETER_CACHE") or "") or None
    note = (f"; env FIL_PROOFS_PARAMETER_CACHE={env_path!r} is ignored: the daemon sets it from "
            f"srs.param_cache={configured!r}" if env_path and env_path != configured else "")
    try:
        missing = ev.unreadable(p.name, path, files)
    except ProofdiffError as exc:
        rec("params", p.name, Outcome.ERROR, f"could not look where the daemon "
            f"reads ({daemon.what}): {exc}")
        return None
    mounted = daemon.handle.see(p.param_mount_path())
    ev_ = {"read_path": path, "source": source, "configured": configured,
           "mounted_at": mounted, "required": files, "listed_by": listed_by,
           "missing": missing}
    if not missing:
        rec("params", p.name, Outcome.PASS, f"{len(files)} file(s) readable at {path} "
            f"({source}){note}", evidence=ev_)
        return files, path
    detail = (f"{len(missing)} of {len(files)} param file(s) the workload needs are not readable "
              f"for the daemon ({daemon.what}) at {path!r}, where it reads them "
              f"({source}); missing: {', '.join(missing)}")
    if path != configured:
        detail += (f". The daemon does NOT read the configured srs.param_cache={configured!r} "
                   f"(params are mounted at {mounted!r})")
    fix = (f"mount the params at {path!r} (mounts.params) or make the daemon read "
           f"{mounted!r}" + (" (it ignores srs.param_cache: a daemon bug)"
                             if path != configured else ""))
    rec("params", p.name, Outcome.FAIL, f"{detail}{note}\n  fix: {fix}", evidence=ev_,
        names=PARAM_PATHS)
    return None


def integrity_problems(files: Sequence[str], manifest: dict[str, dict[str, Any]],
                       daemon_side: dict[str, str], verifier_side: dict[str, str], *,
                       read_path: str, verifier_dir: str, manifest_path: str) -> list[str]:
    """One sentence per file whose digest where the daemon reads it is not the manifest's, or
    differs from the verifier's copy (digests: the parameters.json form)."""
    bad = []
    for n in files:
        want = (manifest.get(n) or {}).get("digest")
        got = daemon_side.get(n)
        if want is None:
            bad.append(f"{n}: not in the manifest {manifest_path}")
        elif got != want:
            bad.append(f"{n}: digest {got} at {read_path} (where the daemon reads it), the "
                       f"manifest says {want}: the file is corrupt or truncated")
        if got != verifier_side.get(n):
            bad.append(f"{n}: the daemon's copy at {read_path} ({got}) differs from the "
                       f"verifier's in {verifier_dir} ({verifier_side.get(n)})")
    return bad


def _integrity(ev: Evidence, rec: Recorder, daemon: Daemon, files: list[str],
               read_path: str) -> None:
    p = daemon.profile
    manifest_path = ev.params_manifest or ev.param_cache / MANIFEST
    if not manifest_path.is_file():
        rec("params-integrity", p.name, Outcome.SKIPPED, f"no params manifest at "
            f"{manifest_path}: the files cannot be checked; pass the published parameters.json "
            "with --params-manifest (official params), or rebuild (`proofdiff build` writes one)")
        return
    t0 = time.monotonic()
    try:
        manifest = read_manifest(manifest_path)
        verifier, hits, misses = ev.host_digests(files)
        # always the daemon's own files, hashed beside it: never the verifier's table again
        daemon_side = ev.daemon_digests(p.name, read_path, files)
    except (OSError, ProofdiffError) as exc:
        rec("params-integrity", p.name, Outcome.ERROR, f"the params could not be hashed: {exc}")
        return
    took = time.monotonic() - t0
    bad = integrity_problems(files, manifest, daemon_side, verifier, read_path=read_path,
                             verifier_dir=str(ev.param_cache), manifest_path=str(manifest_path))
    ev_ = {"manifest": str(manifest_path), "files": files, "hash_s": round(took, 3),
           "cached": hits, "hashed": misses, "read_path": read_path}
    if bad:
        rec("params-integrity", p.name, Outcome.FAIL, f"{len(bad)} param file problem(s) before "
            f"any proof (checked in {took:.2f} s):\n  " + "\n  ".join(bad) + "\n  fix: fetch or "
            "regenerate the named files (`proofdiff build`, or your params fetcher)",
            evidence=ev_, names=PARAM_PATHS)
    else:
        rec("params-integrity", p.name, Outcome.PASS, f"{len(files)} file(s) match {manifest_path}"
            f" ({hits} digest(s) cached on the host, {misses} hashed there; the daemon's copies "
            f"hashed beside it; {took:.2f} s)", evidence=ev_)


def _dotted(table: dict[str, object], prefix: str = "") -> list[str]:
    out = []
    for k, v in table.items():
        key = f"{prefix}{k}"
        out += _dotted(v, key + ".") if isinstance(v, dict) else [key]
    return out


def _config_keys(rec: Recorder, p: Profile, status: dict[str, object] | None, log: str) -> None:
    """Ignored keys from what the daemon says (``/status`` ``ignored_keys``, ``ignored config
    key`` or ``... is deprecated`` log lines); a daemon that says nothing about its keys (cuzk
    ignores unknown keys silently) is checked against :data:`KNOWN_KEYS`."""
    profile = p.name
    if status is None and not log.strip():
        rec("config-keys", profile, Outcome.ERROR, f"profile {profile!r}: neither GET /status nor "
            "the daemon log could be read, so ignored config keys cannot be told; publish a "
            "status port (daemon.status_listen, ports.status) or check the daemon's logging")
        return
    raw = status.get("ignored_keys") if status else None
    keys = [str(k) for k in raw] if isinstance(raw, list) else []
    # a daemon that lists what it ignored, even nothing (refprover's start line
    # ``ignored_keys=[]``), has said it; cuzk says nothing
    said = isinstance(raw, list) or "ignored config key" in log or "ignored_keys=" in log
    source = "GET /status ignored_keys" if isinstance(raw, list) else "daemon log"
    keys += [k for k in ignored_keys_from_log(log) + deprecated_keys_from_log(log)
             if k not in keys]
    if not said:
        source = "proofdiff's list of cuzk's keys (the daemon reports none itself)"
        keys += [k for k in _dotted(p.config) if k not in KNOWN_KEYS and k not in keys]
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


def _image(ev: Evidence, rec: Recorder, p: Profile) -> None:
    """What runs the daemon, with its digest: the image (docker), the program file
    (process: sha256 of the file), nothing proofdiff can see (attach: skipped)."""
    if p.runtime is Runtime.ATTACH:
        rec.skip_attached("image", p.name, p.address, "its image or program")
        return
    try:
        ident = ev.image(p.name)
    except ContainerError as exc:
        rec("image", p.name, Outcome.FAIL, str(exc), names=("image", "binary"))
        return
    rec("image", p.name, Outcome.PASS, f"{ident.tag} is {ident.digest} ({ident.detail})",
        evidence={"id": ident.digest, "name": ident.tag, "repo_digests": list(ident.repo_digests)})


def _judge_profile(ev: Evidence, rec: Recorder, name: str) -> None:
    p = ev.profiles[name]
    _image(ev, rec, p)
    libraries.judge(ev, rec, p)
    try:
        workload = ev.workload(rec.workload)
        rec("workload", name, Outcome.PASS, f"workload {rec.workload} loads ({len(workload.jobs)} "
            f"jobs, {workload.partitions} partition(s) per proof)")
    except WorkloadError as exc:
        workload = None
        rec("workload", name, Outcome.FAIL, f"{exc.cause}\n  fix: "
            f"{exc.fix or 'regenerate the workload file (proofdiff build) or fix the path'}")
    try:
        daemon = ev.daemon(name)
    except LaunchError as exc:
        for o in ("params", "params-integrity", "config-keys"):
            rec(o, name, Outcome.ERROR, f"the daemon did not start: {exc}")
        if p.driver is DriverKind.BENCH_CLI:
            rec("bench-cli", name, Outcome.ERROR, f"the daemon did not start: {exc}")
        return
    status = ev.daemon_status(name)
    log = ev.daemon_log(name)
    readable = _params(ev, rec, daemon, status, log)
    if readable is not None:
        _integrity(ev, rec, daemon, *readable)
    else:
        rec("params-integrity", name, Outcome.SKIPPED, "the params the daemon needs are not all "
            "readable where it reads them (see preflight/params)")
    _config_keys(rec, p, status, log)
    if p.driver is DriverKind.BENCH_CLI and workload is not None:
        problem = ev.bench_command_problem(name, rec.workload)
        rec("bench-cli", name, Outcome.FAIL if problem else Outcome.PASS, problem or
            f"the tool accepts `{p.bench_tool} ... batch {' '.join(p.bench_args)}`",
            names=("bench_args", "bench_tool") if problem else ())


def evaluate(ev: Evidence, workload: str) -> list[OracleRecord]:
    """The preflight records of every profile on ``workload`` (``bench-cli`` only for profiles
    that use that driver), in profile order. The profiles are judged at once, one thread each:
    each looks at its own daemon (tool runs beside it, its status and log), and in a row their
    waits would add up on the run's path to its first proof."""
    names = list(ev.profiles)
    recs = [Recorder(ev, "preflight", workload) for _ in names]
    with ThreadPoolExecutor(max_workers=max(1, len(names)),
                            thread_name_prefix="proofdiff-preflight") as pool:
        for done in [pool.submit(progress.carried(_judge_profile), ev, rec, name)
                     for rec, name in zip(recs, names)]:
            done.result()
    return [r for rec in recs for r in rec.records]
