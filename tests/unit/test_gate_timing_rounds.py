"""The gate's timing arm without Docker (:mod:`proofdiff.gate.timing_rounds`): interleaving,
the one-sided verdicts, the caps sized from the noise, the family's first WORSE ending the
timing, on seeded batches of two fake sides, and what a failed, invalid or missing batch makes
of the decision."""

from __future__ import annotations

import time
from collections.abc import Sequence

import pytest

from proofdiff.gate.gate_result import Decision
from proofdiff.gate.gating import decide, timing_findings
from proofdiff.gate.timing_rounds import (BUDGET_PAIRS, Family, RoundOutcome, draw_round,
                                          measure_profile)

from tests.unit.gate_sides import FakeSides, measure


def test_a_slower_candidate_is_a_regression_and_the_sides_alternate() -> None:
    d = FakeSides(ratio=1.25)
    t = measure(d)
    assert d.calls[:4] == ["baseline#0", "candidate#0", "candidate#1", "baseline#1"]
    lat = {m.metric: m for m in t.metrics}["latency"]
    assert lat.verdict == "WORSE" and lat.direction == "slower" and lat.regression
    assert 1.2 < lat.ratio < 1.3 and lat.n_pairs == 5  # type: ignore[operator]
    assert lat.ratio_ci[0] > lat.margin + 1  # type: ignore[operator]
    assert {m.metric for m in t.metrics} == {"latency", "throughput"}  # concurrency 1
    assert t.rounds == 6  # decided at the first look: no round more


def test_the_same_image_twice_is_within_the_tolerance_at_the_first_look() -> None:
    t = measure(FakeSides(ratio=1.0, cv=0.01))
    assert [m.verdict for m in t.metrics] == ["WITHIN", "WITHIN"] and t.rounds == 6
    assert not any(m.regression for m in t.metrics)
    lat = t.metrics[0]
    assert lat.max_slowdown == 0.05 and lat.ratio_ci[1] < 1.05  # type: ignore[operator]
    assert lat.mde is not None and lat.mde < 0.05 and lat.cap_pairs >= lat.n_pairs
    decision, line, _ = decide([], [], [t], aa=True)
    assert decision is Decision.PASS and "A/A" in line and "WITHIN" in line


def test_a_faster_candidate_never_fails_on_timing() -> None:
    t = measure(FakeSides(ratio=0.8))
    lat = {m.metric: m for m in t.metrics}["latency"]
    assert lat.verdict == "WITHIN" and lat.direction == "faster" and not lat.regression
    assert decide([], [], [t], aa=False)[0] is Decision.PASS


def test_a_slowdown_inside_the_tolerance_passes_and_says_it_is_slower() -> None:
    # 2 % slower at 0.1 % noise: shown slower than the 1 % margin and less than 5 % slower:
    # the question asked is whether it is 5 % worse, and it is shown not to be
    t = measure(FakeSides(ratio=1.02, cv=0.001))
    lat = t.metrics[0]
    assert lat.verdict == "WITHIN" and lat.direction == "slower" and not lat.regression
    assert "within the tolerance" in lat.reason, lat.reason


def test_noise_that_cannot_decide_the_tolerance_is_inconclusive_early_naming_it() -> None:
    t = measure(FakeSides(ratio=1.0, cv=0.4))  # 40 % a batch: 5 % is beyond any cap
    assert t.rounds == 16, t.rounds  # 15 tested pairs, not the 61 rounds of --rounds
    lat = t.metrics[0]
    assert lat.verdict == "INCONCLUSIVE" and lat.cap_pairs == lat.n_pairs == 15
    assert lat.mde is not None and lat.mde > 0.05
    assert "decides a tolerance of" in lat.reason and "not sampled further" in lat.reason
    decision, _line, why = decide([], [], [t], aa=True)
    assert decision is Decision.INCONCLUSIVE and "not the 5.0% asked" in why[0], why


def test_a_metric_stops_at_the_cap_its_noise_calls_for() -> None:
    t = measure(FakeSides(ratio=1.03, cv=0.04))  # inside the zone where either answer is right
    lat = t.metrics[0]
    assert lat.cap_pairs < BUDGET_PAIRS - 1 and lat.n_pairs <= lat.cap_pairs, lat
    assert t.rounds <= lat.cap_pairs + 1


def test_in_progress_is_compared_only_when_jobs_can_overlap() -> None:
    t = measure(FakeSides(ratio=1.0, cv=0.01), concurrency=2)
    assert {m.metric for m in t.metrics} == {"latency", "throughput", "in-progress",
                                             "lone-latency"}
    (inp,) = [m for m in t.metrics if m.metric == "in-progress"]
    assert inp.unit == "jobs" and inp.worse == "lower"


def test_a_candidate_that_holds_a_lone_request_is_slower_on_lone_latency_only() -> None:
    """Batches of 2 on both sides take the same time; the candidate holds a request that comes
    alone 1.5x as long (a batch that waits to fill): only the lone request of each round shows it."""
    d = FakeSides(ratio=1.0, cv=0.01, lone_ratio=1.5)
    t = measure(d, concurrency=2)
    assert d.calls[:4] == ["baseline#0", "baseline#0:lone", "candidate#0", "candidate#0:lone"]
    by = {m.metric: m for m in t.metrics}
    assert by["lone-latency"].verdict == "WORSE" and by["lone-latency"].regression
    assert by["latency"].verdict != "WORSE" and not by["latency"].regression


def test_a_candidate_batch_that_fails_is_a_blocking_finding() -> None:
    t = measure(FakeSides(ratio=1.0, broken_after=5))  # round 2: baseline, then candidate
    assert t.stopped.startswith("round 2 on the candidate") and "FAILED" in t.stopped
    assert len(t.faults) == 1 and t.faults[0].startswith("round 2: wpost-0 (id=candidate#2-0, "
                                                         "FAILED)")
    (f,) = timing_findings([t])
    assert (f.check, f.profile, f.kind) == ("timing-batch/jobs", "bench", "check")
    decision, line, _ = decide([f], [], [t], aa=False)
    assert decision is Decision.FAIL and "timing-batch/jobs on bench" in line


def test_an_invalid_proof_in_a_candidate_batch_is_a_blocking_finding() -> None:
    t = measure(FakeSides(ratio=1.0, cv=0.01, invalid_after=5))  # round 2: candidate second
    assert t.faults == ("round 2: wpost-0 (id=candidate#2-0, COMPLETED): the pinned verifier "
                        "rejects its proof (partitions [0])",)
    assert t.stopped.startswith("round 2 on the candidate")
    decision, _, _ = decide(timing_findings([t]), [], [t], aa=False)
    assert decision is Decision.FAIL


def test_a_baseline_batch_that_fails_stops_the_arm_and_is_no_pass() -> None:
    t = measure(FakeSides(ratio=1.0, broken_after=4))  # round 2 on the baseline
    assert t.stopped.startswith("round 2 on the baseline") and not t.faults
    decision, line, why = decide(timing_findings([t]), [], [t], aa=False)
    assert decision is Decision.INCONCLUSIVE and decision.exit_code == 2
    assert why[0].startswith("bench/wpost-2k (round 2 on the baseline"), why


def test_rounds_cap_the_arm_and_its_one_look_spends_the_whole_error_rates() -> None:
    # --rounds 6: one look (5 tested pairs), at the full levels, where the default schedule's
    # first look spends a sliver of them. A noisy A/A arm that the default schedule takes past
    # the first look is decided at it; a slowdown plain in 5 pairs is found there
    assert measure(FakeSides(ratio=1.0, cv=0.06)).rounds > 6
    t = measure(FakeSides(ratio=1.0, cv=0.06), rounds=6)
    assert t.rounds == 6 and {m.verdict for m in t.metrics} == {"WITHIN"}, t.metrics
    assert t.metrics[0].max_pairs == 5 and t.metrics[0].cap_pairs == 5
    slow = measure(FakeSides(ratio=1.25), rounds=6)
    lat = {m.metric: m for m in slow.metrics}["latency"]
    assert slow.rounds == 6 and lat.verdict == "WORSE" and lat.regression, lat


def test_an_exhausted_budget_is_inconclusive_with_the_reason() -> None:
    t = measure(FakeSides(ratio=1.0), deadline_s=-1)
    assert t.rounds == 0 and "--budget-s" in t.stopped


def test_the_first_worse_ends_the_gates_timing_and_every_share_is_bonferronis() -> None:
    fam = Family(alpha=0.05, size=6)
    t = measure_profile(FakeSides(ratio=1.25).send, profile="bench", workload="wpost-2k",
                        jobs=["a", "b"], sides=("bench-baseline", "bench-candidate"),
                        concurrency=1, deadline=time.monotonic() + 60, floors={}, family=fam)
    assert [m.verdict for m in t.metrics] == ["WORSE", "WORSE"]
    assert fam.failed == "latency on bench/wpost-2k"
    assert [m.alpha for m in t.metrics] == [pytest.approx(0.05 / 6)] * 2
    # the next arm is not timed: the gate fails whatever it would show
    later = measure_profile(FakeSides(ratio=1.0).send, profile="prod", workload="wpost-2k",
                            jobs=["a", "b"], sides=("prod-baseline", "prod-candidate"),
                            concurrency=2, deadline=time.monotonic() + 60, floors={},
                            family=fam)
    assert later.rounds == 0 and later.stopped.startswith("the gate already fails on timing")
    decision, line, _ = decide(timing_findings([t, later]), [], [t, later], aa=False)
    assert decision is Decision.FAIL and "timing/latency on bench" in line


def test_a_profiles_timing_floor_is_its_own_tolerance() -> None:
    t = measure_profile(FakeSides(ratio=1.08, cv=0.005).send, profile="bench",
                        workload="wpost-2k", jobs=["a"], sides=("bench-baseline",
                                                                "bench-candidate"),
                        concurrency=1, deadline=time.monotonic() + 60,
                        floors={"latency": 0.10, "throughput": 0.10})
    assert [m.verdict for m in t.metrics] == ["WITHIN", "WITHIN"]  # 8 % < the 10 % tolerated
    assert t.metrics[0].max_slowdown == 0.10


class _Waves:
    """Rounds drawn ``width`` at a time, round k on host ``h{k % width}`` (a fleet's
    :class:`~proofdiff.gate.timing_rounds.Rounds`, each round still both sides on one host);
    ``lost_at``: that round's host goes away."""

    def __init__(self, d: FakeSides, width: int, lost_at: int | None = None) -> None:
        self.d, self.width, self.lost_at = d, width, lost_at
        self.waves: list[list[int]] = []

    def draw(self, ks: Sequence[int]) -> list[RoundOutcome]:
        self.waves.append(list(ks))
        out = []
        for k in ks:
            if k == self.lost_at:
                out.append(RoundOutcome(None, stopped=f"round {k}: host h{k % self.width} "
                                                      "went away"))
                continue
            o = draw_round(self.d.send, k, jobs=["a", "b"], sides=("bench-baseline",
                                                                   "bench-candidate"),
                           concurrency=1)
            out.append(o._replace(host=f"h{k % self.width}"))
        return out


def test_rounds_drawn_on_several_hosts_at_once_are_pooled_in_round_order() -> None:
    waves = _Waves(FakeSides(ratio=1.25), width=3)
    t = measure_profile(profile="bench", workload="wpost-2k", jobs=[],
                        sides=("bench-baseline", "bench-candidate"), concurrency=1,
                        deadline=time.monotonic() + 60, floors={}, rounds_at=waves)
    # the first look wants 6 pairs: two waves of three, one round per host in each
    assert waves.waves[:2] == [[0, 1, 2], [3, 4, 5]], waves.waves
    assert t.rounds == sum(t.hosts.values()) and set(t.hosts) == {"h0", "h1", "h2"}
    lat = {m.metric: m for m in t.metrics}["latency"]
    assert lat.verdict == "WORSE" and lat.regression and lat.n_pairs == t.rounds - 1


def test_a_round_lost_with_its_host_stops_the_arm_naming_it_and_is_no_pass() -> None:
    t = measure_profile(profile="bench", workload="wpost-2k", jobs=[],
                        sides=("bench-baseline", "bench-candidate"), concurrency=1,
                        deadline=time.monotonic() + 60, floors={},
                        rounds_at=_Waves(FakeSides(ratio=1.0, cv=0.01), width=3, lost_at=4))
    assert t.rounds == 4 and t.stopped == "round 4: host h1 went away" and not t.faults
    decision, _line, why = decide(timing_findings([t]), [], [t], aa=True)
    assert decision is Decision.INCONCLUSIVE and "host h1 went away" in why[0], why
