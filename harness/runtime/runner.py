"""The one way proofdiff runs anything: daemons, the verifier, the bench tool, the preflight
probes and the GPU probe are each a :class:`~proofdiff.runtime.spec.LaunchSpec`, run by
:class:`Runner` as a docker container (:mod:`proofdiff.runtime.docker`) or, where the spec
says ``runtime = "process"``, as a plain process on this host (:mod:`proofdiff.runtime.process`).

The Docker engine is contacted on first docker use only, so a run whose profiles are all
process or attach runtimes works on a host without Docker.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from proofdiff.model.choices import Runtime
from proofdiff.runtime.process import ProcessBackend
from proofdiff.runtime.spec import ContainerError, LaunchSpec, Handle, ToolResult, Tracker

if TYPE_CHECKING:  # the docker SDK, a slow import, is imported on first docker use only
    from docker import DockerClient

    from proofdiff.runtime.docker import DockerBackend

__all__ = ["Runner"]


class Runner:
    """Runs specs for one run id.

    Args:
        run_id: the ``proofdiff.run`` label of its containers.
        client: docker client (default: :func:`proofdiff.runtime.docker.docker_client`, made
            on first docker use).
        tracker: the owner's watchdog; ``None`` labels containers ``unwatched``.
        tool_dirs: where a process spec's bare program name is looked for (the refprover
            binaries' dir), before ``PATH``.
    """

    def __init__(self, run_id: str, *, client: DockerClient | None = None,
                 tracker: Tracker | None = None, tool_dirs: Sequence[Path] = ()) -> None:
        self.run_id, self.tracker, self._client = run_id, tracker, client
        self._docker: DockerBackend | None = None
        self.processes = ProcessBackend(tracker=tracker, tool_dirs=tool_dirs)

    @property
    def docker(self) -> DockerBackend:
        """The docker backend, connected on first use.

        Raises:
            ContainerError: the Docker engine does not answer (with the fix).
        """
        if self._docker is None:
            from proofdiff.runtime.docker import DockerBackend, docker_client

            self._docker = DockerBackend(self.run_id, client=self._client or docker_client(),
                                         tracker=self.tracker)
        return self._docker

    @property
    def client(self) -> DockerClient:
        """The docker client (connected on first use; see :attr:`docker`)."""
        return self.docker.client

    def image(self, tag: str) -> Any:
        """The local image ``tag``; never pulls.

        Raises:
            ContainerError: no engine, or the image is not present (says how to build it).
        """
        return self.docker.image(tag)

    def start(self, spec: LaunchSpec) -> Handle:
        """Start a long-lived spec (a daemon).

        Raises:
            ContainerError: it could not be created or started; nothing is left behind.
        """
        if spec.runtime is Runtime.PROCESS:
            return self.processes.start(spec)
        if spec.runtime is not Runtime.DOCKER:
            raise ContainerError(f"unknown runtime {spec.runtime!r}", fix="use docker or process",
                                 role=spec.role, profile=spec.profile)
        return self.docker.start(spec)

    def run(self, spec: LaunchSpec, *, timeout_s: float,
            should_stop: Callable[[], bool] | None = None) -> ToolResult:
        """Run a short-lived spec to its end and remove it.

        Args:
            spec: what to run. timeout_s: its deadline, seconds; past it, it is killed and the
                result says ``timed_out``. should_stop: polled while it runs; when true it is
                killed and the result says ``stopped`` (a flow's hang guard).

        Raises:
            ContainerError: it could not be started.
        """
        if spec.runtime is Runtime.PROCESS:
            return self.processes.run(spec, timeout_s=timeout_s, should_stop=should_stop)
        return self.docker.run(spec, timeout_s=timeout_s, should_stop=should_stop)

    def unique_name(self, *parts: str) -> str:
        """``proofdiff-<run id>-<parts>-<6 hex>`` (docker names must be unique per engine)."""
        return "-".join(p for p in ("proofdiff", self.run_id, *parts, secrets.token_hex(3)) if p)

    def close(self) -> None:
        """Remove every process runtime still running, and the run's docker network where one
        was made (containers are removed by their owners and the watchdog)."""
        self.processes.close()
        if self._docker is not None:
            self._docker.close()
