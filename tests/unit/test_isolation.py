"""The isolation oracle on flow records with the shapes the flows produce (burst, reuse,
distinct) and cross-checked verdicts (``ProofVerdict.owners``); no Docker."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from msgspec.structs import replace

from proofdiff.model.jobs import FlowRecord, JobRecord, ProofVerdict
from proofdiff.model.status import JobStatus
from proofdiff.oracles.isolation import _plan, findings

from tests.conftest import workload_doc
from tests.unit.fakes import FakeEvidence, refprover_profiles

DUP = "iso-abc-dup"


def _proof(i: int) -> bytes:
    return bytes([i]) * 192 + bytes([i + 100]) * 192


def _job(i: int, name: str, rid: str, owner: str | None, status: JobStatus = JobStatus.COMPLETED,
         error: str = "", await_only: bool = False) -> JobRecord:
    done = status is JobStatus.COMPLETED
    return JobRecord(index=i, job=name, request_id=rid, status=status, error=error,
                     proof=_proof(i + (10 if await_only else 0)) if done else b"",
                     await_only=await_only, verdict=ProofVerdict(
                         valid=owner == name, partitions=(True, True),
                         owners=(owner,) if owner else ()) if done else None)


def _clean() -> list[FlowRecord]:
    burst = FlowRecord(name="burst", jobs=(
        _job(0, "wpost-0", DUP, "wpost-0"), _job(1, "wpost-1", DUP, "wpost-1"),
        _job(2, "wpost-2", "iso-abc-u2", "wpost-2"), _job(3, "wpost-3", "iso-abc-u3", "wpost-3"),
        _job(4, "wpost-0", DUP, None, JobStatus.LOST, "AwaitProof('iso-abc-dup'): NOT_FOUND",
             await_only=True)))
    reuse = FlowRecord(name="reuse", jobs=(replace(_job(0, "wpost-3", "iso-abc-u2", "wpost-3"),
                                                   proof=_proof(20)),))
    return [burst, reuse]


def _with(flows: list[FlowRecord], fi: int, ji: int, **kw: object) -> list[FlowRecord]:
    jobs = list(flows[fi].jobs)
    jobs[ji] = replace(jobs[ji], **kw)
    out = list(flows)
    out[fi] = replace(flows[fi], jobs=tuple(jobs))
    return out


def _oracles(flows: list[FlowRecord], workload: FlowRecord | None = None) -> list[str]:
    return [o for o, _ in findings(flows, workload, DUP)[0]]


def test_clean_flows_have_no_findings_and_judge_something() -> None:
    found, judged = findings(_clean(), None, DUP)
    assert found == []
    assert judged == {"hang": 5, "lost-or-twice": 6, "colliding-ids": 2, "reused-id": 1,
                      "distinct-inputs": 2}


def test_dup_answers_in_either_order_are_fine_but_one_answered_twice_is_not() -> None:
    f = _clean()
    swapped = _with(_with(f, 0, 0, verdict=replace(f[0].jobs[0].verdict, owners=("wpost-1",))),
                    0, 1, verdict=replace(f[0].jobs[1].verdict, owners=("wpost-0",)))
    assert _oracles(swapped) == []
    twice = _with(f, 0, 1, verdict=replace(f[0].jobs[1].verdict, owners=("wpost-0",)))
    found = findings(twice, None, DUP)[0]
    assert [o for o, _ in found] == ["colliding-ids"] and "answered twice" in found[0][1]


def test_cross_talk_and_a_reused_id_with_the_old_proof() -> None:
    f = _clean()
    cross = _with(f, 0, 3, verdict=replace(f[0].jobs[3].verdict, owners=("wpost-2",)))
    found = findings(cross, None, DUP)[0]
    assert found == [("distinct-inputs", "burst slot 3 (id=iso-abc-u3) got a proof that does not "
                      "verify against its own inputs wpost-3; it is the proof of wpost-2")]
    old = _with(f, 1, 0, verdict=replace(f[1].jobs[0].verdict, owners=("wpost-2",)))
    assert _oracles(old) == ["reused-id"]


def test_a_reused_id_answered_with_its_old_result_says_whose_it_was() -> None:
    """cuzk-daemon keeps every completed job by id: the reused id is answered at once with the
    proof slot 2 got in the burst, which the reuse flow (it sends one input) cannot attribute
    by verifying; the finding names that earlier answer (as recorded on curio e0294b0f)."""
    f = _clean()
    stale = _with(f, 1, 0, proof=f[0].jobs[2].proof, verdict=replace(
        f[1].jobs[0].verdict, valid=False, partitions=(False, False), owners=()))
    found = [x for x in findings(stale, None, DUP)[0] if x[0] == "reused-id"]
    assert found == [("reused-id", "reuse slot 0 (id=iso-abc-u2) got a proof that does not verify "
                      "against its own inputs wpost-3; it is byte-identical to the earlier answer "
                      "for this id (burst slot 2 (id=iso-abc-u2), inputs wpost-2): the daemon "
                      "answered the reused id with its old result")]


def test_identical_partition_proofs_across_distinct_inputs() -> None:
    f = _clean()
    shared = _with(f, 0, 3, proof=_proof(3)[:192] + _proof(2)[192:])
    (found,) = findings(shared, None, DUP)[0]
    assert found[0] == "distinct-inputs"
    assert "burst slot 2 partition 1 = burst slot 3 partition 1" in found[1]
    wl = FlowRecord(name="workload", jobs=(_job(0, "wpost-0", "a", "wpost-0"),
                                           replace(_job(1, "wpost-1", "b", "wpost-1"),
                                                   proof=_proof(0))))
    assert _oracles(_clean(), wl) == ["distinct-inputs"]


def test_stuck_lost_failed_and_returned_twice() -> None:
    f = _clean()
    f = _with(f, 0, 2, status=JobStatus.STUCK, proof=b"", verdict=None,
              error="no answer for id 'iso-abc-u2': the daemon reports nothing pending")
    f = _with(f, 0, 3, status=JobStatus.LOST, proof=b"", verdict=None, error="NOT_FOUND")
    f = _with(f, 1, 0, status=JobStatus.FAILED, proof=b"", verdict=None, error="SRS load failed")
    f = _with(f, 0, 4, status=JobStatus.COMPLETED, error="")
    f[0] = replace(f[0], stall="the daemon reports nothing pending or in progress for 15 s")
    found = findings(f, None, DUP)[0]
    assert sorted({o for o, _ in found}) == ["hang", "lost-or-twice"]
    hang = next(m for o, m in found if o == "hang")
    assert "stuck job ids: iso-abc-u2" in hang
    lost = [m for o, m in found if o == "lost-or-twice"]
    assert any("instead of NOT_FOUND" in m for m in lost) and any("SRS load failed" in m for m in lost)


def test_a_clear_duplicate_rejection_passes_and_nothing_to_judge_is_counted() -> None:
    f = _with(_clean(), 0, 1, status=JobStatus.FAILED, proof=b"", verdict=None,
              error="request id 'iso-abc-dup' already exists: duplicate rejected")
    found, judged = findings(f, None, DUP)
    assert found == [] and judged["colliding-ids"] == 2
    every_failed = [replace(fl, jobs=tuple(replace(j, status=JobStatus.FAILED, proof=b"",
                                                   verdict=None, error="SRS load failed")
                                           for j in fl.jobs)) for fl in _clean()]
    found, judged = findings(every_failed, None, DUP)
    assert judged["colliding-ids"] == judged["reused-id"] == judged["distinct-inputs"] == 0
    assert {o for o, _ in found} == {"lost-or-twice"}


def test_flows_where_every_job_failed_leave_hang_nothing_to_judge() -> None:
    every_failed = [replace(fl, jobs=tuple(replace(j, status=JobStatus.FAILED, proof=b"",
                                                   verdict=None, error="SRS load failed")
                                           for j in fl.jobs)) for fl in _clean()]
    found, judged = findings(every_failed, None, DUP)
    assert judged["hang"] == 0  # the oracle then records ERROR: nothing to judge
    assert "hang" not in {o for o, _ in found}


def test_both_colliding_requests_rejected_as_duplicates_lost_the_first() -> None:
    reject = "request id 'iso-abc-dup' already exists: duplicate rejected"
    f = _with(_clean(), 0, 0, status=JobStatus.FAILED, proof=b"", verdict=None, error=reject)
    f = _with(f, 0, 1, status=JobStatus.FAILED, proof=b"", verdict=None, error=reject)
    found = findings(f, None, DUP)[0]
    assert found == [("colliding-ids", "all 2 requests with the shared id 'iso-abc-dup' were "
                      f"rejected as duplicates ({reject}): the first of them held the id, so "
                      "its job was lost")]


@pytest.mark.parametrize(("jobs", "sent", "reuse"), [
    (4, ["wpost-0", "wpost-1", "wpost-2", "wpost-3"], "wpost-3"),
    (3, ["wpost-0", "wpost-1", "wpost-2"], "wpost-1"),
    (2, ["wpost-0", "wpost-1", "wpost-0"], "wpost-1"),
])
def test_every_workload_of_two_or_more_inputs_gets_a_reused_id(
        tmp_path: Path, jobs: int, sent: list[str], reuse: str) -> None:
    # the reused id is slot 2's (a unique one), sent again with inputs slot 2 did not prove
    path = tmp_path / "wpost-2k.json"
    path.write_text(json.dumps(workload_doc(jobs=jobs)), encoding="utf-8")
    ev = FakeEvidence(profiles=refprover_profiles(), workload_file=path)
    burst, again, dup = _plan(ev, "prod", "wpost-2k")  # type: ignore[arg-type]
    assert [s.job for s in burst if not s.await_only] == sent
    ids = [s.request_id for s in burst]
    assert ids[:2] == [dup, dup] and len(set(ids[2:len(sent)])) == len(sent) - 2
    assert ids[2] != dup and burst[-1].await_only and burst[-1].request_id == dup
    (r,) = again
    assert r.request_id == ids[2] and r.job == reuse != burst[2].job
