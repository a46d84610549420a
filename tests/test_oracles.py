from __future__ import annotations

from harness.config_delta import profile_delta
from harness.oracles import diverge, validity
from harness.profiles import load_profiles
from harness.records import JobStatus, RunResult
from tests.conftest import REPO, job, run

PROFILES = REPO / "profiles" / "refprover.toml"


def test_all_valid() -> None:
    o = validity(run("bench", [job(i) for i in range(4)]))
    assert o.ok and o.outcome == "valid" and (o.total, o.completed, o.valid) == (4, 4, 4)


def test_invalid_partition_is_named() -> None:
    o = validity(run("prod", [job(i, rid="wpost-1000-1") for i in range(4)],
                     bad={2: [True, False]}))
    assert o.outcome == "invalid" and o.valid == 3
    (b,) = o.bad
    assert (b.name, b.request_id, b.kind, b.bad_partitions) == ("wpost-2", "wpost-1000-1",
                                                                "invalid", (1,))
    assert "partitions [1] do not verify" in o.explain()


def test_wrong_length_is_invalid_even_if_verifier_said_yes() -> None:
    o = validity(run("prod", [job(0, nbytes=192)]))
    assert o.outcome == "invalid" and "192 bytes, expected 384" in o.bad[0].reason


def test_missing_verdict_is_invalid() -> None:
    r = run("prod", [job(0)])
    r2 = RunResult(**{**r.__dict__, "verdicts": {}})
    assert validity(r2).bad[0].reason == "no verdict from the verifier"


def test_failed_and_lost_jobs_are_counted_with_their_errors() -> None:
    jobs = [job(0), job(1, JobStatus.FAILED, error="partition 1 already inserted"),
            job(2, JobStatus.LOST, error="Prove on 127.0.0.1:1 failed: DEADLINE_EXCEEDED")]
    o = validity(run("prod", jobs))
    assert o.outcome == "failed" and o.completed == 1 and o.valid == 1
    assert [b.reason for b in o.bad] == ["partition 1 already inserted",
                                        "Prove on 127.0.0.1:1 failed: DEADLINE_EXCEEDED"]


def test_run_errors_and_empty_runs_are_errors() -> None:
    assert validity(run("prod", [], errors=("image missing",))).outcome == "error"
    assert validity(run("prod", [])).outcome == "error"


def test_divergence_carries_delta_and_failing_ids() -> None:
    ps = load_profiles(PROFILES, ["prod.env.REFPROVER_FAULTS=partition-race"])
    delta = profile_delta(ps["bench"], ps["prod"])
    bench = validity(run("bench", [job(i) for i in range(4)]))
    prod = validity(run("prod", [job(i, rid="wpost-1000-1") for i in range(4)],
                        bad={1: [False, True], 3: [True, False]}))
    d = diverge(bench, prod, delta)
    assert d is not None
    text = d.render()
    assert text.startswith("validity diverged on wpost-2k: bench=valid, prod=invalid")
    assert "wpost-1 (id=wpost-1000-1, COMPLETED): invalid: partitions [0]" in text
    assert "1. env.REFPROVER_FAULTS: <absent> -> 'partition-race'" in text
    assert "config.pipeline.enabled: False -> True" in text
    assert d.to_json()["right"]["invalid"] == 2


def test_same_outcome_is_no_divergence() -> None:
    ps = load_profiles(PROFILES)
    delta = profile_delta(ps["bench"], ps["prod"])
    a = validity(run("bench", [job(0)], bad={0: [False, True]}))
    b = validity(run("prod", [job(0)], bad={0: [True, False]}))
    assert diverge(a, b, delta) is None and not a.ok and not b.ok


def test_records_roundtrip_json() -> None:
    r = run("prod", [job(0), job(1, JobStatus.FAILED, error="x")], bad={0: [True, False]})
    assert RunResult.from_json(r.to_json()) == r
