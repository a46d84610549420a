"""Start one profile's daemon container and wait until it answers (DESIGN.md section 2).

Readiness = ``GetStatus`` answers, polled with a 20-50 ms backoff (a fixed 1 s poll would
quantise start-to-ready time), within the profile's ``ready_timeout_s`` (default 60 s). A
daemon that exits meanwhile, or never answers, raises :class:`LaunchError` with its exit code,
OOMKilled and a log tail; the container is removed.
"""

from __future__ import annotations

import stat
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import tomli_w

from harness.model.profile import DEFAULT_CONFIG_PATH, Profile
from harness.model.runs import DaemonFacts

from .client import ClientError, ProverClient
from .containers import (CONTAINER_USER, Container, ContainerError, ContainerRunner,
                         ContainerSpec, Mount)
from .gpu import gpu_hint
from .resources import ResourceSampler
from .status import fetch_status

__all__ = ["LOG_TAIL_LINES", "Daemon", "LaunchError", "daemon_spec", "inspect_view",
           "start_daemon"]

#: Lines of the daemon log kept in a run record.
LOG_TAIL_LINES = 200


class LaunchError(ContainerError):
    """A daemon could not be started or never became ready (see :class:`ContainerError` for the
    attributes); the message says what was seen and the fix."""


def inspect_view(inspect: Mapping[str, Any]) -> dict[str, Any]:
    """The parts of a ``docker inspect`` result that a profile controls: ``{image, entrypoint,
    cmd, user, env: {K: V}, mounts: {dest: "src (ro|rw)"}, limits, security, network_mode,
    ports}``."""
    cfg, host = inspect.get("Config") or {}, inspect.get("HostConfig") or {}
    env = dict(kv.partition("=")[::2] for kv in cfg.get("Env") or [])
    mounts = {m.get("Destination"): f"{m.get('Source')} ({'rw' if m.get('RW') else 'ro'})"
              for m in inspect.get("Mounts") or []}
    return {
        "image": cfg.get("Image"), "entrypoint": cfg.get("Entrypoint"), "cmd": cfg.get("Cmd"),
        "user": cfg.get("User"), "env": env, "mounts": mounts,
        "limits": {"nano_cpus": host.get("NanoCpus"), "memory_bytes": host.get("Memory"),
                   "pids_limit": host.get("PidsLimit"), "shm_size_bytes": host.get("ShmSize"),
                   "device_requests": host.get("DeviceRequests")},
        "security": {"privileged": host.get("Privileged"), "cap_drop": host.get("CapDrop"),
                     "cap_add": host.get("CapAdd"), "security_opt": host.get("SecurityOpt"),
                     "readonly_rootfs": host.get("ReadonlyRootfs")},
        "network_mode": host.get("NetworkMode"),
        "ports": sorted((host.get("PortBindings") or {}).keys()),
    }


@dataclass
class Daemon:
    """A started, ready daemon.

    Attributes:
        profile: the profile it runs. container: its container.
        address: gRPC ``127.0.0.1:PORT`` on this host.
        start_to_ready_ms: from the start call to the first GetStatus answer, ms.
        config_text: the daemon TOML as written.
    """

    profile: Profile
    container: Container
    address: str = ""
    start_to_ready_ms: float | None = None
    config_text: str = ""
    sampler: ResourceSampler | None = None

    @property
    def status_port(self) -> int | None:
        """Host port of the daemon's ``GET /status`` listener (``None`` when not published)."""
        return self.container.host_port("status")

    def logs(self, tail: int | None = None) -> str:
        """The daemon log, the last ``tail`` lines or all."""
        return self.container.logs(tail)

    def state(self) -> dict[str, Any]:
        """``State`` of a fresh ``docker inspect``."""
        return self.container.state()

    def facts(self, settle_s: float = 0.0) -> DaemonFacts:
        """What the daemon shows now: state, the settings it runs with, the log tail.

        ``settle_s``: when jobs just lost their connection, the engine may take a moment to
        record the daemon's death (an OOM kill); wait up to this many seconds for it to leave
        the running state before reading (default 0: read at once).
        """
        deadline = time.monotonic() + settle_s
        while time.monotonic() < deadline and self.state().get("Status") == "running":
            time.sleep(0.1)
        inspect = self.container.inspect()
        state = inspect.get("State") or {}
        keep = {k: state.get(k) for k in ("Status", "ExitCode", "OOMKilled", "Error")
                if k in state}
        alive = keep.get("Status") == "running"
        srs: tuple[str, ...] = ()
        if alive and self.address:
            try:
                with ProverClient(self.address) as client:
                    srs = tuple(s.circuit_id for s in client.get_status(timeout_s=5).srs)
            except ClientError:
                srs = ()  # evidence only
        return DaemonFacts(container_id=self.container.short_id, address=self.address,
                           start_to_ready_ms=self.start_to_ready_ms, state=keep,
                           inspect_view=inspect_view(inspect) if inspect else {},
                           log_tail=self.logs(LOG_TAIL_LINES),
                           status=fetch_status(self.status_port) if alive else None,
                           resources=self.sampler.usage() if self.sampler else None,
                           srs_loaded=srs)

    def remove(self) -> None:
        """Stop (SIGTERM, 5 s grace) and remove the container (idempotent)."""
        if self.sampler is not None:
            self.sampler.stop()
        try:
            self.container.stop(grace_s=5)
        finally:
            self.container.remove()


def _cache_problems(profile: Profile, param_cache: Path) -> list[str]:
    if not param_cache.is_dir():
        return [f"param cache {str(param_cache)!r} does not exist on the host; generate the "
                "params with `proofdiff build` / `make image`"]
    if not any(param_cache.glob("*.vk")):
        return [f"param cache {str(param_cache)!r} holds no .vk files, so the daemon would find "
                f"no params at {profile.param_read_path()!r}; regenerate with `proofdiff build`"]
    if stat.S_IMODE(param_cache.stat().st_mode) & 0o005 != 0o005:
        return [f"param cache {str(param_cache)!r} is not readable by the container user "
                f"{CONTAINER_USER}; run `chmod -R a+rX {param_cache}`"]
    return []


def daemon_spec(profile: Profile, param_cache: Path, name: str = "") -> ContainerSpec:
    """The container of ``profile``'s daemon: its image, env, command, limits and GPUs, the
    param cache mounted read-only at ``mounts.params`` and the merged config at
    :data:`~harness.model.profile.DEFAULT_CONFIG_PATH`."""
    config = tomli_w.dumps(profile.effective_config()).encode("utf-8")
    return ContainerSpec(
        image=profile.image_tag, role="daemon", profile=profile.name, command=profile.command,
        env=profile.env, mounts=(Mount(param_cache, profile.param_mount_path()),),
        files={DEFAULT_CONFIG_PATH: config}, network=profile.network, ports=profile.ports,
        cpus=profile.cpus, mem_limit=profile.mem_limit, gpus=profile.gpus, name=name)


def start_daemon(runner: ContainerRunner, profile: Profile, param_cache: Path, *,
                 name: str = "") -> Daemon:
    """Create, start and wait for one profile's daemon.

    Raises:
        LaunchError: a profile mismatch (params mounted where the daemon does not read, a port
            that differs from ``daemon.listen``), an unusable param cache, the image missing,
            docker refused the container (with the GPU fix when the engine has no NVIDIA
            runtime), the daemon exited (exit code, OOMKilled, log tail) or never answered
            in time. No container is left behind.
    """
    problems = profile.launch_problems() + _cache_problems(profile, Path(param_cache))
    if problems:
        raise LaunchError("; ".join(problems), role="daemon", profile=profile.name)
    spec = daemon_spec(profile, Path(param_cache), name)
    t0 = time.monotonic()
    try:
        container = runner.start(spec)
    except ContainerError as exc:
        hint = gpu_hint(str(exc)) if profile.gpus is not None else None
        extra = f"; profile {profile.name!r} requests gpus={profile.gpus!r}: {hint}" if hint else ""
        raise LaunchError(exc.headline + extra, role="daemon", profile=profile.name) from None
    daemon = Daemon(profile=profile, container=container,
                    config_text=spec.files[DEFAULT_CONFIG_PATH].decode("utf-8"))
    try:
        _wait_ready(daemon, t0, profile.ready_timeout_s)
    except BaseException:  # KeyboardInterrupt too: never leave it running
        container.remove()
        raise
    if profile.mem_limit is not None or profile.cpus is not None:
        daemon.sampler = ResourceSampler(container)
    return daemon


def _exited(daemon: Daemon) -> LaunchError | None:
    st = daemon.state()
    if st.get("Status") not in ("exited", "dead"):
        return None
    code, oom = st.get("ExitCode"), bool(st.get("OOMKilled"))
    why = " (OOM-killed: raise mem_limit)" if oom else ""
    return LaunchError(
        f"profile {daemon.profile.name!r}: daemon container {daemon.container.short_id} exited "
        f"with code {code}{why} before answering GetStatus; read the log below, check the "
        f"config ({DEFAULT_CONFIG_PATH}) and command {list(daemon.profile.command)}",
        role="daemon", profile=daemon.profile.name, container_id=daemon.container.short_id,
        exit_code=code, oom_killed=oom, log_tail=daemon.logs(40))


def _wait_ready(daemon: Daemon, t0: float, timeout_s: float) -> None:
    deadline = t0 + timeout_s
    delay, last = 0.02, "no answer yet"
    client: ProverClient | None = None
    try:
        while True:
            err = _exited(daemon)  # a fresh inspect also refreshes the port bindings
            if err is not None:
                raise err
            if client is None:
                port = daemon.container.host_port("grpc")
                if port:
                    daemon.address = f"127.0.0.1:{port}"
                    client = ProverClient(daemon.address)
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            if client is not None:
                try:
                    client.get_status(timeout_s=min(0.5, remaining))
                    daemon.start_to_ready_ms = (time.monotonic() - t0) * 1000.0
                    return
                except ClientError as exc:
                    last = f"{exc.code}: {exc.details}"
            time.sleep(max(0.0, min(delay, deadline - time.monotonic())))
            delay = min(delay * 1.5, 0.05)
    finally:
        if client is not None:
            client.close()
    raise LaunchError(
        f"profile {daemon.profile.name!r}: daemon container {daemon.container.short_id} did not "
        f"answer GetStatus on {daemon.address or '(no published port)'} within {timeout_s:.0f} s "
        f"(status {daemon.state().get('Status')!r}, last error {last}); check daemon.listen and "
        "ports in the profile, or raise ready_timeout_s",
        role="daemon", profile=daemon.profile.name, container_id=daemon.container.short_id,
        log_tail=daemon.logs(40))
