"""The isolation oracle on isolation-flow records (harness.oracle_isolation).

The records have the shapes the flows produce (``harness.driver_isolation``) and the verdict
tables the verifier gives; the end-to-end tier runs the same flows on real containers.
"""

from __future__ import annotations

import dataclasses

from harness.driver_isolation import IsoJob, IsolationRun
from harness.oracle_isolation import attach_verdicts, isolation, verify_items
from harness.records import JobStatus, Verdict
from harness.workload import load_workload
from tests.conftest import job, run

INPUTS = ["wpost-0", "wpost-1", "wpost-2", "wpost-3"]


def _proof(i: int) -> bytes:
    return bytes([i]) * 192 + bytes([i + 100]) * 192


def _clean() -> IsolationRun:
    jobs = (IsoJob("burst", 0, "dup", "wpost-0", JobStatus.COMPLETED, "dup", _proof(0)),
            IsoJob("burst", 1, "dup", "wpost-1", JobStatus.COMPLETED, "dup", _proof(1)),
            IsoJob("burst", 2, "u2", "wpost-2", JobStatus.COMPLETED, "u2", _proof(2)),
            IsoJob("burst", 3, "u3", "wpost-3", JobStatus.COMPLETED, "u3", _proof(3)),
            IsoJob("reuse", 0, "u2", "wpost-3", JobStatus.COMPLETED, "u2", _proof(4)))
    owner = {"burst:0": "wpost-0", "burst:1": "wpost-1", "burst:2": "wpost-2",
             "burst:3": "wpost-3", "reuse:0": "wpost-3"}
    table = {k: {n: n == v for n in INPUTS} for k, v in owner.items()}
    return IsolationRun("prod", "wpost-2k", 2, jobs, dup_id="dup", extra_await="NOT_FOUND",
                        verdicts=table)


def _names(run: IsolationRun) -> list[str]:
    return [f.oracle for f in isolation(run).findings]


def test_clean_flows_have_no_findings() -> None:
    out = isolation(_clean())
    assert not out.findings and "ok" in out.explain()


def test_dup_answers_in_either_order_are_fine() -> None:
    r = _clean()
    v = dict(r.verdicts)
    v["burst:0"], v["burst:1"] = v["burst:1"], v["burst:0"]  # answered in the other order
    assert _names(dataclasses.replace(r, verdicts=v)) == []


def test_one_job_answered_twice_is_a_colliding_ids_finding() -> None:
    r = _clean()
    v = dict(r.verdicts)
    v["burst:1"] = v["burst:0"]
    out = isolation(dataclasses.replace(r, verdicts=v))
    assert [f.oracle for f in out.findings] == ["colliding-ids"]
    assert "answered twice" in out.findings[0].message


def test_cross_talk_names_whose_proof_it_is() -> None:
    r = _clean()
    v = dict(r.verdicts)
    v["burst:3"] = {n: n == "wpost-2" for n in INPUTS}
    out = isolation(dataclasses.replace(r, verdicts=v))
    (f,) = out.of("cross-talk")
    assert "u3" in f.request_ids and "it is the proof of wpost-2" in f.message


def test_reused_id_with_the_old_inputs_proof_is_caught() -> None:
    r = _clean()
    v = dict(r.verdicts)
    v["reuse:0"] = {n: n == "wpost-2" for n in INPUTS}
    assert _names(dataclasses.replace(r, verdicts=v)) == ["reused-id"]


def test_identical_partition_chunks_across_distinct_inputs() -> None:
    r = _clean()
    jobs = list(r.jobs)
    jobs[3] = dataclasses.replace(jobs[3], proof=_proof(3)[:192] + _proof(2)[192:])
    out = isolation(dataclasses.replace(r, jobs=tuple(jobs)))
    (f,) = out.of("identical")
    assert "burst slot 2 partition 1 = burst slot 3 partition 1" in f.message


def test_identical_proofs_in_the_workload_run() -> None:
    wl = run("prod", [job(0), job(1)])
    same = dataclasses.replace(wl, jobs=(wl.jobs[0], dataclasses.replace(
        wl.jobs[1], proof=wl.jobs[0].proof)))
    assert [f.oracle for f in isolation(_clean(), same).findings] == ["identical"]


def test_stuck_lost_failed_and_returned_twice() -> None:
    r = _clean()
    jobs = list(r.jobs)
    jobs[2] = IsoJob("burst", 2, "u2", "wpost-2", JobStatus.LOST,
                     error="stuck: no answer for id 'u2' (the daemon reports nothing pending)")
    jobs[3] = IsoJob("burst", 3, "u3", "wpost-3", JobStatus.LOST, error="AwaitProof: NOT_FOUND")
    jobs[4] = IsoJob("reuse", 0, "u2", "wpost-3", JobStatus.FAILED, error="SRS load failed")
    r = dataclasses.replace(r, jobs=tuple(jobs), stuck_ids=("u2",), stall="idle for 15 s",
                            extra_await="COMPLETED job_id='dup' proof=384 B")
    out = isolation(r)
    assert sorted({f.oracle for f in out.findings}) == ["failed", "hang", "lost",
                                                        "returned-twice"]
    assert "stuck job ids: u2" in out.explain("hang")


def test_a_clear_duplicate_rejection_passes() -> None:
    r = _clean()
    jobs = list(r.jobs)
    jobs[1] = IsoJob("burst", 1, "dup", "wpost-1", JobStatus.FAILED,
                     error="request id 'dup' already exists: duplicate rejected")
    assert _names(dataclasses.replace(r, jobs=tuple(jobs))) == []


def test_verify_items_cover_every_proof_against_every_input(workload_file) -> None:  # type: ignore[no-untyped-def]
    wl = load_workload(workload_file)
    r = _clean()
    items = verify_items(r, wl)
    assert len(items) == 5 * 4 and items[0]["id"] == "burst:0|wpost-0"
    verdicts = {i["id"]: Verdict(i["id"], i["id"].split("|")[1] == "wpost-0") for i in items}
    table = attach_verdicts(r, verdicts).verdicts
    assert table["burst:3"] == {"wpost-0": True, "wpost-1": False, "wpost-2": False,
                                "wpost-3": False}
