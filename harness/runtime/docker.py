"""The docker side of the one runner (:class:`proofdiff.runtime.runner.Runner`): daemons, the
verifier, the bench tool, the preflight probes and the GPU probe as containers (docker SDK).

Every container gets:

* labels ``proofdiff.run`` (run id), ``proofdiff.owner`` (the owning process, see
  :mod:`proofdiff.runtime.watchdog`), ``proofdiff.role``, ``proofdiff.profile``,
  ``proofdiff.image``, so :func:`reap` and the owner's watchdog can remove leftovers (the
  run's network too: :mod:`proofdiff.runtime.networks`);
* the settings of :mod:`proofdiff.runtime.hardening`: an unprivileged user, no capability,
  ``no-new-privileges``, a pids limit, a read-only root where its image allows, the run's own
  network with nothing outside, read-only mounts, private inputs and outputs;
* cleanup on every path: a container that fails to start is removed, a short-lived one is
  removed after it exits or at its deadline, temp dirs are removed with it, and the watchdog
  removes all of it if the owner dies first.

Bind-mount sources are host paths: the Docker engine must run on this machine.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import docker
import docker.errors
import requests
from docker.models.containers import Container as SdkContainer

from proofdiff.model.choices import Runtime
from proofdiff.runtime.hardening import container_settings
from proofdiff.runtime.networks import NETWORK_PREFIX, RUN_NETWORK, RunNetwork, reap_networks
from proofdiff.runtime.spec import (BUILD_HINT, CONTAINER_USER, LABEL_IMAGE, LABEL_OWNER, LABEL_PROFILE,
                   LABEL_ROLE, LABEL_RUN, OUT_DIR, ContainerError, LaunchSpec, Mount,
                   ToolResult, Tracker)

__all__ = [
    "BUILD_HINT", "CONTAINER_USER", "LABEL_IMAGE", "LABEL_OWNER", "LABEL_PROFILE", "LABEL_ROLE",
    "LABEL_RUN", "OUT_DIR", "Container", "ContainerError", "LaunchSpec", "DockerBackend",
    "Mount", "ToolResult", "Tracker", "docker_client", "inspect_view", "reap",
]

#: How often a waiting runner checks its stop condition, seconds.
POLL_S = 0.5


def docker_client(timeout_s: float = 60.0) -> docker.DockerClient:
    """A docker SDK client for the engine (DOCKER_HOST / the CLI context); every HTTP call to
    the engine is bounded by ``timeout_s`` seconds (default 60).

    Raises:
        ContainerError: the engine does not answer (with the fix).
    """
    try:
        client = docker.from_env(timeout=int(timeout_s))
        client.ping()
    except docker.errors.DockerException as exc:
        raise ContainerError(f"cannot reach the Docker engine: {exc}",
                             fix="start it (systemctl start docker / dockerd) or point "
                                 "DOCKER_HOST at it") from None
    return client


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
        # a run's own network has a name of its own (proofdiff.runtime.networks): shown as
        # what it is, so two runs' containers compare equal on it
        "network_mode": RUN_NETWORK if str(host.get("NetworkMode") or "").startswith(
            NETWORK_PREFIX) else host.get("NetworkMode"),
        "ports": sorted((host.get("PortBindings") or {}).keys()),
    }


def _text(raw: Any) -> str:
    return raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)


class Container:
    """A started container (long-lived: a daemon). Use :meth:`remove` when done."""

    runtime = Runtime.DOCKER

    def __init__(self, runner: DockerBackend, sdk: SdkContainer, spec: LaunchSpec,
                 workdir: Path | None) -> None:
        self.runner, self.sdk, self.spec, self.workdir = runner, sdk, spec, workdir

    @property
    def short_id(self) -> str:
        """12-hex container id."""
        return str(self.sdk.short_id)

    def inspect(self) -> dict[str, Any]:
        """A fresh ``docker inspect`` snapshot (``{}`` when the container is gone)."""
        try:
            self.sdk.reload()
        except docker.errors.NotFound:
            return {}
        return dict(self.sdk.attrs)

    def state(self) -> dict[str, Any]:
        """``State`` of a fresh snapshot: Status, ExitCode, OOMKilled, Error, ..."""
        return dict(self.inspect().get("State") or {})

    def view(self) -> dict[str, Any]:
        """The settings it really runs with (:func:`inspect_view` of a fresh inspect; ``{}``
        when it is gone)."""
        got = self.inspect()
        return inspect_view(got) if got else {}

    def see(self, path: str) -> str:
        """``path``: a container sees its own paths."""
        return path

    def logs(self, tail: int | None = None) -> str:
        """stdout + stderr, the last ``tail`` lines or all ('' when the container is gone)."""
        try:
            return _text(self.sdk.logs(stdout=True, stderr=True, tail=tail or "all"))
        except docker.errors.DockerException as exc:
            return f"(log unavailable: {exc})"

    def host_port(self, name: str) -> int | None:
        """The 127.0.0.1 host port published for ``spec.ports[name]`` (``None`` when none)."""
        if self.spec.network == "host":
            return self.spec.ports.get(name)
        port = self.spec.ports.get(name)
        bindings = (self.sdk.attrs.get("NetworkSettings") or {}).get("Ports") or {}
        for b in bindings.get(f"{port}/tcp") or []:
            if b.get("HostIp") in ("127.0.0.1", "0.0.0.0", ""):
                return int(b["HostPort"])
        return None

    def _attachment(self) -> tuple[str, dict[str, Any]]:
        """(name, settings) of the docker network it has an address on (``('', {})``: none)."""
        nets = (self.inspect().get("NetworkSettings") or {}).get("Networks") or {}
        return next(((k, n) for k, n in nets.items() if n and n.get("IPAddress")), ("", {}))

    def ip(self) -> str:
        """The container's address on its docker network, the one it is attached to ('' when
        it has none)."""
        settings = self.inspect().get("NetworkSettings") or {}
        return str(self._attachment()[1].get("IPAddress") or settings.get("IPAddress") or "")

    def network(self) -> str:
        """The name of the docker network :meth:`ip` is on ('' when it has none)."""
        return self._attachment()[0]

    def exec(self, argv: list[str]) -> tuple[int, str]:
        """Run ``argv`` inside the container as its user; (exit code, output).

        Raises:
            ContainerError: the engine refused (the container is no longer running: a daemon
                that died, say OOM-killed, before a probe looked into it), with its state.
        """
        try:
            res = self.sdk.exec_run(argv, stdout=True, stderr=True)
        except docker.errors.APIError as exc:
            state = self.state()
            raise ContainerError(
                f"could not run {argv[0]!r} in container {self.short_id}: "
                f"{exc.explanation or exc} (Status={state.get('Status')}, ExitCode="
                f"{state.get('ExitCode')}, OOMKilled={state.get('OOMKilled')})",
                fix="see the daemon's liveness record and log tail: nothing can be looked at "
                    "inside a container that is not running", container_id=self.short_id,
                exit_code=state.get("ExitCode"),
                oom_killed=bool(state.get("OOMKilled"))) from None
        return int(res.exit_code), _text(res.output)

    def stop(self, grace_s: float = 10.0) -> None:
        """SIGTERM, then SIGKILL after ``grace_s`` seconds (default 10); gone is fine."""
        try:
            self.sdk.stop(timeout=int(max(grace_s, 0)))
        except docker.errors.NotFound:
            pass

    def remove(self) -> None:
        """Force-remove the container and its temp dir (idempotent)."""
        try:
            self.sdk.remove(force=True, v=True)
        except docker.errors.NotFound:
            pass
        except docker.errors.APIError as exc:
            if "already in progress" not in str(exc):
                raise
        self.runner._drop_dir(self.workdir)
        self.workdir = None


class DockerBackend:
    """Runs containers for one run id on one engine.

    Args:
        client: docker client (default :func:`docker_client`).
        run_id: the ``proofdiff.run`` label.
        tracker: the owner's watchdog (labels every container with its owner and removes temp
            dirs if the owner dies); ``None`` labels the owner ``unwatched``.
    """

    def __init__(self, run_id: str, *, client: docker.DockerClient | None = None,
                 tracker: Tracker | None = None) -> None:
        self.run_id, self.tracker = run_id, tracker
        self.client = client or docker_client()
        #: the run's own network, made when a ``bridge`` container first needs it
        self.network = RunNetwork(self.client, run_id,
                                  tracker.owner if tracker else "unwatched")

    def close(self) -> None:
        """Remove the run's network (its containers are removed by their owners first)."""
        self.network.remove()

    # -- images --------------------------------------------------------------------------
    def image(self, tag: str) -> Any:
        """The local image ``tag``; never pulls.

        Raises:
            ContainerError: it is not present locally (says how to build it).
        """
        try:
            return self.client.images.get(tag)
        except docker.errors.ImageNotFound:
            raise ContainerError(f"image {tag!r} is not present locally",
                                 fix=f"{BUILD_HINT}, or pass an existing tag with --image / "
                                     "--proofdiff-image") from None

    # -- containers ----------------------------------------------------------------------
    def start(self, spec: LaunchSpec) -> Container:
        """Create and start a long-lived container.

        Raises:
            ContainerError: the image is missing, or docker refused to create or start it
                (the engine's words). Nothing is left behind.
        """
        image = self.image(spec.image)
        workdir, kwargs = self._kwargs(spec, (image.attrs.get("Config") or {}).get("Labels")
                                       or {})
        try:
            sdk = self.client.containers.create(**kwargs)
        except docker.errors.DockerException as exc:
            self._drop_dir(workdir)
            raise ContainerError(f"{self._who(spec)}: docker refused to create the container: "
                                 f"{_said(exc)}", role=spec.role, profile=spec.profile) from None
        container = Container(self, sdk, spec, workdir)
        try:
            sdk.start()
        except BaseException as exc:  # KeyboardInterrupt too: never leave it behind
            container.remove()
            if isinstance(exc, docker.errors.DockerException):
                raise ContainerError(f"{self._who(spec)}: container {container.short_id} did not "
                                     f"start: {_said(exc)}", role=spec.role,
                                     profile=spec.profile) from None
            raise
        return container

    def run(self, spec: LaunchSpec, *, timeout_s: float,
            should_stop: Callable[[], bool] | None = None) -> ToolResult:
        """Run a short-lived container to its end and remove it.

        Args:
            spec: what to run. timeout_s: its deadline, seconds; past it the container is
                killed and the result says ``timed_out``.
            should_stop: polled every 0.5 s; when it returns true the container is killed and
                the result says ``stopped`` (the hang guard of a flow).

        Raises:
            ContainerError: the image is missing or docker refused the container.
        """
        container = self.start(spec)
        try:
            code, timed_out, stopped = self._wait(container, timeout_s, should_stop)
            out = {}
            if spec.want_out and container.workdir is not None:
                out_dir = container.workdir / "out"
                out = {p.name: p.read_bytes() for p in sorted(out_dir.iterdir()) if p.is_file()}
            return ToolResult(
                exit_code=code, timed_out=timed_out, stopped=stopped, out_files=out,
                stdout=_text(container.sdk.logs(stdout=True, stderr=False)),
                stderr=_text(container.sdk.logs(stdout=False, stderr=True)),
                container_id=container.short_id)
        finally:
            container.remove()

    def _wait(self, container: Container, timeout_s: float,
              should_stop: Callable[[], bool] | None) -> tuple[int, bool, bool]:
        deadline = time.monotonic() + timeout_s
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or (should_stop is not None and should_stop()):
                try:
                    container.sdk.kill()
                except docker.errors.DockerException:
                    pass  # it exited meanwhile
                return -1, remaining <= 0, remaining > 0
            try:
                res = container.sdk.wait(timeout=max(0.1, min(POLL_S, remaining)))
                return int(res.get("StatusCode", -1)), False, False
            except (requests.exceptions.ReadTimeout, requests.exceptions.ConnectionError):
                continue

    def _who(self, spec: LaunchSpec) -> str:
        return f"profile {spec.profile!r} ({spec.role})" if spec.profile else spec.role

    def _labels(self, spec: LaunchSpec) -> dict[str, str]:
        return {LABEL_RUN: self.run_id, LABEL_OWNER: self.tracker.owner if self.tracker
                else "unwatched", LABEL_ROLE: spec.role, LABEL_PROFILE: spec.profile,
                LABEL_IMAGE: spec.image}

    def _kwargs(self, spec: LaunchSpec, image_labels: Mapping[str, str]
                ) -> tuple[Path | None, dict[str, Any]]:
        network = self.network.name() if spec.network == "bridge" else ""
        return container_settings(spec, labels=self._labels(spec), image_labels=image_labels,
                                  network=network, tracker=self.tracker)

    def _drop_dir(self, workdir: Path | None) -> None:
        if workdir is None:
            return
        shutil.rmtree(workdir, ignore_errors=True)
        if self.tracker is not None:
            self.tracker.untrack_dir(workdir)


def _said(exc: BaseException) -> str:
    return str(getattr(exc, "explanation", None) or exc).strip()


def reap(*, run_id: str | None = None, owner: str | None = None,
         client: docker.DockerClient | None = None) -> list[str]:
    """Force-remove labelled proofdiff containers, then their runs' networks
    (:mod:`proofdiff.runtime.networks`): one run's, one owner's, or every run's when neither is
    given. Returns the removed containers' names, then each network's as ``network NAME``.

    Raises:
        ContainerError: the engine does not answer.
    """
    client = client or docker_client()
    label = (f"{LABEL_OWNER}={owner}" if owner else f"{LABEL_RUN}={run_id}" if run_id
             else LABEL_RUN)
    removed = []
    for c in client.api.containers(all=True, filters={"label": label}):
        try:
            client.api.remove_container(c["Id"], force=True, v=True)
            removed.append(str((c.get("Names") or [c["Id"][:12]])[0]).lstrip("/"))
        except docker.errors.NotFound:
            continue
        except docker.errors.APIError as exc:
            if "already in progress" not in str(exc):
                raise
    return removed + [f"network {n}" for n in reap_networks(client, label)]
