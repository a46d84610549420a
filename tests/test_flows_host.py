"""The isolation flows, the hang guard and the timing sampler against real refprover daemons run
on the host (tests/hostdaemon.py): real proofs, real deadlines, faults via REFPROVER_FAULTS.
About a minute on 2 cores."""

from __future__ import annotations

import statistics
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.driver_isolation import run_isolation
from harness.records import JobStatus
from harness.timing_sampler import in_progress, run_batch
from harness.workload import Workload, load_workload
from tests.hostdaemon import host_daemon

PROD_CONFIG: dict[str, Any] = {"pipeline": {"enabled": True},
                               "synthesis": {"partition_workers": 4}}


@pytest.fixture(scope="module")
def binary(artifacts: Any) -> Path:
    return Path(artifacts.cache_root) / "cargo-target" / "release" / "refprover"


@pytest.fixture(scope="module")
def workload(artifacts: Any) -> Workload:
    return load_workload(artifacts.workloads["wpost-2k"])


@pytest.fixture
def daemon(binary: Path, artifacts: Any, tmp_path: Path) -> Iterator[Any]:
    def start(faults: str = "") -> Any:
        return host_daemon(binary, artifacts.param_cache, tmp_path, PROD_CONFIG, faults)

    yield start


def test_flows_on_a_clean_pipelined_daemon(daemon: Any, workload: Workload) -> None:
    with daemon() as addr:
        run = run_isolation(addr, workload, profile="prod", timeout_s=120, stall_s=10)
    assert [j.key for j in run.jobs] == ["burst:0", "burst:1", "burst:2", "burst:3", "reuse:0"]
    assert all(j.status is JobStatus.COMPLETED and len(j.proof) == 384 for j in run.jobs), run
    assert run.extra_await == "NOT_FOUND" and not run.stuck_ids and not run.stall
    assert len({j.proof for j in run.jobs}) == 5
    assert run.jobs[0].request_id == run.jobs[1].request_id == run.dup_id
    assert run.jobs[4].request_id == run.jobs[2].request_id and run.jobs[4].input == "wpost-3"


def test_queue_deadlock_names_the_stuck_ids_within_the_stall_deadline(
        daemon: Any, workload: Workload) -> None:
    with daemon("queue-deadlock") as addr:
        t0 = time.monotonic()
        run = run_isolation(addr, workload, profile="prod", timeout_s=300, stall_s=3)
        took = time.monotonic() - t0
    # four submitted together: the first two accepted and proved, the other two parked (which
    # two depends on arrival order); the parked ones are named, nothing waits for the deadline
    stuck = [j for j in run.jobs if j.status is JobStatus.LOST]
    assert len(stuck) == 2 and set(run.stuck_ids) == {j.request_id for j in stuck}, run
    assert all(j.error.startswith("stuck: no answer for id") for j in stuck)
    assert sum(j.status is JobStatus.COMPLETED for j in run.jobs) == 2
    assert "nothing pending or in progress" in run.stall
    assert took < 60, f"the guard took {took:.0f} s (deadline 300 s): it did not trip early"


def test_sampler_sees_one_job_at_a_time_under_serialize_pipeline(
        daemon: Any, workload: Workload) -> None:
    with daemon("serialize-pipeline") as addr:
        serial = run_batch(addr, workload, side="prod", rnd=0, n=3, concurrency=3, timeout_s=120)
    with daemon() as addr:
        clean = run_batch(addr, workload, side="prod", rnd=0, n=3, concurrency=3, timeout_s=120)
    assert serial.ok and clean.ok, (serial, clean)

    def conc(b: Any) -> list[float]:
        return in_progress([(j.start_s, j.queue_wait_ms, j.total_ms) for j in b.jobs])

    assert max(conc(serial)) < 1.1, conc(serial)
    assert statistics.median(conc(clean)) > 1.3, conc(clean)
    assert serial.cost_ms > 0 and len(serial.jobs) == 3
