"""The hang guard's stall rule (proofdiff.drivers.stall_rule) over constructed moments: a daemon
is stalled by what proofdiff observes (answers, their times, the process's CPU, GetStatus
failing), never by what it claims; and the claims it polls are read as cuzk reports them."""

from __future__ import annotations

from typing import Any

from msgspec.structs import replace

from proofdiff.drivers import hang_guard
from proofdiff.drivers.stall_rule import AnswerClock, Observed, quiet_limit_s, stall_reason
from proofdiff.model.status import JobStatus
from proofdiff.proto import cuzk_pb2
from tests.conftest import job

NOW = 1000.0


def _at(quiet_s: float, **kw: Any) -> Observed:
    base: dict[str, Any] = {"now": NOW, "waiting": 2, "quiet_since": NOW - quiet_s,
                            "longest_s": 5.0, "stall_s": 15.0}
    return Observed(**{**base, **kw})


def test_no_answer_for_far_longer_than_its_proofs_take_is_a_stall_whatever_it_claims() -> None:
    # 2 requests wait; the longest proof this daemon took was 5 s: 6 x 2 x 5 s = 60 s of quiet
    assert quiet_limit_s(_at(0)) == 60.0
    assert stall_reason(_at(59.9)) is None
    why = stall_reason(_at(60.0))
    assert why == ("no answer for 60 s while 2 request(s) wait, longer than 6 x 2 x the longest "
                   "proof this daemon took (5.0 s) = 60 s")


def test_a_lone_proof_that_runs_past_the_stall_floor_is_not_a_stall() -> None:
    # real cuzk lists no queue for a lone RUNNING job (scheduler.rs stats(): queued entries only),
    # which must not read as idle after the 15 s floor. A 60 s proof alone is no stall:
    # its earlier proofs took 60 s, and with no history (its first proof) only the deadline stops it
    assert stall_reason(_at(40.0, waiting=1, longest_s=60.0)) is None
    assert stall_reason(_at(40.0, waiting=1, longest_s=None)) is None
    assert stall_reason(_at(360.0, waiting=1, longest_s=60.0)) is not None  # 6 x 1 x 60 s


def test_the_floor_is_the_profiles_stall_s() -> None:
    fast = _at(14.0, waiting=1, longest_s=0.5)  # 6 x 1 x 0.5 s = 3 s, floored at 15 s
    assert quiet_limit_s(fast) == 15.0 and stall_reason(fast) is None
    assert stall_reason(replace(fast, quiet_since=NOW - 15.0)) is not None


def test_a_cpu_prover_that_uses_no_cpu_while_requests_wait_is_stalled_before_any_answer() -> None:
    idle = _at(30.0, longest_s=None, cpu_idle_since=NOW - 15.0, cpu_idle_until=NOW)
    assert stall_reason(idle) == ("no answer for 30 s while 2 request(s) wait, and its process "
                                  "used under 0.05 CPU cores for the last 15 s: it proves nothing")
    # idle counts from when the requests went out, not from the idle daemon before them
    assert stall_reason(_at(10.0, longest_s=None, cpu_idle_since=NOW - 300.0,
                            cpu_idle_until=NOW)) is None
    assert stall_reason(_at(30.0, longest_s=None, cpu_idle_since=NOW - 14.0,
                            cpu_idle_until=NOW)) is None
    # and only up to the last sample that showed it: samples that stop coming show nothing
    stale = _at(30.0, longest_s=None, cpu_idle_since=NOW - 20.0, cpu_idle_until=NOW - 10.0)
    assert stall_reason(stale) is None


def test_getstatus_failing_is_observed_and_nothing_waiting_is_never_a_stall() -> None:
    gone = _at(1.0, unreachable_since=NOW - 15.0, unreachable_code="UNAVAILABLE")
    assert stall_reason(gone) == ("the daemon has not answered GetStatus (UNAVAILABLE) for 15 s "
                                  "while 2 request(s) wait")
    assert stall_reason(replace(gone, waiting=0)) is None
    assert stall_reason(_at(500.0, waiting=0)) is None


def test_the_answer_clock_takes_the_daemons_answers_only() -> None:
    clock = AnswerClock()
    assert clock.answered(job(0, wall_ms=4000.0)) and clock.longest_s == 4.0
    assert clock.answered(job(1, JobStatus.FAILED, wall_ms=9000.0))  # an answer: progress
    assert clock.longest_s == 4.0  # but not a proof: a fast parse failure proves nothing
    for status in (JobStatus.ERROR, JobStatus.LOST, JobStatus.STUCK, JobStatus.TIMEOUT):
        assert not clock.answered(job(2, status, wall_ms=60_000.0))
    assert clock.answers == 2 and clock.longest_s == 4.0


class _CuzkStatus:
    """The status a real cuzk gives while one job runs alone: no queue (nothing waits), its
    worker's GPU busy with the job (service.rs get_status), and the running-jobs gauge."""

    def get_status(self) -> Any:
        return cuzk_pb2.GetStatusResponse(gpus=[cuzk_pb2.GPUStatus(
            ordinal=0, name="NVIDIA H200", current_job_id="porep-1000-1",
            current_proof_kind="POREP_SEAL_COMMIT")], queues=[])

    def get_metrics(self) -> str:
        return "# TYPE cuzk_running_jobs gauge\ncuzk_running_jobs 1\n"


def test_a_lone_running_job_on_cuzk_is_read_as_one_in_progress() -> None:
    guard = hang_guard.Guard(60.0)
    sample = hang_guard._sample(_CuzkStatus(), guard, [True])  # type: ignore[arg-type]
    assert (sample.pending, sample.in_progress, sample.running_jobs) == (0, 1, 1)
    assert guard.samples == [sample]
