"""Warmup and liveness on run records (tests/conftest.py builders)."""

from __future__ import annotations

from msgspec.structs import replace

from proofdiff.model.status import JobStatus, Outcome
from proofdiff.oracles.warmup import first_proof, liveness
from tests.conftest import job, recorder, run


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
