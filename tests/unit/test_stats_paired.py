"""The gate's one-sided, paired, sequential timing question (proofdiff.stats.paired and its
boundaries, proofdiff.stats.boundaries) and the simulation of whole gates from measured samples
(proofdiff.stats.power).

Seeded throughout. The deterministic cases build the log-ratios a verdict should read; the
statistical cases run the sequential question on seeded normal pairs and check its two error
rates where they are defined (a candidate at the margin: false WORSE; at the tolerance: false
WITHIN); the recorded cases replay and resample the three real gates on an H100 host
(tests/data/gates/h100/, PROVENANCE.md beside them).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import msgspec
import numpy as np
import pytest
from scipy import stats

from proofdiff.gate.arm_judge import ArmJudge, Family, run_arm
from proofdiff.gate.decision import decide, timing_findings
from proofdiff.gate.gate_result import ProfileTiming
from proofdiff.gate.timing_rounds import specs_of
from proofdiff.model.timing_verdict import TimingVerdict
from proofdiff.stats.boundaries import PATHS, critical_values, spent, trimmed
from proofdiff.stats.paired import (INCONCLUSIVE, WITHIN, WORSE, Question, look, paired_verdict,
                                    sequential_verdict)
from proofdiff.stats.power import Pool, load_pools, main, simulate_gate, tally

H100 = Path(__file__).resolve().parents[1] / "data" / "gates" / "h100"
#: One metric of a default gate: 6 metrics share the 5 % family-wise level, 60 pairs at most.
Q = Question(alpha=0.05 / 6, max_pairs=60)


def _pairs(d: list[float] | np.ndarray) -> tuple[list[float], list[float]]:
    """Baseline and candidate samples (a warm-up pair first) whose log-ratios are ``d``."""
    return [1000.0] * (len(d) + 1), [1000.0] + [1000.0 * math.exp(x) for x in d]


def test_an_unchanged_candidate_is_within_and_carries_its_evidence() -> None:
    rng = np.random.default_rng(1)
    b, c = _pairs(rng.normal(0.0, 0.02, 8))
    v = paired_verdict(b, c, Q, arm="latency bench")
    assert v.verdict == WITHIN and not v.regression, v.render()
    assert v.ratio_ci[1] < 1.05 and (v.n_pairs, v.warmup_pairs) == (8, 1)  # type: ignore[operator]
    assert v.max_slowdown == 0.05 and v.margin == pytest.approx(math.expm1(0.2 * math.log(1.05)))
    assert v.alpha == pytest.approx(0.05 / 6) and v.beta == 0.10 and v.max_pairs == 60
    assert v.mde is not None and 0.0 < v.mde < 0.05 and v.log_ratio_sd is not None
    assert v.left_samples == tuple(b) and v.right_samples == tuple(c)  # the warm-up pair too
    back = msgspec.json.decode(msgspec.json.encode(v), type=TimingVerdict)
    assert back == v  # the record is its own JSON-safe evidence
    json.loads(msgspec.json.encode(v))  # plain JSON: no NaN anywhere
    text = v.render()
    assert "max slowdown 5.0 %" in text and "MDE" in text and "noise sd" in text


def test_a_clear_slowdown_is_worse_and_a_faster_candidate_is_within() -> None:
    rng = np.random.default_rng(2)
    v = paired_verdict(*_pairs(rng.normal(math.log(1.10), 0.01, 6)), Q)
    assert v.verdict == WORSE and v.regression and v.direction == "slower", v.render()
    assert v.ratio_ci[0] > 1.01 and v.ratio == pytest.approx(1.10, rel=0.02)  # type: ignore[operator]
    v = paired_verdict(*_pairs(rng.normal(math.log(0.90), 0.01, 6)), Q)
    assert v.verdict == WITHIN and v.direction == "faster" and not v.regression


def test_jobs_in_progress_are_worse_when_lower() -> None:
    rng = np.random.default_rng(3)
    q = Question(max_slowdown=0.25, alpha=0.05 / 6, max_pairs=60)
    b = [3.0] * 9
    fewer = [3.0] + [3.0 * math.exp(x) for x in rng.normal(math.log(0.6), 0.01, 8)]
    v = paired_verdict(b, fewer, q, worse="lower", unit="jobs", metric="in-progress")
    assert v.verdict == WORSE and v.direction == "lower" and v.ratio < 0.65  # type: ignore[operator]
    assert v.ratio_ci[1] < 1.0  # type: ignore[operator]
    more = [3.0] + [3.0 * math.exp(x) for x in rng.normal(math.log(1.3), 0.01, 8)]
    v = paired_verdict(b, more, q, worse="lower", unit="jobs")
    assert v.verdict == WITHIN and v.direction == "higher"


def test_the_trimmed_statistics_are_scipys() -> None:
    rng = np.random.default_rng(3)
    d = list(rng.normal(0.02, 0.03, 10)) + [0.3]  # one spike among 11
    m, se, df, sd = trimmed(d, 0.2)
    assert m == pytest.approx(stats.trim_mean(d, 0.2)) and df == 11 - 2 * 2 - 1
    w = stats.mstats.winsorize(np.asarray(d), limits=(0.2, 0.2))
    assert se == pytest.approx(float(np.std(w, ddof=1)) / ((1 - 4 / 11) * math.sqrt(11)))
    assert sd == pytest.approx(se * math.sqrt(11))
    m0, se0, df0, _ = trimmed(d, 0.0)  # untrimmed: scipy's one-sample t-test
    res = stats.ttest_1samp(d, 0.0)
    assert m0 / se0 == pytest.approx(float(res.statistic)) and df0 == 10


def test_one_spike_in_a_long_series_is_trimmed() -> None:
    rng = np.random.default_rng(12)
    d = list(rng.normal(0.0, 0.01, 20))
    d[7] = 0.3  # a neighbour's burst on one candidate sample
    assert look(d, Question(alpha=0.02, max_pairs=30)).verdict == WITHIN
    assert look(d, Question(alpha=0.02, max_pairs=30, trim=0.0)).verdict == INCONCLUSIVE


def test_too_few_pairs_want_the_first_look() -> None:
    v = paired_verdict([3700.0, 3710.0, 3690.0], [4500.0, 4510.0, 4490.0], Q)
    assert v.verdict == INCONCLUSIVE and v.n_pairs == 2 and v.cap_pairs == 5
    assert "the first look is at 5" in v.reason and v.ratio is None


def test_bad_input_is_refused() -> None:
    with pytest.raises(ValueError, match="pair up"):
        paired_verdict([1.0, 2.0], [1.0], Q)
    with pytest.raises(ValueError, match="finite and > 0"):
        paired_verdict([1.0, 0.0], [1.0, 1.0], Q)
    with pytest.raises(ValueError, match="worse"):
        paired_verdict([1.0], [1.0], Q, worse="up")
    with pytest.raises(ValueError, match="max_slowdown"):
        Question(max_slowdown=5.0)
    with pytest.raises(ValueError, match="first <= max_pairs"):
        Question(max_pairs=3)


def test_spending_is_monotone_and_spends_the_level_by_the_last_look() -> None:
    for gamma in (-2.0, 0.0, 1.0):
        xs = [spent(t / 20, 0.01, gamma) for t in range(21)]
        assert xs[0] == 0.0 and xs[-1] == 0.01 and all(a <= b for a, b in zip(xs, xs[1:]))
    assert spent(0.5, 0.01, 0.0) == pytest.approx(0.005)
    assert spent(0.5, 0.01, 1.0) > 0.005 > spent(0.5, 0.01, -2.0)


def test_the_boundaries_keep_each_questions_rate_on_fresh_null_paths() -> None:
    """Fresh seeded paths (not the ones that placed them) cross the WORSE boundary at its
    level and the WITHIN one at its level, over all 16 looks of a 20-pair schedule."""
    worse, within = critical_values(5, 20, 0.1, ((0.01, 0.0), (0.10, 1.0)))
    x = np.random.default_rng(99).standard_normal((20_000, 20))
    hit_worse = np.zeros(len(x), dtype=bool)
    hit_within = np.zeros(len(x), dtype=bool)
    for k, n in enumerate(range(5, 21)):
        s = np.sort(x[:, :n], axis=1)
        g = int(0.1 * n)
        w = np.clip(s, s[:, [g]], s[:, [n - g - 1]])
        z = s[:, g:n - g].mean(axis=1) / (w.std(axis=1, ddof=1) / ((1 - 2 * g / n)
                                                                    * math.sqrt(n)))
        hit_worse |= z >= worse[k]
        hit_within |= z >= within[k]
    assert PATHS >= 1 << 16
    assert stats.binomtest(int(hit_worse.sum()), len(x), 0.01).pvalue > 0.001, hit_worse.mean()
    assert stats.binomtest(int(hit_within.sum()), len(x), 0.10).pvalue > 0.001, hit_within.mean()


@pytest.mark.parametrize("sigma", [0.02, 0.06])
def test_both_error_rates_hold_over_all_looks_and_caps(sigma: float) -> None:
    """The sequential question on seeded normal pairs (its caps from its noise, its early
    undecidable stop): at the margin WORSE at most alpha, at the tolerance WITHIN at most beta
    (each with a 99.9 % binomial allowance for the simulation's own noise)."""
    q = Question(alpha=0.02, max_pairs=30)  # a larger alpha: its rate is measurable in 600
    rng = np.random.default_rng(int(sigma * 1000))
    trials = 600

    def outcome(theta: float) -> list[str]:
        out = []
        for _ in range(trials):
            d = rng.normal(theta, sigma, q.max_pairs)
            n = q.first
            while True:
                at = look(d[:n], q)
                if at.verdict is not INCONCLUSIVE or at.stop or n >= (at.cap or q.max_pairs):
                    out.append(at.verdict.value)
                    break
                n += 1
        return out

    at_margin = outcome(q.margin)
    at_delta = outcome(q.delta)
    worse = at_margin.count("WORSE")
    within = at_delta.count("WITHIN")
    assert stats.binomtest(worse, trials, q.alpha, alternative="greater").pvalue > 0.001, worse
    assert stats.binomtest(within, trials, q.beta, alternative="greater").pvalue > 0.001, within
    assert at_delta.count("WORSE") > trials // 2  # and the power is there


def test_noise_too_large_for_the_tolerance_stops_early_naming_it() -> None:
    rng = np.random.default_rng(5)
    b, c = _pairs(rng.normal(0.0, 0.25, 15))
    v = paired_verdict(b, c, Q)
    assert v.verdict == INCONCLUSIVE and v.cap_pairs == v.n_pairs == 15
    assert v.mde is not None and v.mde > 0.05 and "not the 5.0% asked" in v.reason


def test_sequential_verdict_stops_at_the_first_decision() -> None:
    rng = np.random.default_rng(6)
    d = list(rng.normal(0.0, 0.01, 60))
    calls: list[int] = []

    def draw(n: int) -> tuple[list[float], list[float]]:
        calls.append(n)
        got = d[sum(calls) - n:sum(calls)]
        return [1000.0] * n, [1000.0 * math.exp(x) for x in got]
    v = sequential_verdict(draw, Q)
    assert v.verdict == WITHIN and calls[0] == 6 and v.n_pairs == sum(calls) - 1 < 10, calls


def _replay(name: str) -> tuple[str, list[ProfileTiming]]:
    """A recorded gate's paired samples, in the order drawn, through the gate's decision:
    every metric judged after each round, the first WORSE ending the timing."""
    doc = json.loads((H100 / f"{name}.summary.json").read_text())
    fam = Family(size=sum(len(t["metrics"]) for t in doc["timing"]))
    out = []
    for t in doc["timing"]:
        got = {m["metric"]: m for m in t["metrics"]}
        have = min(len(m["left_samples"]) for m in t["metrics"]
                   if m["metric"] != "in-progress")  # the old gate stopped in-progress early
        judge = ArmJudge(t["profile"], t["workload"], specs_of(
            t["concurrency"], {}, max_slowdown=0.05, alpha=fam.share(), max_pairs=60))
        drawn = [0]

        def wave(k: int) -> tuple[int, str]:
            drawn[0] = k + 1
            return drawn[0], "the recorded rounds ran out" if drawn[0] >= have else ""

        def samples() -> dict[str, tuple[list[float], list[float]]]:
            return {m: (got[m]["left_samples"][:drawn[0]], got[m]["right_samples"][:drawn[0]])
                    for m in judge.specs}

        if fam.failed:
            out.append(ProfileTiming(profile=t["profile"], workload=t["workload"],
                                     concurrency=t["concurrency"], stopped="not timed"))
            continue
        n, stopped = run_arm(judge, fam, wave, samples, budget_pairs=61, deadline=1e9,
                             clock=lambda: 0.0)
        out.append(ProfileTiming(profile=t["profile"], workload=t["workload"],
                                 concurrency=t["concurrency"], rounds=n, stopped=stopped,
                                 metrics=judge.verdicts(stopped)))
    return decide(timing_findings(out), [], out, aa=name == "gate-aa")[0].value, out


def test_the_recorded_h100_gates_replayed_in_their_order() -> None:
    """The A/A gate PASSes (bench at 5 pairs, prod at 9), the 5 % and 10 % slower candidates
    FAIL on bench within their recorded rounds (21 and 14), where the gate they were recorded
    by was undecided on the first two."""
    aa, timing = _replay("gate-aa")
    assert aa == "pass", [m.line() for t in timing for m in t.metrics]
    assert all(m.verdict == WITHIN for t in timing for m in t.metrics)
    assert max(t.rounds for t in timing) <= 21
    for name, most in (("gate-slow1.05", 21), ("gate-slow1.10", 14)):
        got, timing = _replay(name)
        assert got == "fail", [m.line() for t in timing for m in t.metrics]
        (bench,) = [t for t in timing if t.profile == "bench"]
        assert bench.rounds <= most and {m.verdict for m in bench.metrics} == {WORSE}


@pytest.fixture(scope="module")
def h100_pools() -> dict[str, list[Pool]]:
    return {n: load_pools(H100 / f"{n}.summary.json") for n in ("gate-aa", "gate-slow1.05")}


def test_simulated_gates_from_the_measured_h100_samples(h100_pools: dict[str, list[Pool]]
                                                        ) -> None:
    """Whole gates resampled from the measured rounds (proofdiff.stats.power): A/A (signs
    flipped at random: exchangeable sides) never FAILs more than the 5 % family-wise level
    allows and mostly PASSes; the measured +5 % candidate FAILs; its negation (5 % faster)
    never FAILs. 100 gates each: a check of the wiring and the rates' order, the full tables
    are benchmarks/gate_sim.py's records."""
    rng = np.random.default_rng(20261207)
    aa = tally([simulate_gate(rng, h100_pools["gate-aa"], "aa") for _ in range(100)])
    assert aa.failed <= 12 and aa.passed >= 80, aa.line()  # 5 % of 100, 99.9 % allowance
    slow = tally([simulate_gate(rng, h100_pools["gate-slow1.05"], "measured")
                  for _ in range(100)])
    assert slow.failed >= 90 and slow.passed == 0, slow.line()
    fast = tally([simulate_gate(rng, h100_pools["gate-slow1.05"], "negated")
                  for _ in range(100)])
    assert fast.failed == 0 and fast.passed >= 90, fast.line()


def test_the_power_simulation_prints_its_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--samples", str(H100 / "gate-aa.summary.json"), "--trials", "20",
                 "--condition", "aa", "1.10"]) == 0
    out = capsys.readouterr().out
    assert "aa: PASS" in out and "1.10: PASS 0/20" in out and "noise latency" in out
