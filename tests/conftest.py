"""Shared builders for the harness's tests: real records and real-shaped files (no Docker), and
the built artifacts (image, binaries, params, wpost-2k workload) for the tests that need them."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import docker
import pytest

from harness.records import JobResult, JobStatus, RunResult, Verdict

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def artifacts() -> Any:
    """The build's artifacts (harness.build; `make test` builds them first, cached outside the
    clone, so this is a quick check). Skips, with the reason, where no Docker engine answers."""
    try:
        docker.from_env().ping()
    except Exception as exc:  # noqa: BLE001 - any failure means: no engine to build or test against
        pytest.skip(f"no Docker engine reachable ({exc}); start dockerd to run this tier")
    from harness.build import ensure_artifacts

    return ensure_artifacts(workloads=["wpost-2k"], log=lambda _line: None)


def workload_doc(jobs: int = 4, sectors: int = 4) -> dict[str, Any]:
    """A workload file in the refprover `seal` format (bytes made up, shapes real)."""
    return {
        "schema": 1, "workload": "wpost-2k", "proof_kind": "WINDOW_POST_PARTITION",
        "sector_size": 2048, "registered_proof": 10, "api_version": "1.2.0", "partitions": 2,
        "jobs": [{
            "name": f"wpost-{j}", "miner_id": 1000, "randomness": bytes([j] * 32).hex(),
            "sectors": [{"sector_id": s + 1, "comm_r": bytes([s + 16] * 32).hex()}
                        for s in range(sectors)],
            "vanilla_proofs": [base64.b64encode(bytes([j, s]) * 50).decode()
                               for s in range(sectors)],
        } for j in range(jobs)],
    }


@pytest.fixture
def workload_file(tmp_path: Path) -> Path:
    path = tmp_path / "wpost-2k.json"
    path.write_text(json.dumps(workload_doc()), encoding="utf-8")
    return path


def job(i: int, status: JobStatus = JobStatus.COMPLETED, nbytes: int = 384, rid: str = "",
        error: str = "", wall_ms: float = 1000.0) -> JobResult:
    return JobResult(name=f"wpost-{i}", index=i, request_id=rid or f"id-{i}", job_id=rid or f"id-{i}",
                     status=status, proof=bytes([i]) * nbytes if status is JobStatus.COMPLETED
                     else b"", error=error, queue_wait_ms=5, srs_load_ms=200 if i == 0 else 0,
                     synthesis_ms=40, gpu_compute_ms=700, total_ms=int(wall_ms) - 10,
                     wall_ms=wall_ms, started_unix_s=1_700_000_000.0 + i)


def run(profile: str, jobs: list[JobResult], bad: dict[int, list[bool]] | None = None,
        errors: tuple[str, ...] = ()) -> RunResult:
    """A run whose verifier accepted every proof except ``bad`` (index -> partition verdicts)."""
    bad = bad or {}
    verdicts = {}
    for j in jobs:
        if j.status is JobStatus.COMPLETED and j.proof:
            parts = bad.get(j.index, [True, True])
            verdicts[j.key] = Verdict(id=j.key, valid=all(parts), partitions=tuple(parts),
                                      error=None if all(parts) else "partition did not verify")
    return RunResult(profile=profile, workload="wpost-2k", image="proofdiff/refprover:test",
                     partitions=2, jobs=tuple(jobs), verdicts=verdicts, container_id="abc123",
                     address="127.0.0.1:40000", start_to_ready_ms=180.0, wall_ms=4000.0,
                     errors=errors, log_tail="INFO refprover: ready\n")
