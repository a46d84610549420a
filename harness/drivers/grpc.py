"""The ``grpc`` driver: the cuzk API (DESIGN.md section 3) at the flow's concurrency.

``PROVE`` mode: one ``Prove`` call per job on a pool of ``concurrency`` threads, each started
as a gRPC future with the job deadline and polled every 0.5 s so the hang guard can stop it.
``SUBMIT_AWAIT`` mode: ``SubmitProof`` for every job in index order, then ``AwaitProof`` in slices
(server ``timeout_ms`` = :data:`~harness.drivers.deadlines.SLICE_S`): jobs sharing an id one after another, the others side by
side, and await-only probes last.
"""

from __future__ import annotations

import concurrent.futures as cf
import time
import uuid
from collections.abc import Sequence
from typing import Any

import grpc
import msgspec

from harness.model.jobs import PRIORITIES, JobRecord, JobSpec
from harness.model.status import JobStatus
from harness.model.workload import POREP, Workload, WorkloadJob
from harness.proto import cuzk_pb2
from harness.target.client import ClientError, ProverClient

from .base import Log, Mode
from .deadlines import SLICE_S, SUBMIT_S, Deadlines
from .guard import Guard

__all__ = ["GrpcDriver", "build_request", "record_of"]

_STATUS = {
    cuzk_pb2.AwaitProofResponse.COMPLETED: JobStatus.COMPLETED,
    cuzk_pb2.AwaitProofResponse.FAILED: JobStatus.FAILED,
    cuzk_pb2.AwaitProofResponse.CANCELLED: JobStatus.CANCELLED,
    cuzk_pb2.AwaitProofResponse.TIMEOUT: JobStatus.TIMEOUT,
}


def build_request(job: WorkloadJob, request_id: str,
                  priority: str = "") -> cuzk_pb2.SubmitProofRequest:
    """The ``SubmitProofRequest`` of one job (``priority`` '' = UNSPECIFIED, the daemon's
    default for the kind).

    WindowPoSt: every sector's vanilla proof, the randomness and miner id, ``partition_index``
    0, ``sector_number`` = the first sector. PoRep C2: the C1 envelope as ``vanilla_proof``,
    the sector number and miner id (the prover id derives from it).
    """
    s = job.shape
    common: dict[str, Any] = {
        "request_id": request_id, "proof_kind": s.proof_kind, "sector_size": s.sector_size,
        "registered_proof": s.registered_proof, "priority": PRIORITIES[priority or "UNSPECIFIED"],
        "sector_number": job.sectors[0].sector_id, "miner_id": job.miner_id}
    if s.proof_kind == POREP:
        return cuzk_pb2.SubmitProofRequest(vanilla_proof=job.c1, **common)
    return cuzk_pb2.SubmitProofRequest(vanilla_proofs=list(job.vanilla_proofs),
                                       randomness=job.randomness, partition_index=0, **common)


def record_of(spec: JobSpec, rid: str, resp: Any, t0: float, started: float) -> JobRecord:
    """The record of a daemon's ``AwaitProofResponse`` for ``spec`` (sent as ``rid``, with the
    spec's priority)."""
    return JobRecord(
        index=spec.index, job=spec.job, request_id=rid, priority=spec.priority,
        await_only=spec.await_only, job_id=resp.job_id,
        status=_STATUS.get(resp.status, JobStatus.UNKNOWN), proof=bytes(resp.proof),
        error=resp.error_message, queue_wait_ms=resp.queue_wait_ms,
        srs_load_ms=resp.srs_load_ms, synthesis_ms=resp.synthesis_ms,
        gpu_compute_ms=resp.gpu_compute_ms, total_ms=resp.total_ms,
        wall_ms=(time.monotonic() - t0) * 1000.0, started_unix_s=started)


def _failed(spec: JobSpec, rid: str, status: JobStatus, error: str, t0: float,
            started: float) -> JobRecord:
    return JobRecord(index=spec.index, job=spec.job, request_id=rid, priority=spec.priority,
                     await_only=spec.await_only, status=status, error=error,
                     wall_ms=(time.monotonic() - t0) * 1000.0, started_unix_s=started)


class GrpcDriver:
    """Sends jobs to ``address`` over the cuzk gRPC API (see the module docstring)."""

    name = "grpc"
    chooses_ids = True
    modes = frozenset({Mode.PROVE, Mode.SUBMIT_AWAIT})

    def __init__(self, address: str) -> None:
        self.address = address

    def send(self, specs: Sequence[JobSpec], *, workload: Workload, concurrency: int, mode: Mode,
             guard: Guard, deadlines: Deadlines, log: Log) -> list[JobRecord]:
        """See :class:`~harness.drivers.base.Driver`. A spec without a priority gets its
        workload job's."""
        specs = [s if s.priority else msgspec.structs.replace(s, priority=workload.job(s.job).priority)
                 for s in specs]
        with ProverClient(self.address, default_timeout_s=deadlines.job_s) as client:
            if mode is Mode.PROVE:
                return self._prove(client, specs, workload, concurrency, guard, deadlines, log)
            return self._submit_await(client, specs, workload, guard, deadlines)

    # -- Prove per job ---------------------------------------------------------------------
    def _prove(self, client: ProverClient, specs: Sequence[JobSpec], workload: Workload,
               concurrency: int, guard: Guard, deadlines: Deadlines, log: Log) -> list[JobRecord]:
        def one(spec: JobSpec) -> JobRecord:
            rid = spec.request_id or str(uuid.uuid4())
            started, t0 = time.time(), time.monotonic()
            req = build_request(workload.job(spec.job), rid, spec.priority)
            fut = client.prove_future(req, timeout_s=deadlines.job_s)
            try:
                while True:
                    try:
                        resp = fut.result(timeout=0.5).result  # ProveResponse.result
                        break
                    except grpc.FutureTimeoutError:
                        if guard.expired():
                            fut.cancel()
                            return _failed(spec, rid, guard.given_up(), guard.reason, t0, started)
                    except grpc.RpcError as exc:
                        err = client.rpc_error("Prove", exc)
                        status = (JobStatus.LOST if err.code == "DEADLINE_EXCEEDED"
                                  else JobStatus.ERROR)
                        return _failed(spec, rid, status, str(err), t0, started)
            finally:
                guard.done()
            rec = record_of(spec, rid, resp, t0, started)
            log(f"{spec.job} id={rid} {rec.status.value} {rec.wall_ms:.0f} ms {len(rec.proof)} B")
            return rec

        with cf.ThreadPoolExecutor(max(1, concurrency), thread_name_prefix="grpc-prove") as pool:
            return list(pool.map(one, specs))

    # -- SubmitProof, then AwaitProof --------------------------------------------------------
    def _await(self, client: ProverClient, spec: JobSpec, rid: str, guard: Guard,
               deadlines: Deadlines, t0: float, started: float) -> JobRecord:
        while not guard.expired():
            try:
                resp = client.await_proof(rid, timeout_s=SLICE_S + 10.0,
                                          server_timeout_ms=int(SLICE_S * 1000))
            except ClientError as exc:
                if exc.code == "NOT_FOUND":
                    return _failed(spec, rid, JobStatus.LOST,
                                   f"AwaitProof({rid!r}): NOT_FOUND: {exc.details}", t0, started)
                if exc.code == "DEADLINE_EXCEEDED":
                    continue  # a daemon that ignores timeout_ms: the guard bounds the wait
                return _failed(spec, rid, JobStatus.ERROR, str(exc), t0, started)
            if resp.status == cuzk_pb2.AwaitProofResponse.TIMEOUT and not spec.await_only:
                continue  # the slice ended; the job is still running
            return record_of(spec, rid, resp, t0, started)
        return _failed(spec, rid, guard.given_up(), f"no answer for id {rid!r}: {guard.reason}",
                       t0, started)

    def _submit_await(self, client: ProverClient, specs: Sequence[JobSpec], workload: Workload,
                      guard: Guard, deadlines: Deadlines) -> list[JobRecord]:
        real = [s for s in specs if not s.await_only]
        rids = {s.index: s.request_id or str(uuid.uuid4()) for s in specs}
        sent: dict[int, tuple[float, float]] = {}  # index -> (wall clock, monotonic) at submit
        refused: dict[int, JobRecord] = {}
        for spec in real:  # in index order, a few ms apart: the last one is submitted last
            sent[spec.index] = (time.time(), time.monotonic())
            req = build_request(workload.job(spec.job), rids[spec.index], spec.priority)
            try:
                client.submit(req, timeout_s=SUBMIT_S)
            except ClientError as exc:
                guard.done()
                refused[spec.index] = _failed(spec, rids[spec.index], JobStatus.ERROR,
                                              f"SubmitProof failed: {exc}", sent[spec.index][1],
                                              sent[spec.index][0])
        groups: dict[str, list[JobSpec]] = {}
        for s in real:
            if s.index not in refused:
                groups.setdefault(rids[s.index], []).append(s)

        def answers(group: list[JobSpec]) -> list[JobRecord]:
            out = []
            for s in group:  # one after the other: cuzk hands out one unclaimed job per call
                started, t0 = sent[s.index]
                out.append(self._await(client, s, rids[s.index], guard, deadlines, t0, started))
                guard.done()
            return out

        records = list(refused.values())
        with cf.ThreadPoolExecutor(max(1, len(groups)), thread_name_prefix="grpc-await") as pool:
            for got in pool.map(answers, groups.values()):
                records += got
        for s in (s for s in specs if s.await_only and not guard.tripped):
            records.append(self._await(client, s, rids[s.index], guard, deadlines, time.monotonic(),
                                       time.time()))
        return records
