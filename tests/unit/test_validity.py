"""The validity oracle on run records shaped like real runs (tests/conftest.py builders)."""

from __future__ import annotations

from proofdiff.model.status import JobStatus, Outcome
from proofdiff.oracles.validity import judge_run
from tests.conftest import job, recorder, run


def _judge(r):  # type: ignore[no-untyped-def]
    rec = recorder("validity")
    judge_run(rec, r)
    return {x.oracle: x for x in rec.records}


def test_all_valid_passes_both_oracles() -> None:
    got = _judge(run("bench", [job(i) for i in range(4)]))
    assert got["proofs"].outcome is Outcome.PASS and got["jobs"].outcome is Outcome.PASS
    assert got["proofs"].counts.valid == 4 and got["proofs"].counts.completed == 4


def test_invalid_partition_is_named_with_the_job_and_id() -> None:
    jobs = [job(i, rid="wpost-1000-1") for i in range(4)]
    jobs[2] = job(2, rid="wpost-1000-1", parts=(True, False))
    got = _judge(run("prod", jobs))["proofs"]
    assert got.outcome is Outcome.FAIL
    (bad,) = got.evidence["bad"]
    assert (bad["job"], bad["request_id"], bad["bad_partitions"]) == ("wpost-2", "wpost-1000-1", [1])
    assert "wpost-2 (id=wpost-1000-1, COMPLETED): invalid: partitions [1] do not verify" in got.message


def test_wrong_length_and_missing_verdict_are_invalid() -> None:
    got = _judge(run("prod", [job(0, nbytes=192), job(1, parts=None)]))["proofs"]
    assert got.outcome is Outcome.FAIL
    reasons = [b["reason"] for b in got.evidence["bad"]]
    assert reasons == ["proof is 192 bytes, expected 384 (2 partitions x 192)",
                       "no verdict from the verifier"]


def test_failed_and_lost_jobs_fail_the_jobs_oracle_with_their_errors() -> None:
    jobs = [job(0), job(1, JobStatus.FAILED, error="partition 1 already inserted"),
            job(2, JobStatus.STUCK, error="no answer: the daemon reports nothing pending")]
    got = _judge(run("prod", jobs))
    assert got["proofs"].outcome is Outcome.PASS  # the one completed proof is valid
    assert got["jobs"].outcome is Outcome.FAIL
    assert [b["reason"] for b in got["jobs"].evidence["bad"]] == [
        "partition 1 already inserted", "no answer: the daemon reports nothing pending"]


def test_nothing_to_verify_is_an_error_not_a_pass() -> None:
    none_done = _judge(run("prod", [job(0, JobStatus.FAILED, error="C1 parse failed")]))
    assert none_done["proofs"].outcome is Outcome.ERROR
    assert "no job completed" in none_done["proofs"].message
    unverifiable = job(0, parts=None)
    from msgspec.structs import replace
    unverifiable = replace(unverifiable, proof=b"", unverifiable="the tool has no --save-proofs")
    got = _judge(run("bench", [unverifiable]))["proofs"]
    assert got.counts is not None and got.counts.unverified == 1


def test_a_client_that_hands_out_no_proofs_is_unverifiable_not_an_error() -> None:
    """cuzk-bench's batch prints timings only: SKIPPED as unverifiable, with the reason."""
    from msgspec.structs import replace
    jobs = [replace(job(i, parts=None), proof=b"", unverifiable="the tool has no --save-proofs")
            for i in range(2)]
    got = _judge(run("bench", jobs))
    assert got["proofs"].outcome is Outcome.SKIPPED
    assert got["proofs"].evidence["unverifiable"] == "the tool has no --save-proofs"
    assert "unverifiable: the client handed out no proof bytes" in got["proofs"].message
    assert got["jobs"].outcome is Outcome.PASS  # both came back COMPLETED


def test_a_run_that_never_sent_jobs_is_an_error_with_the_cause() -> None:
    got = _judge(run("prod", [], errors=["image 'x' is not present locally"]))
    assert {o.outcome for o in got.values()} == {Outcome.ERROR}
    assert "not present locally" in got["proofs"].message


def test_a_broken_verifier_is_an_error() -> None:
    got = _judge(run("prod", [job(0, parts=None)], flow_errors=["verifier: exited with code 2"]))
    assert got["proofs"].outcome is Outcome.ERROR and "exited with code 2" in got["proofs"].message


def test_bad_jobs_sharing_a_request_id_in_flight_together_name_job_ids_and_concurrency() -> None:
    from proofdiff.model.jobs import JobRecord
    from proofdiff.model.status import JobStatus
    from proofdiff.oracles.validity import _shared_ids

    def job(i: int, rid: str, t0: float) -> JobRecord:
        return JobRecord(index=i, job=f"wpost-{i}", request_id=rid, status=JobStatus.COMPLETED,
                         started_unix_s=t0, wall_ms=2000.0)
    bad = [{"request_id": "same"}]
    together = [job(0, "same", 100.0), job(1, "same", 101.0), job(2, "other", 100.0)]
    assert _shared_ids(together, bad) == (["same"], ("job_ids", "concurrency"))
    one_by_one = [job(0, "same", 100.0), job(1, "same", 103.0)]
    assert _shared_ids(one_by_one, bad) == (["same"], ("job_ids",))
    assert _shared_ids(together, [{"request_id": "other"}]) == ([], ())
