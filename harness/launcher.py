"""Start, watch and remove one daemon container per profile (docker SDK).

Every container carries the labels ``proofdiff.run=<run id>``, ``proofdiff.profile=<name>``,
``proofdiff.image=<tag>`` and ``proofdiff.role`` (``daemon`` | ``verifier``), so :func:`reap`
can remove leftovers of a crashed run. Containers run as ``65534:65534`` with every capability
dropped and ``no-new-privileges``; params and the daemon config are mounted read-only.

Readiness = ``GetStatus`` answers (polled with a 20-50 ms backoff) within the profile's
``ready_timeout_s`` (default 60 s). A daemon that exits meanwhile, or never answers, raises
:class:`LaunchError` with its exit code, OOMKilled and a log tail; the container is removed.

Bind-mount sources are host paths: the Docker engine must run on this machine.
"""

from __future__ import annotations

import os
import secrets
import shutil
import stat
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import docker
import docker.errors
import tomli_w
from docker.models.containers import Container
from docker.types import DeviceRequest

from .client import ClientError, ProverClient
from .profiles import DEFAULT_CONFIG_PATH, Profile

__all__ = [
    "BUILD_HINT",
    "CONTAINER_USER",
    "LABEL_IMAGE",
    "LABEL_PROFILE",
    "LABEL_ROLE",
    "LABEL_RUN",
    "Daemon",
    "LaunchError",
    "Launcher",
    "docker_client",
    "hardening",
    "new_run_id",
    "reap",
    "require_image",
]

LABEL_RUN = "proofdiff.run"
LABEL_PROFILE = "proofdiff.profile"
LABEL_IMAGE = "proofdiff.image"
LABEL_ROLE = "proofdiff.role"
CONTAINER_USER = "65534:65534"
BUILD_HINT = "build it with `make image` or `proofdiff build` (no registry is used; nothing is pulled)"
LOG_TAIL_LINES = 40


class LaunchError(RuntimeError):
    """A daemon container could not be started or never became ready.

    Attributes:
        profile: profile name ('' when not profile-specific).
        container_id: short id, '' when no container was created.
        exit_code: the container's exit code when it exited, else ``None``.
        oom_killed: docker's ``State.OOMKilled``.
        log_tail: the last lines of the container log ('' when none).
    """

    def __init__(self, message: str, *, profile: str = "", container_id: str = "",
                 exit_code: int | None = None, oom_killed: bool = False,
                 log_tail: str = "") -> None:
        self.profile, self.container_id = profile, container_id
        self.exit_code, self.oom_killed, self.log_tail = exit_code, oom_killed, log_tail
        if log_tail:
            message += "\n--- last log lines ---\n" + log_tail.rstrip()
        super().__init__(message)


def new_run_id() -> str:
    """A fresh run id: ``YYYYmmdd-HHMMSS-<6 hex>`` (sortable, safe in names and labels)."""
    return time.strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(3)


def docker_client(timeout_s: float = 60.0) -> docker.DockerClient:
    """A docker SDK client for the local engine (follows DOCKER_HOST / the CLI context).

    ``timeout_s`` bounds every HTTP call to the engine (default 60 s).

    Raises:
        LaunchError: the engine does not answer (with the fix).
    """
    try:
        client = docker.from_env(timeout=int(timeout_s))
        client.ping()
    except docker.errors.DockerException as exc:
        raise LaunchError(f"cannot reach the Docker engine: {exc}; start it (systemctl start "
                          "docker / dockerd) or point DOCKER_HOST at it") from None
    return client


def require_image(client: docker.DockerClient, tag: str) -> Any:
    """The local image ``tag``; never pulls.

    Raises:
        LaunchError: the image is not present locally (says how to build it).
    """
    try:
        return client.images.get(tag)
    except docker.errors.ImageNotFound:
        raise LaunchError(f"image {tag!r} is not present locally; {BUILD_HINT}, or pass an "
                          "existing tag with --image / --proofdiff-image") from None


def hardening() -> dict[str, Any]:
    """The security options every proofdiff container gets (docker SDK keyword args)."""
    return {"user": CONTAINER_USER, "privileged": False, "cap_drop": ["ALL"],
            "security_opt": ["no-new-privileges"]}


def _labels(run_id: str, profile: str, image: str, role: str) -> dict[str, str]:
    return {LABEL_RUN: run_id, LABEL_PROFILE: profile, LABEL_IMAGE: image, LABEL_ROLE: role}


def _log_tail(container: Container, lines: int = LOG_TAIL_LINES) -> str:
    try:
        raw = container.logs(stdout=True, stderr=True, tail=lines)
        return raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)
    except docker.errors.DockerException as exc:
        return f"(log unavailable: {exc})"


def _remove(container: Container) -> None:
    try:
        container.remove(force=True, v=True)
    except docker.errors.NotFound:
        pass


@dataclass
class Daemon:
    """A started daemon container.

    Attributes:
        profile: the profile it runs. run_id: the run label.
        container: the docker SDK container.
        address: gRPC ``127.0.0.1:PORT`` on this host.
        host_ports: published host port by profile port name (``grpc``, ``status``).
        start_to_ready_ms: from the start call to the first GetStatus answer, ms.
        workdir: host dir holding the mounted config (removed with the daemon).
        config_text: the daemon TOML as written.
    """

    profile: Profile
    run_id: str
    container: Container
    address: str = ""
    host_ports: dict[str, int] = field(default_factory=dict)
    start_to_ready_ms: float | None = None
    workdir: Path | None = None
    config_text: str = ""

    @property
    def short_id(self) -> str:
        """12-hex container id."""
        return str(self.container.short_id)

    def logs(self, tail: int | None = None) -> str:
        """The container log (stdout + stderr), the last ``tail`` lines or all."""
        raw = self.container.logs(stdout=True, stderr=True, tail=tail if tail else "all")
        return raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)

    def inspect(self) -> dict[str, Any]:
        """A fresh ``docker inspect`` snapshot (``{}`` when the container is gone)."""
        try:
            self.container.reload()
        except docker.errors.NotFound:
            return {}
        return dict(self.container.attrs)

    def state(self) -> dict[str, Any]:
        """``State`` of the snapshot: Status, ExitCode, OOMKilled, Error, ..."""
        return dict(self.inspect().get("State") or {})

    def stop(self, grace_s: float = 10.0) -> None:
        """SIGTERM, then SIGKILL after ``grace_s`` seconds (default 10); gone is fine."""
        try:
            self.container.stop(timeout=int(max(grace_s, 0)))
        except docker.errors.NotFound:
            pass

    def remove(self) -> None:
        """Force-remove the container and its workdir (idempotent)."""
        _remove(self.container)
        if self.workdir is not None:
            shutil.rmtree(self.workdir, ignore_errors=True)
            self.workdir = None


class Launcher:
    """Starts daemon containers for one run.

    Args:
        run_id: the run label value.
        param_cache: host dir with the .params/.vk files, mounted read-only.
        client: docker client (default :func:`docker_client`).
        worker: suffix for container names (pytest-xdist worker id), '' for none.
    """

    def __init__(self, run_id: str, param_cache: Path, *,
                 client: docker.DockerClient | None = None, worker: str = "") -> None:
        self.run_id, self.param_cache, self.worker = run_id, Path(param_cache), worker
        self.client = client or docker_client()

    def container_name(self, profile: Profile) -> str:
        """``proofdiff-<run id>-<profile>[-<worker>]``."""
        return "-".join(p for p in ("proofdiff", self.run_id, profile.name, self.worker) if p)

    def _preflight(self, profile: Profile) -> None:
        problems = profile.preflight_problems()
        pc = self.param_cache
        if not pc.is_dir():
            problems.append(f"param cache {str(pc)!r} does not exist on the host; generate the "
                            "params with `proofdiff build` / `make params`")
        elif not any(pc.glob("*.vk")):
            problems.append(f"param cache {str(pc)!r} holds no .vk files, so the daemon would find "
                            f"no params at {profile.param_read_path()!r}; regenerate with "
                            "`proofdiff build` / `make params`")
        elif stat.S_IMODE(pc.stat().st_mode) & 0o005 != 0o005:
            problems.append(f"param cache {str(pc)!r} is not readable by the container user "
                            f"{CONTAINER_USER}; run `chmod -R a+rX {pc}`")
        if problems:
            raise LaunchError("; ".join(problems), profile=profile.name)

    def _run_kwargs(self, profile: Profile, workdir: Path) -> dict[str, Any]:
        cfg = workdir / "cuzk.toml"
        kwargs: dict[str, Any] = {
            "image": profile.image,
            "name": self.container_name(profile),
            "labels": _labels(self.run_id, profile.name, profile.image, "daemon"),
            "environment": dict(profile.env),
            "volumes": {
                str(self.param_cache.resolve()): {"bind": profile.param_mount_path(), "mode": "ro"},
                str(cfg): {"bind": DEFAULT_CONFIG_PATH, "mode": "ro"},
            },
            "network_mode": profile.network,
            "detach": True,
            **hardening(),
        }
        if profile.command:
            kwargs["command"] = list(profile.command)
        if profile.network == "bridge":
            kwargs["ports"] = {f"{p}/tcp": ("127.0.0.1", None) for p in profile.ports.values()}
        if profile.cpus is not None:
            kwargs["nano_cpus"] = int(profile.cpus * 1e9)
        if profile.mem_limit is not None:
            kwargs["mem_limit"] = profile.mem_limit
        if profile.gpus is not None:
            if isinstance(profile.gpus, tuple):
                req = DeviceRequest(device_ids=list(profile.gpus), capabilities=[["gpu"]])
            else:
                count = -1 if profile.gpus == "all" else int(profile.gpus)
                req = DeviceRequest(count=count, capabilities=[["gpu"]])
            kwargs["device_requests"] = [req]
        return kwargs

    def start(self, profile: Profile, ready_timeout_s: float | None = None) -> Daemon:
        """Create, start and wait for one profile's daemon.

        Args:
            profile: what to run.
            ready_timeout_s: readiness deadline, seconds (default ``profile.ready_timeout_s``).

        Returns:
            A ready :class:`Daemon` (``start_to_ready_ms`` set).

        Raises:
            LaunchError: preflight mismatch, image missing, docker refused the container, the
                daemon exited (exit code, OOMKilled, log tail) or never answered in time. No
                container is left behind.
        """
        self._preflight(profile)
        require_image(self.client, profile.image)
        try:  # a leftover of the same run and name (a retried session) is ours to replace
            old = self.client.containers.get(self.container_name(profile))
            if old.labels.get(LABEL_RUN) == self.run_id:
                _remove(old)
        except docker.errors.NotFound:
            pass
        workdir = Path(tempfile.mkdtemp(prefix=f"proofdiff-{profile.name}-"))
        os.chmod(workdir, 0o755)
        config_text = tomli_w.dumps(profile.effective_config())
        (workdir / "cuzk.toml").write_text(config_text, encoding="utf-8")
        os.chmod(workdir / "cuzk.toml", 0o644)
        try:
            container = self.client.containers.create(**self._run_kwargs(profile, workdir))
        except docker.errors.DockerException as exc:
            shutil.rmtree(workdir, ignore_errors=True)
            raise LaunchError(f"profile {profile.name!r}: docker refused to create the "
                              f"container: {exc}", profile=profile.name) from None
        daemon = Daemon(profile=profile, run_id=self.run_id, container=container,
                        workdir=workdir, config_text=config_text)
        try:
            t0 = time.monotonic()
            container.start()
            self._wait_ready(daemon, t0, profile.ready_timeout_s if ready_timeout_s is None
                             else ready_timeout_s)
        except BaseException as exc:  # KeyboardInterrupt too: never leave it running
            daemon.remove()
            if isinstance(exc, docker.errors.DockerException):
                raise LaunchError(f"profile {profile.name!r}: container {daemon.short_id} failed "
                                  f"to start: {exc}", profile=profile.name,
                                  container_id=daemon.short_id) from None
            raise
        return daemon

    def _exited(self, daemon: Daemon) -> LaunchError | None:
        daemon.container.reload()
        st = daemon.container.attrs.get("State") or {}
        if st.get("Status") not in ("exited", "dead"):
            return None
        code, oom = st.get("ExitCode"), bool(st.get("OOMKilled"))
        why = " (OOM-killed: raise mem_limit)" if oom else ""
        return LaunchError(
            f"profile {daemon.profile.name!r}: daemon container {daemon.short_id} exited with "
            f"code {code}{why} before answering GetStatus; read the log below, check the "
            f"config ({DEFAULT_CONFIG_PATH}) and command {list(daemon.profile.command)}",
            profile=daemon.profile.name, container_id=daemon.short_id, exit_code=code,
            oom_killed=oom, log_tail=_log_tail(daemon.container))

    def _address(self, daemon: Daemon) -> str:
        if daemon.profile.network == "host":
            daemon.host_ports = dict(daemon.profile.ports)
            return f"127.0.0.1:{daemon.profile.grpc_port()}"
        bindings = (daemon.container.attrs.get("NetworkSettings") or {}).get("Ports") or {}
        for name, port in daemon.profile.ports.items():
            for b in bindings.get(f"{port}/tcp") or []:
                if b.get("HostIp") in ("127.0.0.1", "0.0.0.0", ""):
                    daemon.host_ports[name] = int(b["HostPort"])
        grpc_port = daemon.host_ports.get("grpc")
        return f"127.0.0.1:{grpc_port}" if grpc_port else ""

    def _wait_ready(self, daemon: Daemon, t0: float, timeout_s: float) -> None:
        deadline = t0 + timeout_s
        delay, last = 0.02, "no answer yet"
        client: ProverClient | None = None
        try:
            while True:
                err = self._exited(daemon)  # reload() also refreshes the port bindings
                if err is not None:
                    raise err
                if client is None:
                    daemon.address = self._address(daemon)
                    if daemon.address:
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
        st = daemon.state()
        raise LaunchError(
            f"profile {daemon.profile.name!r}: daemon container {daemon.short_id} did not answer "
            f"GetStatus on {daemon.address or '(no published port)'} within {timeout_s:.0f} s "
            f"(status {st.get('Status')!r}, last error {last}); check daemon.listen and ports in "
            f"the profile, or raise ready_timeout_s",
            profile=daemon.profile.name, container_id=daemon.short_id,
            log_tail=_log_tail(daemon.container))


def reap(run_id: str | None = None, client: docker.DockerClient | None = None) -> list[str]:
    """Force-remove labelled proofdiff containers: one run's, or every run's when ``run_id`` is
    ``None``. Returns the removed container names."""
    client = client or docker_client()
    label = f"{LABEL_RUN}={run_id}" if run_id else LABEL_RUN
    removed = []
    for c in client.containers.list(all=True, filters={"label": label}):
        _remove(c)
        removed.append(str(c.name))
    return removed
