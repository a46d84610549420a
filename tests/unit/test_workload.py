from __future__ import annotations

import json
from pathlib import Path

import pytest

from proofdiff.proto import cuzk_pb2
from proofdiff.model.workload import (WorkloadError, load_workload, select_jobs)
from proofdiff.drivers.grpc_driver import build_request
from proofdiff.verify.tool_verifier import verify_item
from tests.conftest import workload_doc


def test_load_real_shaped_workload(workload_file: Path) -> None:
    wl = load_workload(workload_file)
    assert (wl.name, wl.partitions, wl.sector_size, len(wl.jobs)) == ("wpost-2k", 2, 2048, 4)
    assert wl.jobs[0].shape.proof_bytes == 384
    j = wl.jobs[1]
    assert j.randomness == bytes([1] * 32) and len(j.vanilla_proofs) == 4
    assert [s.sector_id for s in j.sectors] == [1, 2, 3, 4]


def test_build_request_carries_the_jobs_public_inputs(workload_file: Path) -> None:
    wl = load_workload(workload_file)
    req = build_request(wl.jobs[2], "wpost-1000-1")
    assert req.request_id == "wpost-1000-1"
    assert req.proof_kind == cuzk_pb2.WINDOW_POST_PARTITION
    assert (req.sector_size, req.registered_proof, req.miner_id) == (2048, 10, 1000)
    assert req.randomness == bytes([2] * 32) and len(req.vanilla_proofs) == 4
    assert req.sector_number == 1
    item = verify_item(wl.jobs[2], "2:wpost-2", b"\x01" * 384)
    assert item["randomness"] == bytes([2] * 32).hex() and item["proof"] == "01" * 384
    assert item["sectors"][0] == {"sector_id": 1, "comm_r": bytes([16] * 32).hex()}


def test_select_jobs_cycles(workload_file: Path) -> None:
    wl = load_workload(workload_file)
    assert [j.name for j in select_jobs(wl, 6)] == ["wpost-0", "wpost-1", "wpost-2", "wpost-3",
                                                   "wpost-0", "wpost-1"]
    assert len(select_jobs(wl, None)) == 4


def test_bad_json_gives_line_and_column(tmp_path: Path) -> None:
    p = tmp_path / "w.json"
    p.write_text('{"schema": 1,\n "jobs": [}', encoding="utf-8")
    with pytest.raises(WorkloadError, match=rf"^{p}:2:\d+: bad JSON"):
        load_workload(p)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(WorkloadError, match="cannot be read") as err:
        load_workload(tmp_path / "none.json")
    assert "proofdiff build" in err.value.fix


@pytest.mark.parametrize("mutate, message", [
    (lambda d: d.pop("partitions"), "missing field 'partitions'"),
    (lambda d: d.update(schema=2), "schema 2 not supported"),
    (lambda d: d.update(proof_kind="SNAP_DEALS_UPDATE"), "not supported yet"),
    (lambda d: d["jobs"][1].pop("randomness"), r"jobs\[1\] \('wpost-1'\): missing field 'randomness'"),
    (lambda d: d["jobs"][0].update(randomness="zz"), "randomness: not hex"),
    (lambda d: d["jobs"][0]["sectors"][0].update(comm_r="00"), "expected 32 bytes, got 1"),
    (lambda d: d["jobs"][0]["vanilla_proofs"].pop(), "3 vanilla proofs for 4 sectors"),
    (lambda d: d["jobs"][0]["vanilla_proofs"].__setitem__(0, "!!"), "not base64"),
    (lambda d: d.update(jobs=[]), "'jobs' is empty"),
    (lambda d: d.update(sector_size="2048"), "'sector_size' has the wrong type"),
    # fails at the load, not at the first request
    (lambda d: d.update(partitions=5), "4 sector\\(s\\) for 5 partitions: fewer sectors than "
                                       "partitions"),
    (lambda d: d.update(partitions=3), "4 sector\\(s\\) for 3 partitions: in runs of 2 .* the "
                                       "last partition gets none"),
])
def test_schema_errors_name_the_field(tmp_path: Path, mutate, message) -> None:  # type: ignore[no-untyped-def]
    doc = workload_doc()
    mutate(doc)
    p = tmp_path / "w.json"
    p.write_text(json.dumps(doc), encoding="utf-8")
    with pytest.raises(WorkloadError, match=message):
        load_workload(p)


def test_a_mix_gives_jobs_their_priority_and_keeps_each_kind(workload_file: Path,
                                                             tmp_path: Path) -> None:
    from tests.unit.test_workload_porep import porep_doc

    porep = tmp_path / "porep.json"
    porep.write_text(json.dumps(porep_doc()), encoding="utf-8")
    mix = tmp_path / "mix.json"
    mix.write_text(json.dumps({"schema": 1, "workload": "mix-2k", "mix": [
        {"file": str(porep), "priority": "NORMAL"},
        {"file": workload_file.name, "jobs": 2, "priority": "HIGH"}]}), encoding="utf-8")
    wl = load_workload(mix)
    assert wl.proof_kind == "MIXED" and wl.partitions == 2
    assert [(j.name, j.shape.proof_kind, j.priority) for j in wl.jobs] == [
        ("porep-s1", "POREP_SEAL_COMMIT", "NORMAL"), ("porep-s2", "POREP_SEAL_COMMIT", "NORMAL"),
        ("wpost-0", "WINDOW_POST_PARTITION", "HIGH"), ("wpost-1", "WINDOW_POST_PARTITION", "HIGH")]
    req = build_request(wl.jobs[2], "w", wl.jobs[2].priority)
    assert req.priority == cuzk_pb2.HIGH and req.proof_kind == cuzk_pb2.WINDOW_POST_PARTITION
    assert build_request(wl.jobs[0], "p").priority == cuzk_pb2.PRIORITY_UNSPECIFIED


def test_an_unknown_priority_is_named(tmp_path: Path) -> None:
    doc = workload_doc()
    doc["jobs"][0]["priority"] = "URGENT"
    path = tmp_path / "w.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    with pytest.raises(WorkloadError, match="priority 'URGENT' is not one of LOW, NORMAL, HIGH"):
        load_workload(path)


@pytest.mark.parametrize(("jobs", "says"), [
    ("2", "field 'jobs' has the wrong type: '2'"),
    (True, "field 'jobs' has the wrong type: True"),
    (0, "jobs = 0, but .* has 4 job"),
    (9, "jobs = 9, but .* has 4 job"),
])
def test_a_mix_members_jobs_is_a_count_it_can_give(workload_file: Path, tmp_path: Path,
                                                   jobs: object, says: str) -> None:
    mix = tmp_path / "mix.json"
    mix.write_text(json.dumps({"schema": 1, "workload": "mix-2k", "mix": [
        {"file": workload_file.name, "jobs": jobs}]}), encoding="utf-8")
    with pytest.raises(WorkloadError, match=rf"mix\[0\]: {says}") as err:
        load_workload(mix)
    assert err.value.fix
