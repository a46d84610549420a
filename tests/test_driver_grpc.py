"""The gRPC client and driver against a real refprover daemon run on the host (127.0.0.1).

Real proofs (2 KiB WindowPoSt, ~3.5 s each on 2 cores), real transport, real deadlines. The
bench- and prod-like daemons mirror profiles/refprover.toml; faults come from REFPROVER_FAULTS.
"""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from harness.client import ClientError, ProverClient
from harness.driver_grpc import GrpcDriver, plan_jobs
from harness.profiles import load_profiles
from harness.records import JobResult, JobStatus
from harness.workload import Workload, load_workload
from tests.conftest import REPO
from tests.hostdaemon import host_daemon

BENCH_CONFIG: dict[str, Any] = {"pipeline": {"enabled": False}, "synthesis": {"partition_workers": 1}}
PROD_CONFIG: dict[str, Any] = {"pipeline": {"enabled": True}, "synthesis": {"partition_workers": 4}}


@pytest.fixture(scope="module")
def binary(artifacts: Any) -> Path:
    path = Path(artifacts.cache_root) / "cargo-target" / "release" / "refprover"
    assert path.is_file(), f"{path} missing: run `python -m harness.build`"
    return path


@pytest.fixture(scope="module")
def workload(artifacts: Any) -> Workload:
    return load_workload(artifacts.workloads["wpost-2k"])


@pytest.fixture(scope="module")
def prod_addr(binary: Path, artifacts: Any, tmp_path_factory: pytest.TempPathFactory
              ) -> Iterator[str]:
    with host_daemon(binary, artifacts.param_cache, tmp_path_factory.mktemp("prod"),
                     PROD_CONFIG) as addr:
        yield addr


def profiles() -> dict:  # type: ignore[type-arg]
    return load_profiles(REPO / "profiles" / "refprover.toml")


def _overlap(results: list[JobResult]) -> bool:
    spans = sorted((r.started_unix_s, r.started_unix_s + r.wall_ms / 1000) for r in results)
    return any(b[0] < a[1] for a, b in zip(spans, spans[1:]))


def test_status_metrics_and_not_found(prod_addr: str) -> None:
    with ProverClient(prod_addr) as c:
        st = c.get_status(timeout_s=5)
        assert {q.proof_kind for q in st.queues} == {"POREP_SEAL_COMMIT", "WINDOW_POST_PARTITION"}
        assert "cuzk_proofs_completed_total" in c.get_metrics(timeout_s=5)
        with pytest.raises(ClientError) as ei:
            c.await_proof("no-such-job", timeout_s=5)
    assert ei.value.code == "NOT_FOUND" and prod_addr in str(ei.value)


def test_unreachable_address_is_unavailable_within_deadline() -> None:
    t0 = time.monotonic()
    with ProverClient("127.0.0.1:1") as c, pytest.raises(ClientError) as ei:
        c.get_status(timeout_s=2)
    assert ei.value.code in ("UNAVAILABLE", "DEADLINE_EXCEEDED")
    assert "is the daemon running" in str(ei.value) or "did not answer" in str(ei.value)
    assert time.monotonic() - t0 < 5


def test_prod_profile_runs_concurrently_with_colliding_curio_ids(
        prod_addr: str, workload: Workload) -> None:
    results = GrpcDriver().run(profile=profiles()["prod"], workload=workload, address=prod_addr)
    assert [r.name for r in results] == ["wpost-0", "wpost-1", "wpost-2", "wpost-3"]
    assert {r.request_id for r in results} == {"wpost-1000-1"}  # same sectors: ids collide
    assert all(r.status is JobStatus.COMPLETED and len(r.proof) == 384 for r in results)
    assert len({r.proof for r in results}) == 4  # each job got its own proof back
    assert _overlap(list(results))  # concurrency 4 really overlapped
    assert all(r.total_ms > 0 and r.wall_ms >= r.total_ms for r in results)


def test_bench_profile_is_sequential_with_uuid_ids(binary: Path, artifacts: Any,
                                                   workload: Workload, tmp_path: Path) -> None:
    bench = replace(profiles()["bench"], jobs=2)
    with host_daemon(binary, artifacts.param_cache, tmp_path, BENCH_CONFIG) as addr:
        results = GrpcDriver().run(profile=bench, workload=workload, address=addr)
    assert len(results) == 2 and len({r.request_id for r in results}) == 2
    assert all(r.status is JobStatus.COMPLETED for r in results)
    assert not _overlap(list(results))


def test_bad_input_comes_back_failed_with_the_daemons_reason(
        prod_addr: str, artifacts: Any, tmp_path: Path) -> None:
    doc = json.loads(Path(artifacts.workloads["wpost-2k"]).read_text())
    doc["jobs"] = doc["jobs"][:1]
    doc["jobs"][0]["vanilla_proofs"][0] = base64.b64encode(b"not a vanilla proof").decode()
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(doc))
    (res,) = GrpcDriver().run(profile=profiles()["bench"], workload=load_workload(bad),
                              address=prod_addr)
    assert res.status is JobStatus.FAILED and res.proof == b""
    assert "vanilla proof 0 is not a bincode FallbackPoStSectorProof" in res.error


def test_a_daemon_that_never_answers_is_lost_within_the_deadline(
        binary: Path, artifacts: Any, workload: Workload, tmp_path: Path) -> None:
    # queue-deadlock: jobs submitted while 2 are unfinished are accepted and never answered.
    stuck = replace(profiles()["prod"], timeout_s=3.0)
    with host_daemon(binary, artifacts.param_cache, tmp_path, PROD_CONFIG,
                     faults="queue-deadlock") as addr:
        t0 = time.monotonic()
        results = GrpcDriver().run(profile=stuck, workload=workload, address=addr)
        elapsed = time.monotonic() - t0
    assert elapsed < 3.0 + 5.0, f"the driver waited {elapsed:.1f} s past a 3 s deadline"
    lost = [r for r in results if r.status is JobStatus.LOST]
    assert len(lost) >= 2 and all("DEADLINE_EXCEEDED" in r.error for r in lost)


def test_plan_jobs_uses_profile_miner_for_curio_ids(workload: Workload) -> None:
    prod = replace(profiles()["prod"], miner_id=42)
    assert {rid for _, rid in plan_jobs(prod, workload)} == {"wpost-42-1"}
    assert {rid for _, rid in plan_jobs(replace(prod, job_ids="fixed"), workload)} == {"proofdiff-fixed"}
