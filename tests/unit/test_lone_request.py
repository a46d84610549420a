"""The lone-request latency (proofdiff.oracles.lone_request) over constructed answers: the bound
comes from the same profile's proofs, a claim never widens it, no basis is not a pass."""

from __future__ import annotations

from pathlib import Path

from msgspec.structs import replace

from proofdiff.model.jobs import DaemonTimings, JobRecord
from proofdiff.model.jobs import FlowRecord
from proofdiff.model.status import JobStatus, Outcome
from proofdiff.oracles import lone_request
from proofdiff.oracles.evidence import Recorder
from tests.conftest import job, run
from tests.unit.fakes import FakeEvidence, refprover_profiles

WHERE = "profile 'prod' (wpost-2k)"


def _answered(wall_ms: float, *, total_ms: int, queue_ms: int = 5, srs_ms: int = 0) -> JobRecord:
    return replace(job(0), wall_ms=wall_ms, timings=DaemonTimings(
        queue_wait_ms=queue_ms, srs_load_ms=srs_ms, synthesis_ms=40, gpu_compute_ms=700,
        total_ms=total_ms))


#: Four proofs of a batch at concurrency 4: ~2 s each to prove, the first with its SRS load.
BATCH = [_answered(2600.0, total_ms=2590, queue_ms=10, srs_ms=600),
         *(_answered(2500.0 + 100 * i, total_ms=2480 + 100 * i, queue_ms=480) for i in range(3))]


def test_a_lone_request_is_judged_by_the_median_proving_time_of_the_profiles_proofs() -> None:
    bound = lone_request.lone_bound(BATCH)
    # proving = min(total, wall) - queue wait - SRS load: 1980, 2000, 2100, 2200 -> median 2050
    assert bound == lone_request.LoneBound(bound_ms=10250.0, median_proving_ms=2050.0, proofs=4)
    outcome, message, ev = lone_request.judge_lone([_answered(1900.0, total_ms=1890)], BATCH, WHERE)
    assert outcome is Outcome.PASS, message
    assert ev["ratio"] == round(1900.0 / 2050.0, 3)
    # several lone samples (the timing suite's rounds) are judged by their median
    many = [_answered(w, total_ms=int(w) - 10) for w in (1900.0, 2000.0, 9000.0)]
    assert lone_request.judge_lone(many, BATCH, WHERE)[2]["median_lone_ms"] == 2000.0


def test_a_request_held_back_while_alone_fails_though_batches_never_wait() -> None:
    # a batch that waits to fill (cuzk scheduler.max_batch_wait_ms = 10 s) holds only a lone one;
    # its answer says so (queue_wait 10 s): 10 s not proving, beside 2 s proofs
    held = _answered(11_900.0, total_ms=11_890, queue_ms=10_000)
    outcome, message, ev = lone_request.judge_lone([held], BATCH, WHERE)
    assert outcome is Outcome.FAIL, message
    assert "answered in 11900 ms, of which 10010 ms not proving by its answer's own timings" \
        in message and "it waited longer than a proof takes" in message
    assert ev["median_wait_ms"] == 10_010.0 and ev["wait_bound_ms"] == 2050.0


def test_a_machine_under_load_stretches_proving_not_waiting() -> None:
    # a correct daemon a minute later on a busier machine: every lone proof takes 3x as long
    # (as a clean nightly on a shared machine can), but it waits for nothing
    slow = [_answered(6150.0 + i, total_ms=6145 + i, queue_ms=2) for i in range(3)]
    outcome, message, ev = lone_request.judge_lone(slow, BATCH, WHERE)
    assert outcome is Outcome.PASS, message
    assert ev["median_wait_ms"] == 7.0 and ev["ratio"] == 3.0


def test_a_claimed_proving_time_never_widens_the_bound_past_the_observed_wall() -> None:
    # the basis answers claim 60 s of proving, but the client saw each answered in ~2.5 s
    boastful = [replace(j, timings=replace(j.timings, total_ms=60_000)) for j in BATCH]
    bound = lone_request.lone_bound(boastful)
    assert bound is not None and bound.median_proving_ms == 2070.0  # wall - queue - SRS load
    # a hold hidden in the lone request's own timings (all of it claimed as proving) still
    # fails on its observed wall once past the wide bound
    hidden = _answered(11_900.0, total_ms=11_890, queue_ms=0)
    outcome, message, ev = lone_request.judge_lone([hidden], boastful, WHERE)
    assert outcome is Outcome.FAIL and "beyond the bound" in message, message
    assert ev["median_wait_ms"] == 10.0 and ev["bound_ms"] == 10_350.0


def test_no_basis_or_no_answer_is_an_error_not_a_pass() -> None:
    no_timings = [replace(j, timings=replace(j.timings, total_ms=0)) for j in BATCH]
    outcome, message, _ = lone_request.judge_lone([_answered(1900.0, total_ms=1890)], no_timings,
                                                  WHERE)
    assert outcome is Outcome.ERROR and "no proving time to bound it by" in message
    failed = [replace(j, status=JobStatus.FAILED, proof=b"") for j in BATCH]
    assert lone_request.judge_lone([_answered(1900.0, total_ms=1890)], failed, WHERE)[0] \
        is Outcome.ERROR
    lost = replace(job(0, JobStatus.STUCK), error="no answer")
    outcome, message, _ = lone_request.judge_lone([lost], BATCH, WHERE)
    assert outcome is Outcome.ERROR and "wpost-0 (id=id-0, STUCK) got no proof: no answer" in message


def test_the_check_sends_requests_one_at_a_time_and_judges_them_on_the_workload_run(
        workload_file: Path) -> None:
    r = run("prod", BATCH)
    lone = FlowRecord(name="lone", jobs=(_answered(11_900.0, total_ms=11_890, queue_ms=10_000),))
    ev = FakeEvidence(profiles=refprover_profiles(), workload_file=workload_file,
                      runs={"prod": r}, sent={"lone": lone})
    rec = Recorder(ev, "behaviour", "wpost-2k")  # type: ignore[arg-type]
    lone_request.check(ev, rec, "prod", "wpost-2k", "lone-request")  # type: ignore[arg-type]
    (name, specs), = ev.calls  # two held alike: a third could not change their median
    assert name == "lone" and [s.job for s in specs] == ["wpost-0", "wpost-1"]
    (bad,) = rec.records
    assert bad.outcome is Outcome.FAIL and bad.oracle == "lone-request"
    assert bad.names[0] == "config.scheduler.max_batch_size"


class _Sequenced(FakeEvidence):
    """Answers each ``send`` with the next flow of ``replies``."""

    def __init__(self, replies: list[FlowRecord], **kw: object) -> None:
        super().__init__(**kw)  # type: ignore[arg-type]
        self.replies = replies

    def send(self, profile, workload, specs, **kw):  # type: ignore[no-untyped-def, override]
        self.calls.append((kw["name"], list(specs)))
        return self.replies.pop(0)


def test_a_third_request_is_sent_only_when_two_split_on_a_bound(workload_file: Path) -> None:
    # the median of three is within a bound exactly when two of the three are: two that agree
    # decide it; a split (one within the wait bound, one held 10 s) needs the third
    quick = _answered(1900.0, total_ms=1890)
    held = _answered(11_900.0, total_ms=11_890, queue_ms=10_000)
    basis = lone_request.lone_bound(BATCH)
    assert basis is not None and not lone_request.split([quick, quick], BATCH)
    assert lone_request.split([quick, held], BATCH) and not lone_request.split([held, held], BATCH)
    assert not lone_request.split([quick, replace(held, status=JobStatus.FAILED)], BATCH)
    for third, want in ((quick, Outcome.PASS), (held, Outcome.FAIL)):
        ev = _Sequenced([FlowRecord(name="lone", jobs=(quick, held)),
                         FlowRecord(name="lone", jobs=(third,))],
                        profiles=refprover_profiles(), workload_file=workload_file,
                        runs={"prod": run("prod", BATCH)}, sent={})
        rec = Recorder(ev, "behaviour", "wpost-2k")  # type: ignore[arg-type]
        lones = lone_request.check(ev, rec, "prod", "wpost-2k", "lone-request")  # type: ignore[arg-type]
        assert [[s.job for s in specs] for _, specs in ev.calls] == [["wpost-0", "wpost-1"],
                                                                   ["wpost-2"]]
        (r,) = rec.records
        assert r.outcome is want and r.evidence["lone_requests"] == 3 == len(lones), r.message
