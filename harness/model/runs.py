"""One run record per (profile, workload, image): the flows sent to the daemon and what the
daemon itself showed (container, readiness, log tail, final state)."""

from __future__ import annotations

from typing import Any

import msgspec

from proofdiff.model.choices import Runtime
from proofdiff.model.gpu_telemetry import GpuTelemetry
from proofdiff.model.image import ImageInfo
from proofdiff.model.jobs import FlowRecord

__all__ = ["DaemonFacts", "ResourceUsage", "RunRecord"]


class ResourceUsage(msgspec.Struct, frozen=True, kw_only=True):
    """The daemon's use of its limits, sampled about once a second while it ran
    (``docker stats`` for a container, psutil for a process).

    Attributes:
        mem_limit_bytes: the memory limit (``None`` when none). cpus: the CPU limit in cores.
        peak_mem_bytes: the highest memory use seen (a container: usage less inactive file
            cache; a process: resident memory of it and its children), bytes.
        peak_cpu_cores: the highest CPU use seen, in cores. samples: how many samples.
        enforced_by: ``docker``, ``cgroup v2``, ``prlimit`` or ``none``.
        note: how the limits were applied when not by docker ('' otherwise).
    """

    mem_limit_bytes: int | None = None
    cpus: float | None = None
    peak_mem_bytes: int = 0
    peak_cpu_cores: float = 0.0
    samples: int = 0
    enforced_by: str = "docker"
    note: str = ""


class DaemonFacts(msgspec.Struct, frozen=True, kw_only=True):
    """What the daemon of a run showed.

    Attributes:
        container_id: how the daemon is named: the container's short id, ``pid-N`` for a
            process, ``attached HOST:PORT`` ('' when none was started).
        runtime: how the daemon ran (the profile's ``runtime``).
        address: its gRPC ``127.0.0.1:PORT`` on this host.
        start_to_ready_ms: from the start call to the first ``GetStatus`` answer, ms.
        state: ``docker inspect`` ``State`` fields that matter (``Status``, ``ExitCode``,
            ``OOMKilled``, ``Error``) at the end of the run.
        inspect_view: the settings it really ran with (env, command, mounts, limits,
            security), from ``docker inspect`` or the process's own argv and env.
        log_tail: the last lines of the daemon log.
        status: the daemon's ``GET /status`` JSON at the end of the run (``None`` when it has
            no status listener or did not answer).
        resources: memory and CPU use under the profile's limits (``None`` without limits).
        srs_loaded: the circuits whose SRS the daemon reports loaded (``GetStatus``).
        gpu: NVML readings of the GPUs about once a second while it ran, or why none were
            taken (``None`` for a daemon this run did not start).
        cpuset: the host CPUs it was pinned to when the profiles proved side by side
            (() = not pinned: it ran alone, or on any CPU).
    """

    container_id: str = ""
    runtime: Runtime = Runtime.DOCKER
    address: str = ""
    start_to_ready_ms: float | None = None
    state: dict[str, Any] = msgspec.field(default_factory=dict)
    inspect_view: dict[str, Any] = msgspec.field(default_factory=dict)
    log_tail: str = ""
    status: dict[str, Any] | None = None
    resources: ResourceUsage | None = None
    srs_loaded: tuple[str, ...] = ()
    gpu: GpuTelemetry | None = None
    cpuset: tuple[int, ...] = ()

    @property
    def alive(self) -> bool:
        """The container was running when the facts were taken (or no state was read)."""
        return self.state.get("Status") in ("running", None)


class RunRecord(msgspec.Struct, frozen=True, kw_only=True):
    """One profile x one workload on one image.

    Attributes:
        profile, workload: names. image: what ran the daemon (the image tag and id, or the
            program and its sha256; :class:`~proofdiff.model.image.ImageInfo`).
        partitions: partitions per proof the workload expects (its largest, for a mix).
        job_partitions: per workload job, when a mix's jobs differ ({} otherwise).
        flows: the workload flow first (its first job is the warmup), then any other flow sent
            to the same daemon (isolation, timing batches).
        daemon: what the daemon showed (``None`` when it never started).
        errors: why the run could not be carried out (launch, workload, driver), as text.
    """

    profile: str
    workload: str
    image: ImageInfo
    partitions: int
    job_partitions: dict[str, int] = msgspec.field(default_factory=dict)
    flows: tuple[FlowRecord, ...] = ()
    daemon: DaemonFacts | None = None
    errors: tuple[str, ...] = ()

    def partitions_of(self, job: str) -> int:
        """Partitions per proof of workload job ``job``."""
        return self.job_partitions.get(job, self.partitions)

    def flow(self, name: str) -> FlowRecord | None:
        """The first flow called ``name`` (``None`` when it was not sent)."""
        return next((f for f in self.flows if f.name == name), None)

    def flows_named(self, name: str) -> list[FlowRecord]:
        """Every flow called ``name`` (timing batches), in order."""
        return [f for f in self.flows if f.name == name]

    @property
    def workload_flow(self) -> FlowRecord | None:
        """The workload flow (``None`` when the run never got to send jobs)."""
        return self.flow("workload")
