"""Warmup and liveness on run records (tests/conftest.py builders)."""

from __future__ import annotations

from pathlib import Path

from msgspec.structs import replace

from proofdiff.model.jobs import FlowRecord
from proofdiff.model.status import JobStatus, Outcome
from proofdiff.oracles.warmup import evaluate, first_proof, liveness
from tests.conftest import job, recorder, run
from tests.unit.fakes import FakeEvidence, refprover_profiles


def _first(r, conc: int = 1):  # type: ignore[no-untyped-def]
    rec = recorder("warmup")
    first_proof(rec, r, conc)
    return rec.records[0]


def _live(r):  # type: ignore[no-untyped-def]
    rec = recorder("warmup")
    liveness(rec, r)
    return rec.records[0]


def test_a_plausible_first_proof_passes() -> None:
    got = _first(run("bench", [job(i, wall_ms=3700.0) for i in range(4)]))
    assert got.outcome is Outcome.PASS
    assert got.evidence["warmup"]["srs_load_ms"] == 200 and got.evidence["steady"]["n"] == 3


def test_a_failed_warmup_carries_the_daemons_error_and_log_lines() -> None:
    r = run("prod", [job(0, JobStatus.FAILED, error="SRS load failed: not found at /data/zk/params")])
    r = replace(r, daemon=replace(r.daemon, log_tail="2026 WARN job ended error=SRS load failed\n"))
    got = _first(r)
    assert got.outcome is Outcome.FAIL
    assert "came back FAILED: SRS load failed" in got.message and "WARN job ended" in got.message


def test_an_invalid_or_implausibly_fast_warmup_fails() -> None:
    bad = _first(run("prod", [job(0, parts=(True, False))]))
    assert bad.outcome is Outcome.FAIL and "does not verify: bad partitions [1]" in bad.message
    fast = _first(run("bench", [job(0, wall_ms=150.0)] + [job(i, wall_ms=3700.0) for i in (1, 2, 3)]))
    assert fast.outcome is Outcome.FAIL
    assert "implausibly fast warmup: 150 ms < floor 1850 ms" in fast.message
    assert "SRS load of 200 ms" in fast.message


def test_no_warmup_proof_is_an_error() -> None:
    got = _first(run("prod", [], errors=["daemon exited with code 2"]))
    assert got.outcome is Outcome.ERROR and "daemon exited with code 2" in got.message


def test_liveness_explains_an_oom_kill_and_names_the_lost_jobs() -> None:
    jobs = [job(0), job(1, JobStatus.ERROR, error="UNAVAILABLE")]
    assert _live(run("prod", jobs)).outcome is Outcome.PASS
    dead = _live(run("prod", jobs, state={"Status": "exited", "ExitCode": 137, "OOMKilled": True}))
    assert dead.outcome is Outcome.FAIL
    assert "exit code 137 and OOMKilled=true" in dead.message
    assert "raise the profile's mem_limit" in dead.message and "wpost-1 (id=id-1, ERROR)" in dead.message
    gone = _live(run("prod", jobs, state={}))
    assert gone.outcome is Outcome.ERROR and "could not be inspected" in gone.message


def test_an_unverifiable_warmup_is_judged_on_the_rest_and_warned() -> None:
    """A client that hands out no proof bytes (cuzk-bench batch): completion and plausibility
    are judged, and the record warns that the proof was not verified."""
    jobs = [replace(job(i, wall_ms=3700.0, parts=None), proof=b"",
                    unverifiable="cuzk-bench prints no proof") for i in range(4)]
    got = _first(run("bench", jobs))
    assert got.outcome is Outcome.PASS
    assert got.evidence["warning"] == "the warmup proof was not verified: cuzk-bench prints no proof"
    fast = _first(run("bench", [replace(jobs[0], wall_ms=10.0), *jobs[1:]]))
    assert fast.outcome is Outcome.FAIL and "implausibly fast warmup" in fast.message


def _prod_all_in_first_wave(workload_file: Path, solo: FlowRecord) -> FakeEvidence:
    """prod: 4 jobs at concurrency 4 (no steady-state sample), a 300 ms warmup; bench: 4
    plausible proofs one at a time; ``solo``: what the warmup's solo proof on prod gives."""
    fast = [job(0, wall_ms=300.0)] + [job(i, wall_ms=3500.0) for i in (1, 2, 3)]
    return FakeEvidence(profiles=refprover_profiles(), workload_file=workload_file,
                        runs={"bench": run("bench", [job(i, wall_ms=3700.0) for i in range(4)]),
                              "prod": run("prod", fast)}, sent={"warmup-solo": solo})


def test_with_no_steady_state_the_floor_comes_from_a_solo_proof(workload_file: Path) -> None:
    ev = _prod_all_in_first_wave(workload_file, FlowRecord(name="warmup-solo",
                                                           jobs=(job(0, wall_ms=3500.0),)))
    got = {r.profile: r for r in evaluate(ev, "wpost-2k") if r.oracle == "first-proof"}
    assert [(n, [s.job for s in specs]) for n, specs in ev.calls] == [("warmup-solo", ["wpost-0"])]
    assert got["bench"].outcome is Outcome.PASS and got["bench"].evidence["floor_basis"] == \
        "steady median"
    assert got["prod"].outcome is Outcome.FAIL
    assert "implausibly fast warmup: 300 ms < floor 1750 ms (max of 250 ms and 0.5 x solo " \
        "proof)" in got["prod"].message


def test_with_no_steady_state_and_no_solo_proof_the_floor_is_not_judged(
        workload_file: Path) -> None:
    ev = _prod_all_in_first_wave(workload_file, FlowRecord(name="warmup-solo", jobs=(
        job(0, JobStatus.FAILED, error="SRS load failed"),)))
    (prod,) = [r for r in evaluate(ev, "wpost-2k") if r.oracle == "first-proof"
               and r.profile == "prod"]
    assert prod.outcome is Outcome.ERROR
    assert "no completed solo proof (FAILED: SRS load failed): nothing to set the plausibility " \
        "floor from" in prod.message
