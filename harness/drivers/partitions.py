"""One job's record from its partitions' records: shared by the gRPC driver (a request per
partition) and the bench tool (a partition per invocation), with nothing of gRPC in it, so
that a module that joins partitions does not import the gRPC stack."""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from proofdiff.model.jobs import DaemonTimings, JobRecord, JobSpec
from proofdiff.model.status import JobStatus

__all__ = ["merge_partitions"]


def merge_partitions(spec: JobSpec, request_id: str, parts: Sequence[JobRecord]) -> JobRecord:
    """One job's record from its partitions' (in partition order): COMPLETED with the joined
    proof when every partition completed, else the first other status with every error;
    queue wait the shortest, prove times summed, the wall from the first send to the last
    answer."""
    if len(parts) == 1:
        return msgspec.structs.replace(parts[0], request_id=request_id)
    bad = next((r for r in parts if r.status is not JobStatus.COMPLETED), None)
    errors = "; ".join(f"partition {k}: {r.error}" for k, r in enumerate(parts) if r.error)
    start = min(r.started_unix_s for r in parts)
    end = max(r.started_unix_s + r.wall_ms / 1000.0 for r in parts)
    return JobRecord(
        index=spec.index, job=spec.job, request_id=request_id, priority=spec.priority,
        await_only=spec.await_only, job_id=",".join(r.job_id for r in parts),
        status=bad.status if bad else JobStatus.COMPLETED,
        proof=b"" if bad else b"".join(r.proof for r in parts), error=errors,
        timings=DaemonTimings(
            queue_wait_ms=min(r.timings.queue_wait_ms for r in parts),
            srs_load_ms=sum(r.timings.srs_load_ms for r in parts),
            synthesis_ms=sum(r.timings.synthesis_ms for r in parts),
            gpu_compute_ms=sum(r.timings.gpu_compute_ms for r in parts),
            total_ms=sum(r.timings.total_ms for r in parts)), wall_ms=(end - start) * 1000.0,
        started_unix_s=start)
