"""Start one profile's daemon, or attach to it, and wait until it answers.

The profile's ``runtime`` says how: a container (``docker``), a process on this host
(``process``: the same spec, rewritten by :mod:`proofdiff.runtime.process`) or the daemon
already running at ``address`` (``attach``: never started or stopped here).

Readiness = ``GetStatus`` answers, polled with a 5-50 ms (process) or 20-50 ms (container)
backoff (a fixed 1 s poll would
quantise start-to-ready time), within the profile's ``ready_timeout_s`` (default 60 s). A
daemon that exits meanwhile, or never answers, raises :class:`LaunchError` with its exit code,
OOMKilled and a log tail; what was started is removed.
"""

from __future__ import annotations

import stat
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import tomli_w

from proofdiff.model import interrupt
from proofdiff.model.choices import Role, Runtime
from proofdiff.model.gpu_telemetry import GpuTelemetry
from proofdiff.model.profile import DEFAULT_BINARY, DEFAULT_CONFIG_PATH, Profile
from proofdiff.model.runs import DaemonFacts

from proofdiff.runtime.attached import AttachedHandle
from proofdiff.runtime.gpu_telemetry import GpuSampler, start_gpu_sampler
from proofdiff.runtime.host import gpu_hint
from proofdiff.runtime.process_probe import ProcessProbe, probe_for
from proofdiff.runtime.resources import ProcessSampler, ResourceSampler, sampler_for
from proofdiff.runtime.runner import Runner
from proofdiff.runtime.spec import CONTAINER_USER, ContainerError, LaunchSpec, Handle, Mount
from proofdiff.runtime.daemon_status import fetch_status

__all__ = ["CONFIG_FLAGS", "LOG_TAIL_LINES", "Daemon", "LaunchError", "ProbeFactory",
           "ReadyProbe", "daemon_spec", "start_daemon"]

#: Lines of the daemon log kept in a run record.
LOG_TAIL_LINES = 200
#: The config-file flags of cuzk-daemon and refprover (cuzk-daemon --help: ``-c, --config``).
CONFIG_FLAGS = ("-c", "--config")


#: What a daemon's log says when its port was taken between proofdiff's pick and its own bind
#: (EADDRINUSE's text, as tonic and std::io print it), and how often a process runtime then
#: starts it again on new ports.
PORT_TAKEN = "Address already in use"
PORT_TAKEN_RETRIES = 2


class LaunchError(ContainerError):
    """A daemon could not be started or never became ready (see :class:`ContainerError` for the
    attributes); the message says what was seen and the fix."""


class ReadyProbe(Protocol):
    """Asks one daemon whether it answers its API (cuzk: ``GetStatus``); made per daemon by a
    :data:`ProbeFactory` from its address (the drivers know the API: this package does not)."""

    def ask(self, timeout_s: float) -> str | None:
        """``None`` when the daemon answered within ``timeout_s`` seconds, else what was seen
        instead (one line: the gRPC code and details)."""
        ...

    def close(self) -> None:
        """Release the connection (idempotent)."""
        ...


#: ``probe(address)`` -> a :class:`ReadyProbe` for the daemon at ``127.0.0.1:PORT``.
ProbeFactory = Callable[[str], ReadyProbe]


@dataclass
class Daemon:
    """A ready daemon.

    Attributes:
        profile: the profile it runs. handle: its container, process or attached address.
        address: gRPC ``127.0.0.1:PORT`` on this host (an attached daemon's ``address``).
        start_to_ready_ms: from the start call to the first GetStatus answer, ms (attach: to
            the first answer).
        config_text: the daemon TOML as written ('' when attached: it is not ours).
        sampler: memory / CPU sampling of a daemon proofdiff started (``None`` for an
            attached one); reported as ``resources`` only under the profile's limits.
        gpu: NVML sampling of the GPUs while it runs, or the record of why there is none.
        cpuset: the host CPUs it is pinned to (() = not pinned).
        process: reads its process's memory, handles and CPU time, for every flow's usage
            samples (``None``: attached, or a container whose process is not on this host).
        started_unix_s: wall clock (Unix seconds) just before it was started (attach: before
            the first readiness look); what its first run writes is newer.
    """

    profile: Profile
    handle: Handle
    address: str = ""
    start_to_ready_ms: float | None = None
    config_text: str = ""
    sampler: ResourceSampler | ProcessSampler | None = None
    gpu: GpuSampler | GpuTelemetry | None = None
    cpuset: tuple[int, ...] = ()
    process: ProcessProbe | None = None
    started_unix_s: float = 0.0

    @property
    def started_here(self) -> bool:
        """proofdiff started this daemon (not an attached one), so it saw its first proof."""
        return self.handle.runtime is not Runtime.ATTACH

    @property
    def what(self) -> str:
        """How it is named in messages: ``container 1a2b3c4d5e6f``, ``process pid-42
        (refprover)``, ``attached 127.0.0.1:9820``."""
        h = self.handle
        return {"docker": f"container {h.short_id}", "process": f"process {h.short_id} "
                f"({self.profile.program})"}.get(h.runtime, h.short_id)

    @property
    def status_port(self) -> int | None:
        """Host port of the daemon's ``GET /status`` listener (``None`` when not published)."""
        return self.handle.host_port("status")

    def logs(self, tail: int | None = None) -> str:
        """The daemon log, the last ``tail`` lines or all ('' for an attached daemon)."""
        return self.handle.logs(tail)

    def state(self) -> dict[str, Any]:
        """Its state now (docker's ``State`` shape: Status, ExitCode, OOMKilled)."""
        return self.handle.state()

    def facts(self, settle_s: float = 0.0, *, srs_loaded: tuple[str, ...] = ()) -> DaemonFacts:
        """What the daemon shows now: state, the settings it runs with, the log tail;
        ``srs_loaded``: the circuits its API says are loaded (asked by the caller, who speaks
        the API).

        ``settle_s``: when jobs just lost their connection, the engine may take a moment to
        record the daemon's death (an OOM kill); wait up to this many seconds for it to leave
        the running state before reading (default 0: read at once).
        """
        deadline = time.monotonic() + settle_s
        while time.monotonic() < deadline and self.state().get("Status") == "running":
            time.sleep(0.1)
        state = self.state()
        keep: dict[str, Any] = {k: state.get(k) for k in ("Status", "ExitCode", "OOMKilled",
                                                           "Error") if k in state}
        alive = keep.get("Status") == "running"
        return DaemonFacts(container_id=self.handle.short_id, runtime=self.handle.runtime,
                           address=self.address, start_to_ready_ms=self.start_to_ready_ms,
                           state=keep, inspect_view=self.handle.view(),
                           log_tail=self.logs(LOG_TAIL_LINES),
                           status=fetch_status(self.status_port) if alive else None,
                           resources=self.sampler.usage() if self.sampler and (
                               self.profile.mem_limit is not None or self.profile.cpus is not None)
                           else None,
                           srs_loaded=srs_loaded if alive else (), cpuset=self.cpuset,
                           gpu=self.gpu.telemetry() if isinstance(self.gpu, GpuSampler)
                           else self.gpu)

    def remove(self) -> None:
        """Stop (SIGTERM, 5 s grace) and remove it (idempotent; an attached daemon is left
        alone)."""
        if self.sampler is not None:
            self.sampler.stop()
        if isinstance(self.gpu, GpuSampler):
            self.gpu.stop()
        try:
            self.handle.stop(grace_s=5)
        finally:
            self.handle.remove()


def _cache_problems(profile: Profile, param_cache: Path) -> list[tuple[str, str]]:
    """Why ``param_cache`` cannot serve the daemon: ``(cause, fix)`` per problem."""
    if not param_cache.is_dir():
        return [(f"param cache {str(param_cache)!r} does not exist on the host",
                 "generate the params with `proofdiff build` / `make image`")]
    if not any(param_cache.glob("*.vk")):
        return [(f"param cache {str(param_cache)!r} holds no .vk files, so the daemon would find "
                 f"no params at {profile.param_read_path()!r}",
                 "regenerate with `proofdiff build`")]
    if profile.runtime is Runtime.DOCKER and stat.S_IMODE(param_cache.stat().st_mode) & 0o005 != 0o005:
        return [(f"param cache {str(param_cache)!r} is not readable by the container user "
                 f"{CONTAINER_USER}", f"run `chmod -R a+rX {param_cache}`")]
    return []


def daemon_spec(profile: Profile, param_cache: Path, name: str = "",
                cpuset: tuple[int, ...] = ()) -> LaunchSpec:
    """The container of ``profile``'s daemon: its image, env, command, limits and GPUs, the
    param cache mounted read-only at ``mounts.params`` and its config
    (:meth:`~proofdiff.model.profile.Profile.written_config`) at
    :data:`~proofdiff.model.profile.DEFAULT_CONFIG_PATH`.

    A process runtime runs ``binary`` instead of the image's entrypoint, and gets
    ``-c <config>`` first when its command names no config file (a container finds the config
    at the daemon's default path; a process on this host would not). ``cpuset``: host CPUs to
    pin it to (a side-by-side placement; () = any).
    """
    config = tomli_w.dumps(profile.written_config()).encode("utf-8")
    process = profile.runtime is Runtime.PROCESS
    command = profile.command
    if process and not any(a in CONFIG_FLAGS or a.startswith("--config=") for a in command):
        command = ("-c", DEFAULT_CONFIG_PATH, *command)
    return LaunchSpec(
        image=profile.binary or DEFAULT_BINARY if process else profile.image_tag, role=Role.DAEMON,
        profile=profile.name, command=command, env=profile.env,
        entrypoint=(profile.binary or DEFAULT_BINARY,) if process else None,
        mounts=(Mount(param_cache, profile.param_mount_path()),),
        files={DEFAULT_CONFIG_PATH: config}, network=profile.network, ports=profile.ports,
        cpus=profile.cpus, cpuset=cpuset, mem_limit=profile.mem_limit, gpus=profile.gpus,
        name=name,
        runtime=Runtime.PROCESS if process else Runtime.DOCKER)


def start_daemon(runner: Runner, profile: Profile, param_cache: Path, *, probe: ProbeFactory,
                 name: str = "", cpuset: tuple[int, ...] = ()) -> Daemon:
    """Create, start and wait for one profile's daemon (attach: wait for the running one):
    ready when ``probe(address)`` answers (:func:`proofdiff.drivers.cuzk_client.status_probe`
    for a cuzk-compatible daemon). ``cpuset``: host CPUs to pin it to (() = any; ignored
    when attaching: that daemon is not ours to place).

    Raises:
        LaunchError: a profile mismatch (params mounted where the daemon does not read, a port
            that differs from ``daemon.listen``, attach without ``address``), an unusable
            param cache, the image or program missing, docker refused the container (with the
            GPU fix when the engine has no NVIDIA runtime), the daemon exited (exit code,
            OOMKilled, log tail) or never answered in time. Nothing started is left behind.
    """
    problems = profile.launch_problems()
    if profile.runtime is not Runtime.ATTACH:
        problems += _cache_problems(profile, Path(param_cache))
    if problems:
        raise LaunchError("; ".join(cause for cause, _ in problems),
                          fix="; ".join(fix for _, fix in problems), role=Role.DAEMON,
                          profile=profile.name)
    t0, started = time.monotonic(), time.time()
    if profile.runtime is Runtime.ATTACH:
        daemon = Daemon(profile=profile, handle=AttachedHandle(
            profile.address, profile.status_url, profile.name, probe=probe),
            address=profile.address, started_unix_s=started)
        _wait_ready(daemon, t0, profile.ready_timeout_s, probe)
        return daemon
    spec = daemon_spec(profile, Path(param_cache), name, cpuset)
    for attempt in range(PORT_TAKEN_RETRIES + 1):
        try:
            handle = runner.start(spec)
        except ContainerError as exc:
            hint = gpu_hint(str(exc)) if profile.gpus is not None else None
            extra = f"; profile {profile.name!r} requests gpus={profile.gpus!r}" if hint else ""
            raise LaunchError(exc.headline + extra, fix=hint or exc.fix, role=Role.DAEMON,
                              profile=profile.name) from None
        daemon = Daemon(profile=profile, handle=handle,
                        config_text=spec.files[DEFAULT_CONFIG_PATH].decode("utf-8"),
                        cpuset=cpuset, started_unix_s=started)
        try:
            _wait_ready(daemon, t0, profile.ready_timeout_s, probe)
            break
        except LaunchError as exc:
            handle.remove()
            # a process runtime picks the daemon's port on this host (runtime/ports.py), and
            # another binder can take it before the daemon binds: start it again on new ports
            if not (profile.runtime is Runtime.PROCESS and attempt < PORT_TAKEN_RETRIES
                    and PORT_TAKEN in exc.log_tail):
                raise
        except BaseException:  # KeyboardInterrupt too: never leave it running
            handle.remove()
            raise
    daemon.sampler = sampler_for(handle)  # the hang guard watches its CPU (drivers.stall_rule)
    daemon.process = probe_for(handle)  # every flow reads its memory and handles (usage)
    daemon.gpu = start_gpu_sampler(profile.gpus if isinstance(profile.gpus, tuple) else ())
    return daemon


def _exited(daemon: Daemon) -> LaunchError | None:
    if not daemon.started_here:
        return None  # an attached daemon is not ours to watch: only its answer counts
    st = daemon.state()
    if st.get("Status") not in ("exited", "dead"):
        return None
    code, oom = st.get("ExitCode"), bool(st.get("OOMKilled"))
    return LaunchError(
        f"profile {daemon.profile.name!r}: daemon {daemon.what} exited "
        f"with code {code}{' (OOM-killed)' if oom else ''} before answering GetStatus",
        fix=("raise mem_limit; " if oom else "") + "read the log below, check the config "
            f"({DEFAULT_CONFIG_PATH}) and command {list(daemon.profile.command)}",
        role=Role.DAEMON, profile=daemon.profile.name, container_id=daemon.handle.short_id,
        exit_code=code, oom_killed=oom, log_tail=daemon.logs(40))



def _wait_ready(daemon: Daemon, t0: float, timeout_s: float, probe: ProbeFactory) -> None:
    deadline = t0 + timeout_s
    # a process's look is a poll() and a TCP connect (the probe's, until the port accepts):
    # every 5 ms at first, since refprover answers ~10 ms after its launcher; a container's
    # look is an API call to the engine: every 20 ms at first. Both slow to 50 ms.
    quick = daemon.handle.runtime is Runtime.PROCESS
    delay, growth, last = (0.005, 1.1, "no answer yet") if quick else (0.02, 1.5, "no answer yet")
    client: ReadyProbe | None = None
    try:
        while True:
            interrupt.check()  # the run's Ctrl-C, on whatever thread starts the daemon
            err = _exited(daemon)  # a fresh inspect also refreshes the port bindings
            if err is not None:
                raise err
            if client is None:
                if daemon.handle.runtime is Runtime.ATTACH:
                    client = probe(daemon.address)
                elif port := daemon.handle.host_port("grpc"):
                    daemon.address = f"127.0.0.1:{port}"
                    client = probe(daemon.address)
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            if client is not None:
                said = client.ask(min(0.5, remaining))
                if said is None:
                    daemon.start_to_ready_ms = (time.monotonic() - t0) * 1000.0
                    return
                last = said
            time.sleep(max(0.0, min(delay, deadline - time.monotonic())))
            delay = min(delay * growth, 0.05)
    finally:
        if client is not None:
            client.close()
    fix = ("is it running? start it, or fix `address`" if daemon.handle.runtime is Runtime.ATTACH
           else "check daemon.listen and ports in the profile")
    raise LaunchError(
        f"profile {daemon.profile.name!r}: daemon {daemon.what} did not "
        f"answer GetStatus on {daemon.address or '(no published port)'} within {timeout_s:.0f} s "
        f"(status {daemon.state().get('Status')!r}, last error {last})",
        fix=f"{fix}, or raise ready_timeout_s",
        role=Role.DAEMON, profile=daemon.profile.name, container_id=daemon.handle.short_id,
        log_tail=daemon.logs(40))
