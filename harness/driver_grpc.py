"""The gRPC driver: runs workload jobs through ``Prove`` at the profile's concurrency.

Drivers are pluggable behind :class:`Driver` (``bench-cli`` comes later): a driver takes a
profile, a workload and a daemon address and returns one :class:`~harness.records.JobResult` per
job, never raising for a job's failure (a failed job is a result, not an exception).
"""

from __future__ import annotations

import concurrent.futures as cf
import time
from collections.abc import Callable
from typing import Protocol

from .client import ClientError, ProverClient
from .job_ids import make_job_id
from .profiles import Profile
from .proto import cuzk_pb2
from .records import JobResult, JobStatus
from .workload import Workload, WorkloadJob, build_request, sector_ids, select_jobs

__all__ = ["Driver", "GrpcDriver", "plan_jobs"]

#: Extra seconds past a job's own deadline before the pool gives up on it (the gRPC deadline
#: normally ends the call first; this bounds a wedged client thread).
POOL_SLACK_S = 30.0


class Driver(Protocol):
    """Runs a workload on one daemon and returns per-job results in submission order."""

    name: str

    def run(self, *, profile: Profile, workload: Workload, address: str,
            log: Callable[[str], None] | None = None) -> list[JobResult]:
        """Run ``profile.jobs`` jobs (default all) of ``workload`` on ``address``."""
        ...


def plan_jobs(profile: Profile, workload: Workload) -> list[tuple[WorkloadJob, str]]:
    """The jobs to run with their request ids under the profile's scheme.

    Curio ids use ``profile.miner_id`` when set, else the job's miner id; the request's own
    ``miner_id`` field always stays the workload's (it is part of the public inputs).
    """
    planned = []
    for job in select_jobs(workload, profile.jobs):
        rid = make_job_id(profile.job_ids, proof_kind=workload.proof_kind,
                          miner_id=profile.miner_id if profile.miner_id is not None
                          else job.miner_id, sector_ids=sector_ids(job))
        planned.append((job, rid))
    return planned


_STATUS = {
    cuzk_pb2.AwaitProofResponse.COMPLETED: JobStatus.COMPLETED,
    cuzk_pb2.AwaitProofResponse.FAILED: JobStatus.FAILED,
    cuzk_pb2.AwaitProofResponse.CANCELLED: JobStatus.CANCELLED,
    cuzk_pb2.AwaitProofResponse.TIMEOUT: JobStatus.TIMEOUT,
}


class GrpcDriver:
    """``Prove`` per job on a thread pool of ``profile.concurrency`` threads, each call with
    ``profile.timeout_s`` as its deadline."""

    name = "grpc"

    def run(self, *, profile: Profile, workload: Workload, address: str,
            log: Callable[[str], None] | None = None) -> list[JobResult]:
        """See :class:`Driver`. Deadline: a job gets ``timeout_s``; the whole run at most
        ``ceil(jobs / concurrency) * timeout_s + 30 s``; late jobs come back ``LOST``."""
        planned = plan_jobs(profile, workload)
        results: list[JobResult | None] = [None] * len(planned)
        with ProverClient(address, default_timeout_s=profile.timeout_s) as client:

            def one(i: int, job: WorkloadJob, rid: str) -> JobResult:
                req = build_request(workload, job, rid)
                started, t0 = time.time(), time.monotonic()
                try:
                    resp = client.prove(req, timeout_s=profile.timeout_s)
                except ClientError as exc:
                    status = JobStatus.LOST if exc.code == "DEADLINE_EXCEEDED" else JobStatus.ERROR
                    return JobResult(name=job.name, index=i, request_id=rid, status=status,
                                     error=str(exc), wall_ms=(time.monotonic() - t0) * 1000,
                                     started_unix_s=started)
                res = JobResult(
                    name=job.name, index=i, request_id=rid, job_id=resp.job_id,
                    status=_STATUS.get(resp.status, JobStatus.UNKNOWN), proof=bytes(resp.proof),
                    error=resp.error_message, queue_wait_ms=resp.queue_wait_ms,
                    srs_load_ms=resp.srs_load_ms, synthesis_ms=resp.synthesis_ms,
                    gpu_compute_ms=resp.gpu_compute_ms, total_ms=resp.total_ms,
                    wall_ms=(time.monotonic() - t0) * 1000, started_unix_s=started)
                if log:
                    log(f"[{profile.name}] {job.name} id={rid} {res.status.value} "
                        f"{res.wall_ms:.0f} ms {len(res.proof)} B")
                return res

            rounds = -(-len(planned) // profile.concurrency)
            overall_s = rounds * profile.timeout_s + POOL_SLACK_S
            pool = cf.ThreadPoolExecutor(max_workers=profile.concurrency,
                                         thread_name_prefix=f"proofdiff-{profile.name}")
            try:
                futs = {pool.submit(one, i, job, rid): i
                        for i, (job, rid) in enumerate(planned)}
                done, _ = cf.wait(futs, timeout=overall_s)
                for fut in done:
                    results[futs[fut]] = fut.result()
            finally:
                pool.shutdown(wait=False, cancel_futures=True)
        out = []
        for i, (job, rid) in enumerate(planned):
            r = results[i]
            out.append(r if r is not None else JobResult(
                name=job.name, index=i, request_id=rid, status=JobStatus.LOST,
                error=f"no answer within the run deadline of {overall_s:.0f} s"))
        return out
