"""One run record per (profile, workload, image): the flows sent to the daemon and what the
daemon itself showed (container, readiness, log tail, final state)."""

from __future__ import annotations

from typing import Any

import msgspec

from .jobs import FlowRecord

__all__ = ["DaemonFacts", "RunRecord"]


class DaemonFacts(msgspec.Struct, frozen=True, kw_only=True):
    """What the daemon of a run showed.

    Attributes:
        container_id: short id of the daemon container ('' when none was started).
        address: its gRPC ``127.0.0.1:PORT`` on this host.
        start_to_ready_ms: from the start call to the first ``GetStatus`` answer, ms.
        state: ``docker inspect`` ``State`` fields that matter (``Status``, ``ExitCode``,
            ``OOMKilled``, ``Error``) at the end of the run.
        inspect_view: the settings the container really ran with (env, command, mounts,
            limits, security), from ``docker inspect``.
        log_tail: the last lines of the daemon log.
    """

    container_id: str = ""
    address: str = ""
    start_to_ready_ms: float | None = None
    state: dict[str, Any] = msgspec.field(default_factory=dict)
    inspect_view: dict[str, Any] = msgspec.field(default_factory=dict)
    log_tail: str = ""

    @property
    def alive(self) -> bool:
        """The container was running when the facts were taken (or no state was read)."""
        return self.state.get("Status") in ("running", None)


class RunRecord(msgspec.Struct, frozen=True, kw_only=True):
    """One profile x one workload on one image.

    Attributes:
        profile, workload: names. image: the tag run. image_digest: its id (``sha256:...``).
        partitions: partitions per proof the workload expects.
        flows: the workload flow first (its first job is the warmup), then any other flow sent
            to the same daemon (isolation, timing batches).
        daemon: what the daemon showed (``None`` when it never started).
        errors: why the run could not be carried out (launch, workload, driver), as text.
    """

    profile: str
    workload: str
    image: str
    partitions: int
    image_digest: str = ""
    flows: tuple[FlowRecord, ...] = ()
    daemon: DaemonFacts | None = None
    errors: tuple[str, ...] = ()

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
