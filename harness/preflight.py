"""Preflight: what must hold before any proof, per profile (DESIGN.md section 1, 'preflight').

Checks, each a :class:`Check` with what was observed and the fix:

* ``image``: the profile's image exists locally, with its id (the content digest).
* ``params``: every ``.params``/``.vk`` file the workload needs is readable, INSIDE the running
  daemon container as its user, at the directory the daemon will actually read. That directory
  is what the daemon reports (``GET /status`` ``param_cache``, else its start log line), else
  the merged config's ``srs.param_cache`` (cuzk and refprover set FIL_PROOFS_PARAMETER_CACHE
  from it, so an env value that differs is ignored and is named as such).
* ``config-keys``: config keys the daemon does not know (cuzk ignores them silently; refprover
  lists them in ``/status`` ``ignored_keys`` and logs ``ignored config key``).
* ``bench-cli``: for a ``driver = "bench-cli"`` profile, the bench command line is accepted by
  the image's tool: :func:`dry_parse` runs it with ``--help`` appended; clap rejects an unknown
  flag (``-n``) with exit 2 and its usage line before it would print help.

Which files a workload needs: the circuits of ``harness.build.WORKLOADS``; their file stems are
the cache ids that the image's own ``paramgen --print-cache-id`` prints (so the names are the
image's, not the host's); a target without ``paramgen`` falls back to every ``.params``/``.vk``
file of the host param cache.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import docker
import docker.errors
import requests

from .daemon_status import fetch_status, ignored_keys_from_log, param_cache_from_log
from .launcher import (LABEL_IMAGE, LABEL_PROFILE, LABEL_ROLE, LABEL_RUN, Daemon, hardening)

__all__ = ["BENCH_TOOL", "Check", "DryParse", "PreflightOutcome", "dry_parse",
           "required_param_files", "run_preflight"]

BENCH_TOOL = "/usr/local/bin/bench"
PARAMGEN_TOOL = "/usr/local/bin/paramgen"
#: Deadline of one short-lived tool container (paramgen, the bench dry parse), seconds.
TOOL_TIMEOUT_S = 60.0
#: The keys cuzk knows (DESIGN.md section 3) plus refprover's ``pipeline.self_check``; only
#: used to suggest a spelling for a key the daemon ignored.
KNOWN_KEYS = ("daemon.listen", "daemon.status_listen", "srs.param_cache", "pipeline.enabled",
              "pipeline.self_check", "pipeline.synthesis_concurrency",
              "pipeline.max_parallel_synthesis", "gpus.devices", "gpus.gpu_workers_per_device",
              "synthesis.partition_workers", "scheduler.max_batch_size", "memory.total_budget",
              "logging.level")


@dataclass(frozen=True)
class Check:
    """One preflight check: ``name``, ``ok``, what was observed (``detail``), the ``fix`` when
    not ok, and machine-readable ``data``."""

    name: str
    ok: bool
    detail: str
    fix: str = ""
    data: dict[str, Any] = field(default_factory=dict)

    def render(self) -> str:
        """``[FAIL] params: ... -> fix: ...``."""
        tag = "ok  " if self.ok else "FAIL"
        return f"[{tag}] {self.name}: {self.detail}" + (f"\n       fix: {self.fix}"
                                                          if self.fix and not self.ok else "")

    def to_json(self) -> dict[str, Any]:
        """JSON-ready dict."""
        return {"name": self.name, "ok": self.ok, "detail": self.detail, "fix": self.fix,
                "data": self.data}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Check:
        """Inverse of :meth:`to_json`."""
        return cls(d["name"], bool(d["ok"]), d.get("detail", ""), d.get("fix", ""),
                   dict(d.get("data") or {}))


@dataclass(frozen=True)
class PreflightOutcome:
    """All checks of one profile on one workload; ``ok`` when every check passed."""

    profile: str
    workload: str
    checks: tuple[Check, ...]

    @property
    def ok(self) -> bool:
        """Every check passed."""
        return all(c.ok for c in self.checks)

    def failed(self, name: str | None = None) -> list[Check]:
        """Failed checks (of one name when given)."""
        return [c for c in self.checks if not c.ok and (name is None or c.name == name)]

    def check(self, name: str) -> Check | None:
        """The check called ``name`` (``None`` when it did not run)."""
        return next((c for c in self.checks if c.name == name), None)

    def explain(self) -> str:
        """Multi-line: a headline and one line per check."""
        bad = [c.name for c in self.checks if not c.ok]
        head = (f"preflight of profile {self.profile!r} on {self.workload}: "
                + ("ok" if not bad else f"FAILED ({', '.join(bad)})"))
        return "\n".join([head] + [f"  {c.render()}" for c in self.checks])

    def to_json(self) -> dict[str, Any]:
        """JSON-ready dict."""
        return {"profile": self.profile, "workload": self.workload, "ok": self.ok,
                "checks": [c.to_json() for c in self.checks]}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> PreflightOutcome:
        """Inverse of :meth:`to_json`."""
        return cls(d["profile"], d["workload"], tuple(Check.from_json(c) for c in d["checks"]))


@dataclass(frozen=True)
class DryParse:
    """Result of :func:`dry_parse`: ``ok`` (exit 0), the exit code, the tool's ``error:`` and
    ``Usage:`` lines ('' when none), the whole output and the argv tried."""

    ok: bool
    exit_code: int
    error_line: str
    usage_line: str
    output: str
    argv: tuple[str, ...]


def _tool_container(client: docker.DockerClient, image: str, entrypoint: str,
                    argv: Sequence[str], *, labels: dict[str, str], timeout_s: float,
                    volumes: dict[str, dict[str, str]] | None = None) -> tuple[int, str]:
    """Run ``entrypoint argv`` in a short-lived, network-less container; (exit, output).
    The container is always removed. Raises docker errors and ``TimeoutError``."""
    container = client.containers.create(image=image, entrypoint=[entrypoint],
                                         command=list(argv), network_disabled=True,
                                         detach=True, labels=labels, volumes=volumes or {},
                                         **hardening())
    try:
        container.start()
        try:
            code = int(container.wait(timeout=timeout_s).get("StatusCode", -1))
        except (requests.exceptions.ReadTimeout, requests.exceptions.ConnectionError):
            raise TimeoutError(f"`{entrypoint} {shlex.join(argv)}` in {image} did not exit "
                               f"within {timeout_s:.0f} s") from None
        out = container.logs(stdout=True, stderr=True).decode("utf-8", "replace")
        return code, out
    finally:
        try:
            container.remove(force=True, v=True)
        except docker.errors.NotFound:
            pass


def dry_parse(image: str, argv: Sequence[str], *, tool: str = BENCH_TOOL,
              client: docker.DockerClient | None = None, run_id: str = "",
              profile: str = "", timeout_s: float = TOOL_TIMEOUT_S) -> DryParse:
    """Ask the image's bench tool whether it accepts ``argv`` (the args after the tool), without
    running anything: ``<tool> ARGV... --help`` in a short-lived container with no network.

    clap parses left to right: a rejected flag (``-n``) stops it with exit 2, an ``error:``
    line and the usage line; a valid line reaches ``--help`` and exits 0.

    Args:
        image: the image tag. argv: the bench command line after the tool name.
        tool: the tool's path in the image (default ``/usr/local/bin/bench``).
        client: docker client (default from the environment). run_id, profile: labels, so a
            crashed run's reaper finds the container. timeout_s: deadline (default 60 s).

    Raises:
        RuntimeError: the tool could not be run at all (missing from the image, docker
            refused, no exit within ``timeout_s``), naming the image and the tool.
    """
    client = client or docker.from_env()
    labels = {LABEL_RUN: run_id or "preflight", LABEL_PROFILE: profile, LABEL_IMAGE: image,
              LABEL_ROLE: "preflight"}
    args = tuple(argv) + ("--help",)
    try:
        code, out = _tool_container(client, image, tool, args, labels=labels,
                                    timeout_s=timeout_s)
    except (docker.errors.DockerException, TimeoutError) as exc:
        raise RuntimeError(f"cannot run the bench tool {tool!r} of image {image!r}: {exc}; "
                           "check the profile's image and bench_tool") from None
    lines = [x.strip() for x in out.splitlines()]
    err = next((x for x in lines if x.lower().startswith("error")), "")
    usage = next((x for x in lines if x.startswith("Usage:")), "")
    return DryParse(ok=code == 0, exit_code=code, error_line=err, usage_line=usage,
                    output=out, argv=args)


def required_param_files(client: docker.DockerClient, image: str, workload: str,
                         host_param_cache: Path, *, run_id: str = "",
                         profile: str = "") -> tuple[list[str], str]:
    """The ``.params``/``.vk`` file names ``workload`` needs, and where the list came from.

    Raises:
        RuntimeError: a circuit's files are not in the host param cache (with the fix).
    """
    from harness.build.workloads import WORKLOADS  # the build's own table: circuits per workload

    all_files = sorted(p.name for p in Path(host_param_cache).iterdir()
                       if p.suffix in (".params", ".vk"))
    spec = WORKLOADS.get(workload)
    if spec is None:
        return all_files, f"every .params/.vk of {host_param_cache} (unknown workload)"
    labels = {LABEL_RUN: run_id or "preflight", LABEL_PROFILE: profile, LABEL_IMAGE: image,
              LABEL_ROLE: "preflight"}
    try:
        code, out = _tool_container(client, image, PARAMGEN_TOOL,
                                    ["--param-cache", "/nonexistent", "--print-cache-id",
                                     *spec.circuits], labels=labels, timeout_s=TOOL_TIMEOUT_S)
    except (docker.errors.DockerException, TimeoutError):
        code, out = -1, ""
    ids = []
    for line in out.splitlines():
        try:
            ids.append(str(json.loads(line)["cache_id"]))
        except (ValueError, KeyError, TypeError):
            continue
    if code != 0 or len(ids) != len(spec.circuits):
        return all_files, (f"every .params/.vk of {host_param_cache} (the image has no "
                           f"{PARAMGEN_TOOL} --print-cache-id)")
    files = []
    for circuit, cid in zip(spec.circuits, ids):
        mine = [f for f in all_files if cid in f]
        if not {".params", ".vk"} <= {Path(f).suffix for f in mine}:
            raise RuntimeError(f"the host param cache {host_param_cache} has no .params/.vk for "
                               f"circuit {circuit} (cache id {cid}); build them with "
                               f"`proofdiff build --workload {workload}`")
        files += mine
    return files, f"the image's paramgen --print-cache-id {' '.join(spec.circuits)}"


def _read_path(daemon: Daemon, status: dict[str, Any] | None, log: str) -> tuple[str, str]:
    if status and status.get("param_cache"):
        return str(status["param_cache"]), "the daemon's GET /status param_cache"
    logged = param_cache_from_log(log)
    if logged:
        return logged, "the daemon's start log (param_cache=)"
    return daemon.profile.param_read_path(), "the merged config srs.param_cache"


def _missing_in_container(daemon: Daemon, directory: str, files: Sequence[str]) -> list[str]:
    """Files of ``files`` not readable in ``directory`` inside the daemon container, as its
    user (``docker exec``); a directory that does not exist makes every file missing."""
    script = ('cd "$1" 2>/dev/null || { echo "__NODIR__"; exit 0; }; shift; '
              'for f; do [ -r "$f" ] || echo "$f"; done')
    res = daemon.container.exec_run(["sh", "-c", script, "sh", directory, *files],
                                    stdout=True, stderr=True)
    out = res.output.decode("utf-8", "replace") if isinstance(res.output, bytes) else ""
    if res.exit_code != 0:
        raise RuntimeError(f"`docker exec {daemon.short_id} sh` exited {res.exit_code}: "
                           f"{out.strip()[:300]}")
    lines = [x.strip() for x in out.splitlines() if x.strip()]
    return list(files) if "__NODIR__" in lines else [x for x in lines if x in files]


def _params_check(daemon: Daemon, workload: str, host_param_cache: Path, status: Any,
                  log: str, run_id: str) -> Check:
    profile = daemon.profile
    try:
        files, listed_by = required_param_files(daemon.container.client, profile.image,
                                                workload, host_param_cache, run_id=run_id,
                                                profile=profile.name)
    except RuntimeError as exc:
        return Check("params", False, str(exc), "build the params (proofdiff build)")
    path, source = _read_path(daemon, status, log)
    configured = profile.param_read_path()
    env_path = profile.env.get("FIL_PROOFS_PARAMETER_CACHE")
    notes = []
    if env_path and env_path != configured:
        notes.append(f"env FIL_PROOFS_PARAMETER_CACHE={env_path!r} is ignored: the daemon sets "
                     f"it from srs.param_cache={configured!r}")
    try:
        missing = _missing_in_container(daemon, path, files)
    except (RuntimeError, docker.errors.DockerException) as exc:
        return Check("params", False, f"could not look inside container {daemon.short_id}: "
                     f"{exc}", "is the daemon still running? see its log")
    data = {"read_path": path, "source": source, "configured": configured,
            "mounted_at": profile.param_mount_path(), "required": files, "missing": missing}
    if not missing:
        return Check("params", True, f"{len(files)} file(s) readable at {path} ({source})"
                     + ("; " + "; ".join(notes) if notes else ""), data=data)
    detail = (f"{len(missing)} of {len(files)} param file(s) the workload needs are not readable "
              f"in container {daemon.short_id} at {path!r}, where the daemon reads them "
              f"({source}); missing: {', '.join(missing)}")
    if path != configured:
        detail += (f". The daemon does NOT read the configured srs.param_cache={configured!r} "
                   f"(params are mounted at {profile.param_mount_path()!r})")
    fix = (f"mount the params at {path!r} (mounts.params) or make the daemon read "
           f"{profile.param_mount_path()!r}" + (" (it ignores srs.param_cache: a daemon bug)"
                                                 if path != configured else ""))
    return Check("params", False, detail + ("; " + "; ".join(notes) if notes else ""), fix,
                 data)


def _keys_check(profile_name: str, status: dict[str, Any] | None, log: str) -> Check:
    import difflib

    keys = list(status.get("ignored_keys") or []) if status else []
    source = "GET /status ignored_keys" if status and "ignored_keys" in status else "daemon log"
    for k in ignored_keys_from_log(log):
        if k not in keys:
            keys.append(k)
    if not keys:
        return Check("config-keys", True, f"the daemon knows every config key ({source})")
    hints = []
    for k in keys:
        close = difflib.get_close_matches(k, KNOWN_KEYS, n=1, cutoff=0.75)
        hints.append(f"{k!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
    return Check("config-keys", False,
                 f"profile {profile_name!r}: the daemon ignores {len(keys)} config key(s) "
                 f"({source}): {', '.join(hints)}; the setting has NO effect",
                 "rename or remove the key in the profile's config", {"ignored_keys": keys})


def _bench_check(daemon: Daemon, workload_obj: Any, run_id: str) -> Check | None:
    profile = daemon.profile
    if profile.driver != "bench-cli":
        return None
    tool = getattr(profile, "bench_tool", "bench")
    tool_path = tool if tool.startswith("/") else f"/usr/local/bin/{tool}"
    argv = ["-a", "http://127.0.0.1:1", "batch", *list(getattr(profile, "bench_args", ()))]
    try:  # the exact line the bench-cli driver (issue 4) would run, when it can tell us
        from .driver_bench_cli import BenchCliDriver, bench_type

        drv = BenchCliDriver(daemon)
        argv = drv.command_line(profile, workload_obj.jobs[0], bench_type(workload_obj.proof_kind),
                                1, "http://127.0.0.1:1", drv.supported_flags(profile))
    except Exception:  # noqa: BLE001 - no driver, or it could not probe: dry-parse our line
        pass
    try:
        res = dry_parse(profile.image, argv, tool=tool_path, client=daemon.container.client,
                        run_id=run_id, profile=profile.name)
    except RuntimeError as exc:
        return Check("bench-cli", False, str(exc), "set bench_tool to the image's bench client")
    shown = f"{tool} {shlex.join(argv)}"
    if res.ok:
        return Check("bench-cli", True, f"the tool accepts `{shown}`", data={"argv": argv})
    return Check("bench-cli", False,
                 f"`{shown}` is rejected by the tool (exit {res.exit_code}): "
                 f"{res.error_line or '(no error line)'}; {res.usage_line or '(no usage line)'}",
                 f"fix bench_args in {profile.source or 'the profile file'} to match that usage",
                 {"argv": argv, "exit_code": res.exit_code, "usage": res.usage_line,
                  "error": res.error_line})


def run_preflight(daemon: Daemon, workload: str, host_param_cache: Path, *,
                  workload_obj: Any = None, run_id: str = "") -> PreflightOutcome:
    """All preflight checks of ``daemon``'s profile for ``workload`` (see the module docstring).
    Never raises for a failed check; each failure says what was seen and the fix."""
    profile = daemon.profile
    client = daemon.container.client
    checks: list[Check] = []
    try:
        img = client.images.get(profile.image)
        digests = list(img.attrs.get("RepoDigests") or [])
        checks.append(Check("image", True, f"{profile.image} is {img.id}"
                            + (f" ({digests[0]})" if digests else " (local build, no registry "
                               "digest)"), data={"id": img.id, "repo_digests": digests}))
    except docker.errors.ImageNotFound:
        checks.append(Check("image", False, f"image {profile.image!r} is not present locally",
                            "build it (make image / proofdiff build) or pass --image"))
    status = fetch_status(daemon)
    try:
        log = daemon.logs(tail=500)
    except docker.errors.DockerException:
        log = ""
    checks.append(_params_check(daemon, workload, host_param_cache, status, log, run_id))
    checks.append(_keys_check(profile.name, status, log))
    bench = _bench_check(daemon, workload_obj, run_id) if workload_obj is not None else None
    if bench is not None:
        checks.append(bench)
    return PreflightOutcome(profile.name, workload, tuple(checks))
