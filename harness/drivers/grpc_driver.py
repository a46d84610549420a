"""The ``grpc`` driver: the cuzk API (docs/design/cuzk-interface.md) at the flow's concurrency.

``PROVE`` mode: one ``Prove`` call per job on a pool of ``concurrency`` threads, each started
as a gRPC future with the job deadline and polled every 0.5 s so the hang guard can stop it.
``SUBMIT_AWAIT`` mode: ``SubmitProof`` for every job in index order, then ``AwaitProof`` in
slices (server ``timeout_ms`` = :data:`~proofdiff.drivers.deadlines.SLICE_S`): jobs sharing an id
one after another, the others side by side, and await-only probes last (each of the ids its job
went out as: every partition's, where the job is sent per partition).

A WindowPoSt job of several partitions is one request to refprover, which proves them all. A
real cuzk proves one partition per request (filecoin-proofs'
``generate_single_window_post_with_vanilla``: "can only prove a single partition"), as curio
sends it (``lib/ffi/cuzk_funcs.go`` ``WindowPoStCuzk``, curio e0294b0f): with
``per_partition`` the job goes out as one request per partition, its sectors' vanilla proofs
and ``partition_index``, ids ``<id>-p<k>``; the job's record joins the answers in partition
order (the proof is their concatenation, what the verifier checks).
"""

from __future__ import annotations

import concurrent.futures as cf
import threading
import time
import uuid
from collections.abc import Sequence
from typing import Any

import grpc
import msgspec

from proofdiff.model.jobs import DaemonTimings, JobRecord, JobSpec, PRIORITIES
from proofdiff.model.status import JobStatus
from proofdiff.model.workload import POREP, Workload, WorkloadJob
from proofdiff.proto import cuzk_pb2
from proofdiff.drivers.cuzk_client import ClientError, ProverClient
from proofdiff.drivers.partitions import merge_partitions

from proofdiff.drivers.protocol import Log, Mode
from proofdiff.drivers.deadlines import SLICE_S, SUBMIT_S, Deadlines
from proofdiff.drivers.hang_guard import INTERRUPTED, Guard
from proofdiff.drivers.job_ids import partition_request_id

__all__ = ["GrpcDriver", "build_request", "merge_partitions", "record_of", "requests_for"]

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


def requests_for(job: WorkloadJob, request_id: str, priority: str = "", *,
                 per_partition: bool = False) -> list[tuple[str, cuzk_pb2.SubmitProofRequest]]:
    """The requests of one job, with their ids: the job's one request, or (``per_partition``,
    a WindowPoSt job of several partitions) one per partition
    (:func:`~proofdiff.drivers.job_ids.partition_request_id`)."""
    if not per_partition or job.shape.proof_kind == POREP or job.shape.partitions <= 1:
        return [(request_id, build_request(job, request_id, priority))]
    out = []
    for k, (sectors, vanilla) in enumerate(job.partition_inputs()):
        rid = partition_request_id(request_id, k)
        req = build_request(job, rid, priority)
        del req.vanilla_proofs[:]
        req.vanilla_proofs.extend(vanilla)
        req.sector_number, req.partition_index = sectors[0].sector_id, k
        out.append((rid, req))
    return out


def record_of(spec: JobSpec, rid: str, resp: Any, t0: float, started: float) -> JobRecord:
    """The record of a daemon's ``AwaitProofResponse`` for ``spec`` (sent as ``rid``, with the
    spec's priority)."""
    return JobRecord(
        index=spec.index, job=spec.job, request_id=rid, priority=spec.priority,
        await_only=spec.await_only, job_id=resp.job_id,
        status=_STATUS.get(resp.status, JobStatus.UNKNOWN), proof=bytes(resp.proof),
        error=resp.error_message, timings=DaemonTimings(
            queue_wait_ms=resp.queue_wait_ms, srs_load_ms=resp.srs_load_ms,
            synthesis_ms=resp.synthesis_ms, gpu_compute_ms=resp.gpu_compute_ms,
            total_ms=resp.total_ms),
        wall_ms=(time.monotonic() - t0) * 1000.0, started_unix_s=started)


def _failed(spec: JobSpec, rid: str, status: JobStatus, error: str, t0: float,
            started: float) -> JobRecord:
    return JobRecord(index=spec.index, job=spec.job, request_id=rid, priority=spec.priority,
                     await_only=spec.await_only, status=status, error=error,
                     wall_ms=(time.monotonic() - t0) * 1000.0, started_unix_s=started)


class GrpcDriver:
    """Sends jobs to ``address`` over the cuzk gRPC API (see the module docstring).

    Args:
        address: ``HOST:PORT``. per_partition: send a WindowPoSt job as one request per
            partition (a real cuzk); default one request per job (refprover).
    """

    name = "grpc"
    chooses_ids = True
    modes = frozenset({Mode.PROVE, Mode.SUBMIT_AWAIT})

    def __init__(self, address: str, *, per_partition: bool = False) -> None:
        self.address, self.per_partition = address, per_partition

    def send(self, specs: Sequence[JobSpec], *, workload: Workload, concurrency: int, mode: Mode,
             guard: Guard, deadlines: Deadlines, log: Log) -> list[JobRecord]:
        """See :class:`~proofdiff.drivers.protocol.Driver`. A spec without a priority gets its
        workload job's."""
        specs = [s if s.priority else msgspec.structs.replace(s, priority=workload.job(s.job).priority)
                 for s in specs]
        with ProverClient(self.address, default_timeout_s=deadlines.job_s) as client:
            if mode is Mode.PROVE:
                return self._prove(client, specs, workload, concurrency, guard, deadlines, log)
            return self._submit_await(client, specs, workload, guard, deadlines)

    def _requests(self, workload: Workload, spec: JobSpec,
                  rid: str) -> list[tuple[str, cuzk_pb2.SubmitProofRequest]]:
        return requests_for(workload.job(spec.job), rid, spec.priority,
                            per_partition=self.per_partition)

    # -- Prove per job ---------------------------------------------------------------------
    def _prove(self, client: ProverClient, specs: Sequence[JobSpec], workload: Workload,
               concurrency: int, guard: Guard, deadlines: Deadlines, log: Log) -> list[JobRecord]:
        def call(spec: JobSpec, rid: str, req: cuzk_pb2.SubmitProofRequest) -> JobRecord:
            started, t0 = time.time(), time.monotonic()
            fut = client.prove_future(req, timeout_s=deadlines.job_s)
            while True:
                try:
                    resp = fut.result(timeout=0.5).result  # ProveResponse.result
                    rec = record_of(spec, rid, resp, t0, started)
                    guard.answered(rec)
                    return rec
                except grpc.FutureTimeoutError:
                    if guard.expired():
                        fut.cancel()
                        return _failed(spec, rid, guard.given_up(), guard.reason, t0, started)
                except grpc.RpcError as exc:
                    err = client.rpc_error("Prove", exc, elapsed_s=time.monotonic() - t0,
                                           timeout_s=deadlines.job_s)
                    status = JobStatus.LOST if err.code == "DEADLINE_EXCEEDED" else JobStatus.ERROR
                    return _failed(spec, rid, status, str(err), t0, started)

        def one(spec: JobSpec) -> JobRecord:
            rid = spec.request_id or str(uuid.uuid4())
            parts = []
            try:
                for sub_id, req in self._requests(workload, spec, rid):
                    parts.append(call(spec, sub_id, req))
                    if parts[-1].status is not JobStatus.COMPLETED:
                        break  # a failed partition fails the job
            finally:
                guard.done()
            rec = merge_partitions(spec, rid, parts)
            log(f"{spec.job} id={rid} {rec.status.value} {rec.wall_ms:.0f} ms {len(rec.proof)} B")
            return rec

        with cf.ThreadPoolExecutor(max(1, concurrency), thread_name_prefix="grpc-prove") as pool:
            try:
                return list(pool.map(one, specs))
            except BaseException:  # Ctrl-C: the waits give up now, not at the deadline
                guard.trip(INTERRUPTED, stall=False)
                raise

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
        subs = {s.index: self._requests(workload, s, rids[s.index]) for s in real}
        left = {i: len(v) for i, v in subs.items()}  # a job is done when its last part is
        sent: dict[tuple[int, int], tuple[float, float]] = {}  # (index, part) -> (wall, mono)
        got: dict[int, dict[int, JobRecord]] = {s.index: {} for s in real}
        lock = threading.Lock()

        def finished(spec: JobSpec, k: int, rec: JobRecord) -> None:
            guard.answered(rec)
            with lock:
                got[spec.index][k] = rec
                left[spec.index] -= 1
                if left[spec.index] == 0:
                    guard.done()

        groups: dict[str, list[tuple[JobSpec, int]]] = {}
        for spec in real:  # in index order, a few ms apart: the last one is submitted last
            for k, (sub_id, req) in enumerate(subs[spec.index]):
                sent[spec.index, k] = (time.time(), time.monotonic())
                try:
                    client.submit(req, timeout_s=SUBMIT_S)
                except ClientError as exc:
                    finished(spec, k, _failed(spec, sub_id, JobStatus.ERROR,
                                              f"SubmitProof failed: {exc}",
                                              sent[spec.index, k][1], sent[spec.index, k][0]))
                    continue
                groups.setdefault(sub_id, []).append((spec, k))

        def answers(group: list[tuple[JobSpec, int]]) -> None:
            for spec, k in group:  # one after the other: cuzk hands out one unclaimed job per call
                started, t0 = sent[spec.index, k]
                sub_id = subs[spec.index][k][0]
                finished(spec, k, self._await(client, spec, sub_id, guard, deadlines, t0, started))

        with cf.ThreadPoolExecutor(max(1, len(groups)), thread_name_prefix="grpc-await") as pool:
            try:
                list(pool.map(answers, groups.values()))
            except BaseException:  # Ctrl-C: the waits give up now, not at the deadline
                guard.trip(INTERRUPTED, stall=False)
                raise
        records = [merge_partitions(s, rids[s.index], [got[s.index][k]
                                                       for k in sorted(got[s.index])])
                   for s in real]
        for s in (s for s in specs if s.await_only and not guard.tripped):
            # the ids the job was sent as: one per partition where it went out per partition,
            # so the probe asks about ids the daemon holds, never one it was not sent
            ids = [sub for sub, _req in self._requests(workload, s, rids[s.index])]
            records.append(merge_partitions(s, rids[s.index], [
                self._await(client, s, sub, guard, deadlines, time.monotonic(), time.time())
                for sub in ids]))
        return records
