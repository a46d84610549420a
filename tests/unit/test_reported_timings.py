"""behaviour/timings (proofdiff.oracles.reported_timings): every answer's figures against each
other, the client's wall and the daemon's log. Partitions proved side by side may sum to more
than the total (cuzk and refprover sum per partition), the wall's resolution is the driver's;
microseconds in a millisecond field, a wrapped negative, a total beyond the wall and a log in
another unit fail, with the job ids."""

from __future__ import annotations

from pathlib import Path

from msgspec.structs import replace

from proofdiff.model.jobs import DaemonTimings, JobRecord
from proofdiff.model.status import JobStatus, Outcome
from proofdiff.oracles import reported_timings
from proofdiff.oracles.evidence import Recorder
from proofdiff.oracles.reported_timings import problems_of
from tests.conftest import job, run
from tests.unit.fakes import FakeDriver, FakeEvidence, refprover_profiles


def _answer(q: int = 3, srs: int = 0, synth: int = 2, gpu: int = 5000, total: int = 2600,
            wall: float = 2604.0, job_id: str = "j") -> JobRecord:
    return JobRecord(index=0, job="wpost-0", request_id="j", job_id=job_id,
                     status=JobStatus.COMPLETED, wall_ms=wall, started_unix_s=1.0,
                     timings=DaemonTimings(queue_wait_ms=q, srs_load_ms=srs, synthesis_ms=synth,
                                           gpu_compute_ms=gpu, total_ms=total))


def test_partitions_side_by_side_add_up() -> None:
    # two partitions of ~2.5 s proved at once: 5 s of compute in a 2.6 s total
    assert problems_of(_answer(), 2) == []
    # one partition: the same compute is twice its total
    assert "is more than its total 2600 ms" in problems_of(_answer(), 1)[0]
    # no timings reported: nothing judged
    assert problems_of(_answer(q=0, synth=0, gpu=0, total=0), 2) == []


def test_units_wraps_and_the_clients_clock() -> None:
    micros = problems_of(_answer(gpu=5_000_000), 2)
    assert micros and "= 2500004 ms is more than its total 2600 ms" in micros[0]
    assert "negative number wrapped" in problems_of(_answer(q=2 ** 64 - 40), 2)[0]
    assert "more than the 2004 ms the client observed" in problems_of(_answer(wall=2004.0), 2)[0]
    # a job sent as two requests (one per partition) carries their sums: twice the wall
    assert problems_of(_answer(total=5000, wall=2600.0, job_id="a,b"), 2) == []
    # the bench tool's wall is X.Xs: 100 ms of slack
    assert problems_of(_answer(wall=2500.0), 2, wall_extra_ms=100.0) == []
    # the log in the same unit agrees; a log in seconds (or an answer in us) does not
    assert problems_of(_answer(), 2, logged=(2601,)) == []
    assert "its log says total_ms=2600000" in problems_of(_answer(), 2, logged=(2600000,))[0]


def test_the_check_names_the_jobs_and_skips_a_daemon_without_timings(
        workload_file: Path) -> None:
    r = run("prod", [job(i) for i in range(4)])
    bad = replace(r.flows[0].jobs[1], timings=replace(r.flows[0].jobs[1].timings,
                                                      gpu_compute_ms=700_000))
    ev = FakeEvidence(profiles=refprover_profiles(), workload_file=workload_file, runs={
        "prod": replace(r, flows=(replace(r.flows[0], jobs=(r.flows[0].jobs[0], bad,
                                                            *r.flows[0].jobs[2:])),)),
        "bench": run("bench", [job(i) for i in range(4)])})
    rec = Recorder(ev, "behaviour", "wpost-2k")  # type: ignore[arg-type]
    reported_timings.check(ev, rec, "prod", "wpost-2k")  # type: ignore[arg-type]
    reported_timings.check(ev, rec, "bench", "wpost-2k")  # type: ignore[arg-type]
    fail, ok = rec.records
    assert fail.outcome is Outcome.FAIL and "id-1 (workload): queue_wait 5" in fail.message
    assert fail.evidence["violations"][0]["id"] == "id-1"
    assert ok.outcome is Outcome.PASS and "4 answer(s) judged" in ok.message
    quiet = FakeEvidence(profiles=refprover_profiles(), workload_file=workload_file, runs={
        "bench": run("bench", [replace(job(i), timings=DaemonTimings(
            queue_wait_ms=0, srs_load_ms=0, synthesis_ms=0, gpu_compute_ms=0, total_ms=0))
            for i in range(2)])}, drivers={"bench": FakeDriver(name="bench-cli")})
    rec = Recorder(quiet, "behaviour", "wpost-2k")  # type: ignore[arg-type]
    reported_timings.check(quiet, rec, "bench", "wpost-2k")  # type: ignore[arg-type]
    assert rec.records[0].outcome is Outcome.SKIPPED
