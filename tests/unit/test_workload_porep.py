"""PoRep C2 workloads (``seal porep`` format): loading, requests, verifier items, bench input,
curio ids. Real-shaped files: the C1 envelope is the cuzk envelope, Phase1Out opaque bytes."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest

from proofdiff.drivers.job_ids import make_job_id
from proofdiff.proto import cuzk_pb2
from proofdiff.model.workload import (WorkloadError, is_slow_workload, load_workload, sector_ids)
from proofdiff.drivers.grpc_driver import build_request
from proofdiff.verify.tool_verifier import verify_item
from proofdiff.drivers.bench_inputs import bench_input


def porep_doc(partitions: int = 2, sectors: int = 2) -> dict[str, Any]:
    """A workload in the `seal porep` format (hashes made up, shapes real)."""
    def env(s: int) -> str:
        phase1 = base64.b64encode(json.dumps({"vanilla_proofs": [[s]]}).encode()).decode()
        return json.dumps({"SectorNum": s, "Phase1Out": phase1, "SectorSize": 2048})
    return {
        "schema": 1, "workload": "porep-2k-2p" if partitions == 2 else "porep-2k",
        "proof_kind": "POREP_SEAL_COMMIT", "sector_size": 2048, "registered_proof": 5,
        "api_version": "1.2.0", "partitions": partitions, "seed": 1,
        "jobs": [{"name": f"porep-s{s}", "miner_id": 1000, "sector_number": s,
                  "comm_r": bytes([s] * 32).hex(), "comm_d": bytes([s + 8] * 32).hex(),
                  "ticket": bytes([s + 16] * 32).hex(), "seed": bytes([s + 24] * 32).hex(),
                  "c1": env(s)} for s in range(1, sectors + 1)],
    }


@pytest.fixture
def porep_file(tmp_path: Path) -> Path:
    path = tmp_path / "porep-2k-2p.json"
    path.write_text(json.dumps(porep_doc()), encoding="utf-8")
    return path


def test_load_and_build_the_c2_request(porep_file: Path) -> None:
    wl = load_workload(porep_file)
    assert (wl.name, wl.proof_kind, wl.partitions, wl.jobs[0].shape.proof_bytes) == (
        "porep-2k-2p", "POREP_SEAL_COMMIT", 2, 384)
    job = wl.jobs[1]
    req = build_request(job, "porep-1000-2")
    assert req.proof_kind == cuzk_pb2.POREP_SEAL_COMMIT
    assert (req.request_id, req.sector_size, req.registered_proof, req.sector_number,
            req.miner_id) == ("porep-1000-2", 2048, 5, 2, 1000)
    envelope = json.loads(req.vanilla_proof)
    assert set(envelope) == {"SectorNum", "Phase1Out", "SectorSize"} and envelope["SectorNum"] == 2
    assert not req.vanilla_proofs and not req.randomness


def test_verifier_item_carries_every_public_input(porep_file: Path) -> None:
    wl = load_workload(porep_file)
    item = verify_item(wl.jobs[0], "0:porep-s1", b"\x07" * 384)
    assert item == {
        "id": "0:porep-s1", "proof_kind": "POREP_SEAL_COMMIT", "sector_size": 2048,
        "miner_id": 1000, "sector_number": 1, "comm_r": bytes([1] * 32).hex(),
        "comm_d": bytes([9] * 32).hex(), "ticket": bytes([17] * 32).hex(),
        "seed": bytes([25] * 32).hex(), "partitions": 2, "registered_proof": 5,
        "proof": "07" * 384}


def test_curio_ids_are_porep_miner_sector(porep_file: Path) -> None:
    wl = load_workload(porep_file)
    ids = [make_job_id("curio", proof_kind=wl.proof_kind, miner_id=j.miner_id,
                       sector_ids=sector_ids(j)) for j in wl.jobs]
    assert ids == ["porep-1000-1", "porep-1000-2"]


def test_bench_input_is_the_c1_envelope_or_cuzk_benchs_vanilla_array(porep_file: Path,
                                                                     workload_file: Path) -> None:
    wl = load_workload(porep_file)
    assert bench_input(wl.jobs[0]) == wl.jobs[0].c1
    wp = load_workload(workload_file)
    doc = json.loads(bench_input(wp.jobs[1]))  # cuzk-bench --vanilla: a JSON array of base64
    assert [base64.b64decode(v) for v in doc] == list(wp.jobs[1].vanilla_proofs)
    one = json.loads(bench_input(wp.jobs[1], partition=1))  # the second partition's sectors
    per = len(wp.jobs[1].sectors) // wp.jobs[1].shape.partitions
    assert [base64.b64decode(v) for v in one] == list(wp.jobs[1].vanilla_proofs[per:2 * per])


def test_slow_tier_is_porep() -> None:
    assert is_slow_workload("porep-2k") and is_slow_workload("porep-2k-2p")
    assert not is_slow_workload("wpost-2k")


@pytest.mark.parametrize("mutate, message", [
    (lambda d: d["jobs"][0].pop("comm_d"), r"jobs\[0\] \('porep-s1'\): missing field 'comm_d'"),
    (lambda d: d["jobs"][1].update(seed="00"), r"porep-s2'\)\.seed: expected 32 bytes, got 1"),
    (lambda d: d["jobs"][0].update(c1="{not json"), "the C1 envelope is not JSON"),
    (lambda d: d["jobs"][0].update(c1=json.dumps({"SectorNum": 1, "SectorSize": 2048})),
     r"C1 envelope\): missing field 'Phase1Out'"),
    (lambda d: d["jobs"][0].update(sector_number=7),
     "envelope says SectorNum=1, SectorSize=2048 but the job says sector_number=7"),
    (lambda d: d["jobs"][0].update(sector_number="1"), "'sector_number' has the wrong type"),
])
def test_porep_schema_errors_name_the_field(tmp_path: Path, mutate: Any, message: str) -> None:
    doc = porep_doc()
    mutate(doc)
    p = tmp_path / "w.json"
    p.write_text(json.dumps(doc), encoding="utf-8")
    with pytest.raises(WorkloadError, match=message):
        load_workload(p)
