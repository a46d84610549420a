"""The gRPC client and driver against a real gRPC server on 127.0.0.1:0.

The refprover image cannot run in this tier (no Docker image is built here), so the server is a
small in-process ProvingEngine that answers like refprover does (job_id == request_id, proof of
partitions x 192 bytes, FAILED as gRPC OK). The transport, deadlines and thread pool are real.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from concurrent import futures
from dataclasses import replace
from pathlib import Path

import grpc
import pytest

from harness.client import ClientError, ProverClient
from harness.driver_grpc import GrpcDriver, plan_jobs
from harness.profiles import load_profiles
from harness.proto import cuzk_pb2, cuzk_pb2_grpc
from harness.records import JobStatus
from harness.workload import load_workload
from tests.conftest import REPO


class Engine(cuzk_pb2_grpc.ProvingEngineServicer):
    def __init__(self, delay_s: float = 0.05, fail_every: int = 0) -> None:
        self.delay_s, self.fail_every = delay_s, fail_every
        self.lock, self.seen, self.in_flight, self.max_in_flight = threading.Lock(), [], 0, 0

    def Prove(self, request, context):  # type: ignore[no-untyped-def]
        sub = request.submit
        with self.lock:
            self.seen.append(sub.request_id)
            n = len(self.seen)
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        time.sleep(self.delay_s)
        with self.lock:
            self.in_flight -= 1
        res = cuzk_pb2.AwaitProofResponse(job_id=sub.request_id, total_ms=int(self.delay_s * 1000),
                                          gpu_compute_ms=int(self.delay_s * 900))
        if self.fail_every and n % self.fail_every == 0:
            res.status = cuzk_pb2.AwaitProofResponse.FAILED
            res.error_message = "partition 1 already inserted"
        else:
            res.status = cuzk_pb2.AwaitProofResponse.COMPLETED
            res.proof = bytes([sub.randomness[0]]) * 384
        return cuzk_pb2.ProveResponse(result=res)

    def GetStatus(self, request, context):  # type: ignore[no-untyped-def]
        return cuzk_pb2.GetStatusResponse(uptime_seconds=1)


def serve(engine: Engine) -> tuple[grpc.Server, str]:
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
    cuzk_pb2_grpc.add_ProvingEngineServicer_to_server(engine, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    return server, f"127.0.0.1:{port}"


@pytest.fixture
def engine() -> Iterator[tuple[Engine, str]]:
    eng = Engine()
    server, addr = serve(eng)
    yield eng, addr
    server.stop(grace=None)


def profiles() -> dict:  # type: ignore[type-arg]
    return load_profiles(REPO / "profiles" / "refprover.toml")


def test_get_status_and_unimplemented(engine: tuple[Engine, str]) -> None:
    _, addr = engine
    with ProverClient(addr) as c:
        assert c.get_status(timeout_s=5).uptime_seconds == 1
        with pytest.raises(ClientError) as ei:
            c.get_metrics(timeout_s=5)
    assert ei.value.code == "UNIMPLEMENTED" and addr in str(ei.value)


def test_unreachable_address_is_unavailable_within_deadline() -> None:
    t0 = time.monotonic()
    with ProverClient("127.0.0.1:1") as c, pytest.raises(ClientError) as ei:
        c.get_status(timeout_s=2)
    assert ei.value.code in ("UNAVAILABLE", "DEADLINE_EXCEEDED")
    assert "is the daemon running" in str(ei.value) or "did not answer" in str(ei.value)
    assert time.monotonic() - t0 < 5


def test_prod_profile_runs_concurrently_with_colliding_curio_ids(
        engine: tuple[Engine, str], workload_file: Path) -> None:
    eng, addr = engine
    wl = load_workload(workload_file)
    prod = profiles()["prod"]
    results = GrpcDriver().run(profile=prod, workload=wl, address=addr)
    assert [r.name for r in results] == ["wpost-0", "wpost-1", "wpost-2", "wpost-3"]
    assert {r.request_id for r in results} == {"wpost-1000-1"}  # same sectors: ids collide
    assert all(r.status is JobStatus.COMPLETED and len(r.proof) == 384 for r in results)
    assert [r.proof[0] for r in results] == [0, 1, 2, 3]  # each job got its own answer
    assert eng.max_in_flight > 1  # concurrency 4 really overlapped
    assert all(r.wall_ms >= 40 and r.total_ms == 50 for r in results)


def test_bench_profile_is_sequential_with_uuid_ids(engine: tuple[Engine, str],
                                                   workload_file: Path) -> None:
    eng, addr = engine
    wl = load_workload(workload_file)
    bench = replace(profiles()["bench"], jobs=6)
    results = GrpcDriver().run(profile=bench, workload=wl, address=addr)
    assert len(results) == 6 and len({r.request_id for r in results}) == 6
    assert eng.max_in_flight == 1


def test_failed_jobs_and_deadlines(workload_file: Path) -> None:
    eng = Engine(delay_s=0.05, fail_every=2)
    server, addr = serve(eng)
    try:
        wl = load_workload(workload_file)
        res = GrpcDriver().run(profile=profiles()["bench"], workload=wl, address=addr)
        assert [r.status for r in res] == [JobStatus.COMPLETED, JobStatus.FAILED] * 2
        assert res[1].error == "partition 1 already inserted" and res[1].proof == b""
        eng.delay_s = 1.0
        slow = replace(profiles()["bench"], timeout_s=0.2, jobs=1)
        (lost,) = GrpcDriver().run(profile=slow, workload=wl, address=addr)
        assert lost.status is JobStatus.LOST and "DEADLINE_EXCEEDED" in lost.error
    finally:
        server.stop(grace=None)


def test_plan_jobs_uses_profile_miner_for_curio_ids(workload_file: Path) -> None:
    wl = load_workload(workload_file)
    prod = replace(profiles()["prod"], miner_id=42)
    assert {rid for _, rid in plan_jobs(prod, wl)} == {"wpost-42-1"}
    assert {rid for _, rid in plan_jobs(replace(prod, job_ids="fixed"), wl)} == {"proofdiff-fixed"}
