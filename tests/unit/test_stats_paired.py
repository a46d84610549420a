"""The paired, sequential timing gate (proofdiff.stats.paired) and its simulation model
(proofdiff.stats.power).

Seeded samples throughout. The deterministic cases build the log-ratios the verdict should
read; the statistical cases run the real sequential gate on proofdiff.stats.power's noise model
(lognormal noise, drift, warmup) and check the false-alarm rate and the power that the gate
promises, plus the boundaries themselves on 200 000 null paths.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable

import msgspec
import numpy as np
import pytest
from scipy import special, stats

from proofdiff.stats.unpaired import compare
from proofdiff.model.timing_verdict import TimingVerdict
from proofdiff.stats.paired import (DIFFERENT, INCONCLUSIVE, SAME, alpha_at_look, alpha_spent,
                                    look_sizes, paired_compare, sequential_compare, trimmed)
from proofdiff.stats.power import MEASURED, main, simulate_gate

SCHEDULE = [5, 7, 9, 10]  # tested pairs at the default looks: 6, 8, 10, 11 pairs less 1 warmup
FRACTIONS = [n / 10 for n in SCHEDULE]


def _pairs(rng: np.random.Generator, n: int, ratio: float, sigma: float,
           drift: np.ndarray | None = None) -> tuple[list[float], list[float]]:
    """``n`` interleaved pairs around 3700 ms; ``drift`` (n,) multiplies both sides of a pair."""
    level = 3700.0 * (np.ones(n) if drift is None else drift)
    b = level * np.exp(rng.normal(0.0, sigma, n))
    c = level * ratio * np.exp(rng.normal(0.0, sigma, n))
    return list(b), list(c)


def _drawer(b: np.ndarray | list[float], c: np.ndarray | list[float],
            calls: list[int] | None = None) -> Callable[[int], tuple[list[float], list[float]]]:
    pos = 0

    def draw(n: int) -> tuple[list[float], list[float]]:
        nonlocal pos
        if calls is not None:
            calls.append(n)
        out = list(b[pos:pos + n]), list(c[pos:pos + n])
        pos += n
        return out
    return draw


def test_aa_samples_are_not_different() -> None:
    rng = np.random.default_rng(1)
    v = paired_compare(*_pairs(rng, 11, 1.0, 0.01), arm="A/A")
    assert v.verdict != DIFFERENT and v.direction == "", v.render()
    assert v.verdict == SAME and 0.98 < v.ratio < 1.02, v.render()


def test_a_clear_slowdown_is_different_and_carries_its_evidence() -> None:
    rng = np.random.default_rng(2)
    b, c = _pairs(rng, 11, 1.10, 0.01)
    v = paired_compare(b, c, arm="latency bench vs candidate")
    assert v.verdict == DIFFERENT and v.direction == "slower", v.render()
    assert v.ratio == pytest.approx(1.10, rel=0.02) and v.ratio_ci[0] > 1.0
    assert (v.n_pairs, v.warmup_pairs, v.look, v.max_looks) == (10, 1, 1, 1)
    assert v.alpha_look == v.alpha_spent == v.alpha == 0.01 and v.floor_rel == 0.025
    assert v.left_samples == tuple(b) and v.right_samples == tuple(c)  # the warmup pair too
    assert v.left_summary.median == pytest.approx(float(np.median(b[1:])))
    assert v.right_summary.median == pytest.approx(float(np.median(c[1:])))
    back = msgspec.json.decode(msgspec.json.encode(v), type=TimingVerdict)
    assert back == v  # the record is its own JSON-safe evidence
    json.loads(msgspec.json.encode(v))  # plain JSON: no NaN anywhere
    assert "slower" in v.render() and "t=" in v.render() and "p=" in v.reason


def test_the_trimmed_statistics_are_scipys() -> None:
    rng = np.random.default_rng(3)
    d = list(rng.normal(0.02, 0.03, 10)) + [0.3]  # one spike among 11
    m, se, df, sd = trimmed(d, 0.2)
    assert m == pytest.approx(stats.trim_mean(d, 0.2)) and df == 11 - 2 * 2 - 1
    w = stats.mstats.winsorize(np.asarray(d), limits=(0.2, 0.2))
    assert sd == pytest.approx(float(np.std(w, ddof=1)))
    assert se == pytest.approx(sd / ((1 - 4 / 11) * math.sqrt(11)))
    b, c = _pairs(rng, 9, 1.03, 0.03)  # untrimmed: scipy's one-sample t-test and interval
    v = paired_compare(b, c, look=2, max_looks=3, trim=0.0)
    x = np.log(np.asarray(c[1:]) / np.asarray(b[1:]))
    res = stats.ttest_1samp(x, 0.0)
    lo, hi = res.confidence_interval(1 - v.alpha_look)
    assert v.ratio_ci == pytest.approx((math.exp(lo), math.exp(hi)))
    se0 = float(x.mean()) / float(res.statistic)
    assert v.statistic == pytest.approx((abs(float(x.mean())) - math.log1p(0.025)) / se0)
    assert v.df == 7 and v.alpha_look <= v.alpha_spent < v.alpha
    assert v.beta_look == pytest.approx(0.10 / 3)


def test_different_needs_the_bound_past_the_floor_not_an_estimate_beyond_half_of_it() -> None:
    """A 3.5 % change whose interval excludes 1 but reaches below the 2.5 % floor is not
    DIFFERENT (the old rule said DIFFERENT for an estimate beyond half the floor)."""
    d = [0.035 + 2 * x for x in (-0.012, 0.012, -0.010, 0.010, 0.0, -0.004, 0.004, 0.008, -0.008,
                                 0.0)]
    b = [1000.0] * 11
    c = [1000.0] + [1000.0 * math.exp(x) for x in d]
    v = paired_compare(b, c, trim=0.0)
    assert v.ratio_ci[0] > 1.0 and v.ratio_ci[0] < 1.025 < v.ratio, v.render()
    assert v.verdict == INCONCLUSIVE, v.render()
    c_far = [1000.0] + [1000.0 * math.exp(x + 0.02) for x in d]  # 5.5 %: bound past 2.5 %
    v = paired_compare(b, c_far, trim=0.0)
    assert v.verdict == DIFFERENT and v.ratio_ci[0] > 1.025, v.render()


def test_one_spike_does_not_leave_an_unchanged_image_undecided() -> None:
    rng = np.random.default_rng(12)
    b, c = _pairs(rng, 11, 1.0, 0.004)
    c[6] *= 1.3  # a neighbour's burst on one candidate sample
    assert paired_compare(b, c).verdict == SAME
    assert paired_compare(b, c, trim=0.0).verdict == INCONCLUSIVE  # the plain t-test's variance


def test_a_clear_speedup_is_different_faster() -> None:
    rng = np.random.default_rng(4)
    v = paired_compare(*_pairs(rng, 11, 0.90, 0.01))
    assert v.verdict == DIFFERENT and v.direction == "faster" and v.ratio < 0.95, v.render()


def test_a_tight_ratio_near_one_over_many_pairs_is_same() -> None:
    rng = np.random.default_rng(5)
    v = paired_compare(*_pairs(rng, 41, 1.0, 0.01))
    assert v.verdict == SAME and v.direction == "", v.render()
    assert 1 / 1.025 < v.equivalence_ci[0] < 1.0 < v.equivalence_ci[1] < 1.025
    # significant but tiny: 1 % measured with 0.1 % noise is inside the floor, not DIFFERENT
    v = paired_compare(*_pairs(rng, 21, 1.01, 0.001))
    assert v.ratio_ci[0] > 1.0 and v.verdict == SAME, v.render()


def test_too_few_pairs_after_warmup_are_inconclusive() -> None:
    v = paired_compare([3700.0, 3710.0, 3690.0], [4500.0, 4510.0, 4490.0])
    assert v.verdict == INCONCLUSIVE and v.n_pairs == 2 and v.warmup_pairs == 1
    assert "too few pairs" in v.reason and v.ratio is None
    assert json.loads(msgspec.json.encode(v))["ratio"] is None
    empty = paired_compare([], [])
    assert empty.verdict == INCONCLUSIVE and empty.n_pairs == 0


def test_drift_shared_by_a_pair_cancels() -> None:
    """Both sides ramp 1.0 -> 1.5 over the run (a machine heating up): unpaired, the ramp is
    noise that hides a 6 % slowdown and cannot show sameness; paired, it cancels."""
    rng = np.random.default_rng(6)
    ramp = np.linspace(1.0, 1.5, 11)
    b, c = _pairs(rng, 11, 1.0, 0.005, drift=ramp)
    v = paired_compare(b, c)
    assert v.verdict == SAME, v.render()
    assert compare(b[1:], c[1:], floor_rel=0.05, alpha=0.01).verdict == INCONCLUSIVE
    b, c = _pairs(rng, 11, 1.06, 0.005, drift=ramp)
    v = paired_compare(b, c)
    assert v.verdict == DIFFERENT and v.direction == "slower", v.render()
    assert compare(b[1:], c[1:], floor_rel=0.05, alpha=0.01).verdict == INCONCLUSIVE


def test_bad_input_is_refused() -> None:
    with pytest.raises(ValueError, match="pair up: 4 vs 3"):
        paired_compare([1.0] * 4, [1.0] * 3)
    with pytest.raises(ValueError, match="> 0 ms"):
        paired_compare([1.0, 0.0, 1.0, 1.0], [1.0] * 4)
    with pytest.raises(ValueError, match="> 0 ms"):
        paired_compare([1.0] * 4, [1.0, -2.0, math.nan, 1.0])
    with pytest.raises(ValueError, match="floor_rel"):
        paired_compare([1.0] * 4, [1.0] * 4, floor_rel=0)
    with pytest.raises(ValueError, match="look"):
        paired_compare([1.0] * 4, [1.0] * 4, look=3, max_looks=2)
    with pytest.raises(ValueError, match="initial"):
        sequential_compare(_drawer([], []), initial=1, warmup=1)


def test_alpha_is_spent_monotonically_and_not_by_bonferroni() -> None:
    nominal, spent = zip(*(alpha_at_look(k + 1, FRACTIONS, n, 0.01)
                           for k, n in enumerate(SCHEDULE)))
    assert all(0 < a <= s <= 0.01 for a, s in zip(nominal, spent))
    assert list(spent) == sorted(spent) and spent[-1] == pytest.approx(0.01)
    assert list(nominal) == sorted(nominal)  # O'Brien-Fleming-like: strict early, loose late
    assert nominal[0] < 0.001 and nominal[-1] > 0.01 / 4 and nominal[-1] > 0.01 - spent[-2]
    assert alpha_spent(0.0) == 0.0 and alpha_spent(1.0, 0.05) == pytest.approx(0.05)
    assert alpha_at_look(1, [1.0], 10) == pytest.approx((0.01, 0.01))  # one look: alpha itself
    assert alpha_at_look(1, [0.2], 2)[0] == 0.0  # nothing to test with 2 pairs


def test_the_boundaries_keep_the_family_wise_rate_at_alpha() -> None:
    """200 000 null runs of the four looks' t-tests against the nominal levels."""
    nominal = [alpha_at_look(k + 1, FRACTIONS, n)[0] for k, n in enumerate(SCHEDULE)]
    d = np.random.default_rng(7).standard_normal((200_000, 10))
    alive = np.ones(len(d), dtype=bool)
    for n, a in zip(SCHEDULE, nominal):
        x = d[:, :n]
        t = x.mean(axis=1) / (x.std(axis=1, ddof=1) / math.sqrt(n))
        alive &= 2.0 * special.stdtr(n - 1, -np.abs(t)) >= a
    assert 0.008 <= 1.0 - alive.mean() <= 0.0105


def test_sequential_compare_stops_early_on_a_clear_verdict() -> None:
    rng = np.random.default_rng(8)
    calls: list[int] = []
    v = sequential_compare(_drawer(*_pairs(rng, 11, 1.20, 0.01), calls), arm="big slowdown")
    assert v.verdict == DIFFERENT and v.direction == "slower", v.render()
    assert len(calls) == v.look < v.max_looks == len(look_sizes()) and sum(calls) < 21, calls
    fractions = [(n - 1) / 20 for n in look_sizes()[:v.look]]
    assert (v.alpha_look, v.alpha_spent) == alpha_at_look(v.look, fractions, v.n_pairs)
    assert v.alpha_spent < 0.01


def test_sequential_compare_spends_all_alpha_by_the_budget() -> None:
    rng = np.random.default_rng(9)
    calls: list[int] = []
    v = sequential_compare(_drawer(*_pairs(rng, 21, 1.0, 0.08), calls))
    assert v.verdict == INCONCLUSIVE and sum(calls) == 21, v.render()  # the whole budget
    assert look_sizes() == [6, 10, 14, 18, 21]
    assert (v.look, v.max_looks, v.n_pairs, v.warmup_pairs) == (5, 5, 20, 1)
    fractions = [(n - 1) / 20 for n in look_sizes()]
    assert v.alpha_spent == pytest.approx(0.01) and v.alpha_look == alpha_at_look(5, fractions,
                                                                                   20)[0]
    assert v.beta_look == pytest.approx(0.10 / 5)
    short = sequential_compare(_drawer(*_pairs(rng, 7, 1.0, 0.08)))  # the draws run out
    assert short.verdict == INCONCLUSIVE and "no more pairs" in short.reason
    assert short.n_pairs == 6 and short.look == 2 and short.alpha_spent < 0.01


def _runs(seed: int, runs: int, ratio: float, sigma: float) -> list[TimingVerdict]:
    rng = np.random.default_rng(seed)
    return [sequential_compare(_drawer(*_pairs(rng, 21, ratio, sigma))) for _ in range(runs)]


def test_a_change_at_the_floor_is_rarely_same_or_different_over_all_looks() -> None:
    """1000 sequential runs at a true change of exactly the floor (2.5 %), pair noise 3 %:
    SAME at most beta (10 %) of the time over all five looks together, DIFFERENT (slower) at
    most alpha/2 (0.5 %) plus simulation noise."""
    got = _runs(13, 1000, 1.025, 0.03 / math.sqrt(2))
    same = sum(v.verdict == SAME for v in got)
    slower = sum(v.verdict == DIFFERENT and v.direction == "slower" for v in got)
    assert same <= 100 and slower <= 10, (same, slower)


def test_power_at_a_five_percent_slowdown_within_the_budget() -> None:
    """500 runs at a true 5 % slowdown with 1 % noise per sample (bench's, README): DIFFERENT
    slower in at least 95 %, never more than 1 warmup + 20 tested pairs; an unchanged image
    under the same noise SAME in at least 99 %."""
    slow = _runs(11, 500, 1.05, 0.01)
    assert all(v.n_pairs <= 20 and len(v.left_samples) <= 21 for v in slow)
    assert sum(v.verdict == DIFFERENT and v.direction == "slower" for v in slow) >= 475
    assert sum(v.verdict == SAME for v in _runs(14, 500, 1.0, 0.01)) >= 495


def test_the_power_simulation_prints_its_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--trials", "3", "--ratios", "1", "1.05"]) == 0
    out = capsys.readouterr().out
    assert "ratio 1.00; 3 gates; PASS" in out and "ratio 1.05; 3 gates;" in out, out
    assert "DIFFERENT slower on every profile" in out and "bench rounds" in out, out


def test_the_simulated_default_gate_never_fails_an_unchanged_image_and_fails_a_slower_one() -> None:
    """The gate's own timing arm and decision (power.simulate_gate) on the modelled noise of
    bench and prod: 30 A/A gates, none FAIL (the false alarm is per gate); 15 gates with a 5 %
    slower candidate, each FAILs with bench's latency DIFFERENT slower."""
    rng = np.random.default_rng(15)
    aa = [simulate_gate(rng, MEASURED, 1.0) for _ in range(30)]
    assert [o.decision for o in aa].count("fail") == 0
    assert all(o.rounds["bench"] <= 21 and o.rounds["prod"] <= 21 for o in aa)
    slow = [simulate_gate(rng, MEASURED, 1.05) for _ in range(15)]
    assert [o.decision for o in slow] == ["fail"] * 15
    assert all("bench" in o.slower for o in slow)
