"""Plain result records shared by drivers, the verifier, oracles and reports.

Every record is a frozen dataclass with ``to_json()`` (JSON-ready dict) and ``from_json()``
(its inverse), so results can be cached on disk between pytest-xdist workers and written into
``summary.json`` unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any

__all__ = ["JobResult", "JobStatus", "RunResult", "Verdict"]


class JobStatus(str, Enum):
    """Outcome of one job as the client saw it.

    The first five mirror ``AwaitProofResponse.Status``; ``ERROR`` = a transport error (gRPC
    status other than OK / DEADLINE_EXCEEDED); ``LOST`` = no answer within the job's deadline.
    """

    UNKNOWN = "UNKNOWN"
    COMPLETED = "COMPLETED"
    FAILED = "FAILED"
    CANCELLED = "CANCELLED"
    TIMEOUT = "TIMEOUT"
    ERROR = "ERROR"
    LOST = "LOST"


@dataclass(frozen=True)
class JobResult:
    """One job's result.

    Attributes:
        name: workload job name (``wpost-0``).
        index: position of the job in the run (0-based submission order).
        request_id: the id the client sent.
        job_id: the id the daemon answered with ('' when no answer).
        status: see :class:`JobStatus`.
        proof: proof bytes (``partitions x 192`` for WindowPoSt), b'' when none.
        error: daemon ``error_message`` or the transport error text ('' when none).
        queue_wait_ms, srs_load_ms, synthesis_ms, gpu_compute_ms, total_ms: as reported by the
            daemon (0 when no answer).
        wall_ms: client wall time from the call to its answer, ms.
        started_unix_s: wall clock when the call was made, seconds since the epoch.
        unverifiable: why a COMPLETED job's proof bytes could not be obtained, so it cannot be
            verified ('' = not applicable), e.g. a bench tool that does not save proofs. The
            validity oracle counts such a job as completed but unverified, never as invalid.
    """

    name: str
    index: int
    request_id: str
    status: JobStatus
    job_id: str = ""
    proof: bytes = b""
    error: str = ""
    queue_wait_ms: int = 0
    srs_load_ms: int = 0
    synthesis_ms: int = 0
    gpu_compute_ms: int = 0
    total_ms: int = 0
    wall_ms: float = 0.0
    started_unix_s: float = 0.0
    unverifiable: str = ""

    @property
    def key(self) -> str:
        """``<index>:<name>``: unique within a run even when request ids collide (the key of
        :attr:`RunResult.verdicts` and the verifier item id)."""
        return f"{self.index}:{self.name}"

    def to_json(self) -> dict[str, Any]:
        """JSON-ready dict; ``proof`` as hex, ``status`` as its name."""
        return {
            "name": self.name, "index": self.index, "request_id": self.request_id,
            "job_id": self.job_id, "status": self.status.value, "proof": self.proof.hex(),
            "proof_bytes": len(self.proof), "error": self.error,
            "queue_wait_ms": self.queue_wait_ms, "srs_load_ms": self.srs_load_ms,
            "synthesis_ms": self.synthesis_ms, "gpu_compute_ms": self.gpu_compute_ms,
            "total_ms": self.total_ms, "wall_ms": round(self.wall_ms, 3),
            "started_unix_s": self.started_unix_s, "unverifiable": self.unverifiable,
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> JobResult:
        """Inverse of :meth:`to_json`."""
        return cls(
            name=d["name"], index=int(d["index"]), request_id=d["request_id"],
            job_id=d.get("job_id", ""), status=JobStatus(d["status"]),
            proof=bytes.fromhex(d.get("proof", "")), error=d.get("error", ""),
            queue_wait_ms=int(d.get("queue_wait_ms", 0)), srs_load_ms=int(d.get("srs_load_ms", 0)),
            synthesis_ms=int(d.get("synthesis_ms", 0)),
            gpu_compute_ms=int(d.get("gpu_compute_ms", 0)), total_ms=int(d.get("total_ms", 0)),
            wall_ms=float(d.get("wall_ms", 0.0)), started_unix_s=float(d.get("started_unix_s", 0)),
            unverifiable=d.get("unverifiable", ""),
        )


@dataclass(frozen=True)
class Verdict:
    """The independent verifier's verdict on one proof.

    ``valid`` is true only when the proof length is ``partitions x 192`` and every partition
    verifies; ``partitions`` holds one bool per partition (may be empty when the length was
    wrong); ``error`` is the verifier's text or ``None``.
    """

    id: str
    valid: bool
    partitions: tuple[bool, ...] = ()
    error: str | None = None

    def bad_partitions(self) -> list[int]:
        """Indices of partitions that did not verify."""
        return [i for i, ok in enumerate(self.partitions) if not ok]

    def to_json(self) -> dict[str, Any]:
        """JSON-ready dict (the verifier's own output shape)."""
        return {"id": self.id, "valid": self.valid, "partitions": list(self.partitions),
                "error": self.error}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Verdict:
        """Parse one ``results[]`` entry of the verifier's output (or :meth:`to_json`)."""
        return cls(id=str(d["id"]), valid=bool(d["valid"]),
                   partitions=tuple(bool(x) for x in d.get("partitions") or ()),
                   error=d.get("error"))


@dataclass(frozen=True)
class RunResult:
    """One profile x one workload on one container.

    Attributes:
        profile: profile name. workload: workload name. image: image tag.
        partitions: partitions per proof expected by the workload.
        jobs: per-job results in submission order.
        verdicts: verdict per :attr:`JobResult.key` (only jobs with a proof are verified).
        container_id, address: the daemon container and its gRPC address ('' if none).
        start_to_ready_ms: container start to first GetStatus answer, ms (None if not ready).
        wall_ms: whole workload wall time, ms.
        errors: launch/verify/driver errors as text (empty when none).
        log_tail: last lines of the daemon log.
        inspect: the container's ``docker inspect`` snapshot (may be empty).
    """

    profile: str
    workload: str
    image: str
    partitions: int
    jobs: tuple[JobResult, ...] = ()
    verdicts: dict[str, Verdict] = field(default_factory=dict)
    container_id: str = ""
    address: str = ""
    start_to_ready_ms: float | None = None
    wall_ms: float = 0.0
    errors: tuple[str, ...] = ()
    log_tail: str = ""
    inspect: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """JSON-ready dict."""
        return {
            "profile": self.profile, "workload": self.workload, "image": self.image,
            "partitions": self.partitions, "jobs": [j.to_json() for j in self.jobs],
            "verdicts": {k: v.to_json() for k, v in self.verdicts.items()},
            "container_id": self.container_id, "address": self.address,
            "start_to_ready_ms": self.start_to_ready_ms, "wall_ms": round(self.wall_ms, 3),
            "errors": list(self.errors), "log_tail": self.log_tail, "inspect": self.inspect,
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> RunResult:
        """Inverse of :meth:`to_json`."""
        return cls(
            profile=d["profile"], workload=d["workload"], image=d.get("image", ""),
            partitions=int(d.get("partitions", 0)),
            jobs=tuple(JobResult.from_json(j) for j in d.get("jobs", [])),
            verdicts={k: Verdict.from_json(v) for k, v in d.get("verdicts", {}).items()},
            container_id=d.get("container_id", ""), address=d.get("address", ""),
            start_to_ready_ms=d.get("start_to_ready_ms"), wall_ms=float(d.get("wall_ms", 0)),
            errors=tuple(d.get("errors", [])), log_tail=d.get("log_tail", ""),
            inspect=d.get("inspect") or {},
        )
