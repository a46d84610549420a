"""What a container is asked to be (:class:`LaunchSpec`), what a short-lived one gives back
(:class:`ToolResult`), the labels every container carries, and the one container error; the
runner that acts on them is :mod:`proofdiff.runtime.docker`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from proofdiff.model.errors import ProofdiffError
from proofdiff.model.choices import Role, Runtime

__all__ = ["BUILD_HINT", "CONTAINER_USER", "LABEL_IMAGE", "LABEL_OWNER", "LABEL_PROFILE",
           "LABEL_ROLE", "LABEL_RUN", "OUT_DIR", "ContainerError", "LaunchSpec",
           "Handle", "Mount", "ToolResult", "Tracker"]

LABEL_RUN, LABEL_OWNER, LABEL_ROLE = "proofdiff.run", "proofdiff.owner", "proofdiff.role"
LABEL_PROFILE, LABEL_IMAGE = "proofdiff.profile", "proofdiff.image"
CONTAINER_USER = "65534:65534"
#: The writable output directory of a short-lived container that asks for one.
OUT_DIR = "/out"
BUILD_HINT = "build it with `make image` or `proofdiff build` (no registry is used; nothing is pulled)"


class ContainerError(ProofdiffError):
    """A container or process could not be created or started, or failed in a way the caller
    must see.

    Attributes:
        role, profile: what it was for. container_id: short id ('' when none).
        exit_code: its exit code when it exited. oom_killed: docker's ``State.OOMKilled``.
        log_tail: the last lines of its log ('' when none); appended to the message once.
        headline: the message without the fix and the log tail. fix: what to do.
    """

    def __init__(self, message: str, *, fix: str = "", role: str = "", profile: str = "",
                 container_id: str = "", exit_code: int | None = None, oom_killed: bool = False,
                 log_tail: str = "") -> None:
        self.role, self.profile, self.container_id = role, profile, container_id
        self.exit_code, self.oom_killed, self.log_tail = exit_code, oom_killed, log_tail
        self.headline = message
        super().__init__(message, fix=fix)
        if log_tail:
            self.args = (f"{self.args[0]}\n--- last log lines ---\n{log_tail.rstrip()}",)


class Tracker(Protocol):
    """What the runner tells the owner's watchdog (:class:`proofdiff.runtime.watchdog.Watchdog`)."""

    owner: str

    def track_dir(self, path: Path) -> None:
        """Remove ``path`` if the owner dies."""
        ...

    def untrack_dir(self, path: Path) -> None:
        """``path`` was removed by its owner."""
        ...

    def track_pgid(self, pgid: int) -> None:
        """Kill process group ``pgid`` if the owner dies."""
        ...

    def untrack_pgid(self, pgid: int) -> None:
        """Process group ``pgid`` ended."""
        ...


class Handle(Protocol):
    """A started daemon, whatever runs it: a container
    (:class:`proofdiff.runtime.docker.Container`), a process
    (:class:`proofdiff.runtime.process.ProcessHandle`) or a daemon proofdiff attached to
    (:class:`proofdiff.runtime.attached.AttachedHandle`)."""

    runtime: Runtime

    @property
    def short_id(self) -> str:
        """How it is named in messages (container id, ``pid-N``, the address)."""
        ...

    def state(self) -> dict[str, Any]:
        """Docker's ``State`` shape: Status, ExitCode, OOMKilled."""
        ...

    def logs(self, tail: int | None = None) -> str:
        """Its log, the last ``tail`` lines or all ('' when there is none)."""
        ...

    def host_port(self, name: str) -> int | None:
        """The 127.0.0.1 port of ``ports[name]`` (``None`` when not published)."""
        ...

    def ip(self) -> str:
        """The address another client on its network reaches it at ('' when none)."""
        ...

    def network(self) -> str:
        """The docker network :meth:`ip` is an address on ('' for a process or an attached
        daemon): a client container joins it to reach that address."""
        ...

    def exec(self, argv: list[str]) -> tuple[int, str]:
        """Run ``argv`` where it sees its files; (exit code, output).

        Raises:
            ContainerError: nothing can be run there (an attached remote daemon).
        """
        ...

    def view(self) -> dict[str, Any]:
        """The settings it really runs with (the shape of
        :func:`proofdiff.runtime.docker.inspect_view`)."""
        ...

    def see(self, path: str) -> str:
        """A path of the profile (a container path) as the daemon sees it: the same in a
        container or an attached daemon, the host path for a process."""
        ...

    def stop(self, grace_s: float = 10.0) -> None:
        """Ask it to stop, then kill it after ``grace_s`` seconds."""
        ...

    def remove(self) -> None:
        """Remove it and what it used (idempotent)."""
        ...


@dataclass(frozen=True)
class Mount:
    """A host path (``source``) bind-mounted at ``container_path``; read-only unless
    ``read_only=False``."""

    source: Path
    container_path: str
    read_only: bool = True


@dataclass(frozen=True)
class LaunchSpec:
    """What to run.

    Attributes:
        image: a local image tag (never pulled). role: ``daemon`` | ``verifier`` | ``bench`` |
            ``preflight`` | ``gpu-probe``. profile: the profile it serves ('' when none).
        entrypoint: replaces the image's (``None`` = the image's). command: its arguments.
        env: environment. mounts: bind mounts. files: container path -> bytes, written to a
            private temp dir and mounted read-only file by file.
        want_out: mount a writable :data:`OUT_DIR` whose files come back in the result.
        network: docker network mode, or ``None`` for no network at all.
        ports: container ports to publish on 127.0.0.1 (random host ports), by name.
        cpuset: the host CPUs it is pinned to (docker ``cpuset_cpus``, a process's affinity;
            () = any).
        cpus, mem_limit: limits (cores; docker syntax). gpus: ``None``, ``'all'``, a count or
            device ids (one ``DeviceRequest``; never a count and ids at once).
        name: container name ('' = docker's).
        runtime: ``docker`` (a container) or ``process`` (a plain process on this host:
            ``entrypoint[0]`` is then the program, container paths and ports are rewritten,
            :mod:`proofdiff.runtime.process`).
    """

    image: str
    role: Role
    profile: str = ""
    entrypoint: tuple[str, ...] | None = None
    command: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    mounts: tuple[Mount, ...] = ()
    files: Mapping[str, bytes] = field(default_factory=dict)
    want_out: bool = False
    network: str | None = None
    ports: Mapping[str, int] = field(default_factory=dict)
    cpus: float | None = None
    cpuset: tuple[int, ...] = ()
    mem_limit: str | None = None
    gpus: str | int | tuple[str, ...] | None = None
    name: str = ""
    runtime: Runtime = Runtime.DOCKER


@dataclass(frozen=True)
class ToolResult:
    """A short-lived container's end: exit code (-1 when killed at its deadline), stdout,
    stderr, whether its deadline passed (``timed_out``) or the caller stopped it
    (``stopped``), the files it wrote under :data:`OUT_DIR`, and its short id."""

    exit_code: int
    stdout: str
    stderr: str
    timed_out: bool = False
    stopped: bool = False
    out_files: dict[str, bytes] = field(default_factory=dict)
    container_id: str = ""

    @property
    def output(self) -> str:
        """stdout then stderr."""
        return self.stdout + self.stderr
