"""Paired, sequential timing comparisons: the verdict that may gate an image push.

The unpaired :func:`proofdiff.stats.unpaired.compare` needs ~25 % effects; a gate has to catch a 5 %
slowdown in at most ~10 samples per side. Two things make that possible here:

* **Pairing.** The caller interleaves the sides (baseline, candidate, baseline, candidate, ...)
  and pair ``i`` is (``baseline_ms[i]``, ``candidate_ms[i]``). The test is on the paired
  log-ratios ``d_i = log(candidate_i / baseline_i)``: slow machine drift (thermal, frequency,
  a neighbour's load), shared by adjacent samples, cancels in ``d_i`` instead of widening both
  samples. Drift WITHIN a pair does not: the candidate always runs second, so a machine that
  heats up fast reads as a slowdown; where that is a risk, alternate the order inside the pairs
  (B C, C B, ...): only adjacency matters here. The first ``warmup`` pairs (default 1) are kept
  in the evidence but not tested.
* **The test: a one-sample t-test on ``d``** (``scipy.stats.ttest_1samp``'s statistic and
  p, computed with the ``scipy.special`` functions that it calls, 10x faster). Timing noise is
  multiplicative, so ``d`` is close to normal and the t-test exact; the ratio estimate is
  ``exp(mean d)`` (the geometric-mean ratio: the ratio of medians under lognormal noise) with a
  t interval. Not the Wilcoxon signed-rank test: with n pairs its smallest two-sided p is
  ``2 / 2**n`` (n=7: 0.0156, n=10: 0.00195), above the levels that a 1 % family-wise alpha
  leaves for all but the last looks, and its interval is as coarse as its p, so SAME is out of
  reach at n <= 10. Simulated power at a 5 % slowdown, CV 2 % (proofdiff.stats.power's model):
  t-test ~93 %, signed-rank ~87 %; with 5 % of samples spiked +30 %, ~44 % and ~52 %. A spike
  inflates the t-test's variance: it costs power (INCONCLUSIVE), not false alarms (the A/A
  rates are lower with spikes).
  Screening outliers first (MAD or generalized-ESD rules) won the power back but pushed the A/A
  false-alarm rate above 1 % at small n (the screen fires when the other pairs are tight).

Three values, with ``L = log(1 + floor_rel)`` and ``alpha_look`` the nominal level of this look:

- ``SAME``: the (1 - 2 alpha_look) interval of the ratio lies inside ``[1/(1+floor), 1+floor]``
  (TOST equivalence at level alpha_look: at a floor-sized change a look says SAME with
  probability <= alpha_look). Checked first: a change shown to be below the floor is never
  DIFFERENT.
- ``DIFFERENT``: p < alpha_look (the (1 - alpha_look) interval excludes 1) and not SAME. That
  makes the change practically relevant too: with h1 > h2 the half-widths of the two intervals,
  significance puts ``|mean d| >= h1 > h2`` and not-SAME puts ``|mean d| + h2 >= L``, so the
  estimate is beyond HALF the floor (``|mean d| > L/2``) and its interval reaches the floor.
  Asking for the estimate beyond the floor itself would fire only half the time at a true
  change of exactly the floor (~50 % power); this rule keeps the power there, while a
  significant 1 % change measured with little noise is SAME, not DIFFERENT. Changes between
  L/2 and L are a grey zone where either verdict may come. ``direction`` says ``slower``
  (candidate takes longer) or ``faster``.
- ``INCONCLUSIVE``: neither (or fewer than 3 pairs after warmup).

Sequential testing (:func:`sequential_compare`) adds pairs while INCONCLUSIVE and spends the
family-wise alpha over the looks with the Lan-DeMets O'Brien-Fleming-like spending function
``alpha(t) = 2 - 2 Phi(z_{1-alpha/2} / sqrt(t))``, t = tested pairs / most tested pairs. Each
look's nominal level comes from a group-sequential boundary on the t statistic, ``c_k`` such
that the null paths crossing at look k or before make up ``alpha(t_k)``: exact from the t
distribution at the first tested look, from 2**18 simulated null paths (fixed seed: the same
levels on every run, cached per schedule) at the later ones. With 5, 7, 9, 10 tested pairs and
alpha 1 % the levels are 0.00027, 0.0017, 0.0052, 0.0065 (Bonferroni over the spent increments
would leave 0.0034 for the last look). Normal-theory boundaries are not enough here: applied to
the t-tests' p they gave a family-wise rate of 1.12 % for 1 % (successive t statistics, each
with its own variance estimate, are less correlated than z's); these give 0.97 % (10**6 null
runs). O'Brien-Fleming rather than Pocock because the budget is tiny and the power is needed
at its end: Pocock-like spending ``alpha log(1 + (e - 1) t)`` leaves 0.0020 for the last look
(simulated power at a 5 % change, CV 2 %: 83 % against 93 %); early looks still stop on big
effects. Stopping for SAME is a non-binding futility stop, which can only lower the rate.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import Any

import numpy as np
from msgspec.structs import replace
from scipy import special  # type: ignore[import-untyped]

from proofdiff.model.timing_verdict import TimingVerdict, json_safe, json_safe_all
from proofdiff.stats.unpaired import (DIFFERENT, INCONCLUSIVE, SAME, direction_of,
                                      is_regression, summarize)

__all__ = ["DIFFERENT", "INCONCLUSIVE", "SAME", "alpha_at_look", "alpha_spent",
           "paired_compare", "sequential_compare"]

#: Default effect-size floor of the gate: 5 %.
DEFAULT_FLOOR_REL = 0.05
#: Default family-wise significance level (all looks together).
DEFAULT_ALPHA = 0.01
#: Fewer tested pairs than this can never give SAME or DIFFERENT.
MIN_PAIRS = 3
TEST = "paired t-test on log-ratios"
_PATHS = 1 << 18  # simulated null paths that place the t-test's boundaries
_SEED = 20240601


def alpha_spent(t: float, alpha: float = DEFAULT_ALPHA) -> float:
    """Lan-DeMets O'Brien-Fleming-like spending: the two-sided alpha spent up to information
    fraction ``t`` (0 at t <= 0, ``alpha`` at t >= 1), ``2 - 2 Phi(z_{1-alpha/2} / sqrt(t))``."""
    if t <= 0 or t >= 1:
        return 0.0 if t <= 0 else alpha
    return float(2.0 * special.ndtr(special.ndtri(alpha / 2.0) / math.sqrt(t)))


@lru_cache(maxsize=256)
def _levels(ns: tuple[int, ...], ts: tuple[float, ...], alpha: float) -> tuple[float, ...]:
    """Nominal two-sided level of the t-test at each look (``ns`` tested pairs, information
    fractions ``ts``): boundaries ``c_k`` on ``|T_k|`` such that the null paths crossing at
    look k or before make up ``alpha_spent(t_k)``. The first tested look is exact (the t
    distribution); the later ones are quantiles of ``|T_k|`` among the not yet crossed paths of
    _PATHS simulated null paths (fixed seed: the same levels on every run)."""
    rng = np.random.default_rng(_SEED)
    s1, s2 = np.zeros(_PATHS), np.zeros(_PATHS)
    alive = np.ones(_PATHS, dtype=bool)
    have = crossed = 0
    out: list[float] = []
    for i, (n, t) in enumerate(zip(ns, ts)):
        quota = round(alpha_spent(t, alpha) * _PATHS) - crossed
        if n < MIN_PAIRS or quota <= 0:  # untested, or nothing left to spend here
            out.append(0.0)
            continue
        first = not any(out)  # nothing crossed before: the marginal t distribution is exact
        if first:
            c = -float(special.stdtrit(n - 1, alpha_spent(t, alpha) / 2.0))
            if i == len(ns) - 1:  # the only tested look: nothing to simulate
                out.append(alpha_spent(t, alpha))
                break
        if n > have:
            x = rng.standard_normal((_PATHS, n - have))
            s1, s2, have = s1 + x.sum(axis=1), s2 + (x * x).sum(axis=1), n
        mean = s1 / n
        t_abs = np.abs(mean) / np.sqrt(np.maximum(s2 - n * mean * mean, 1e-300) / (n - 1) / n)
        if not first:
            live = t_abs[alive]
            k = len(live) - quota  # the quota largest |T| of the live paths cross
            c = 0.0 if k <= 0 else float(np.partition(live, (k - 1, k))[k - 1:k + 1].mean())
        hit = alive & (t_abs >= c)
        crossed += int(hit.sum())
        alive &= ~hit
        # P(|T_k| >= c_k) <= alpha_spent(t_k) in theory; min() keeps simulation noise out
        out.append(min(float(2.0 * special.stdtr(n - 1, -c)), alpha_spent(t, alpha)))
    return tuple(out)


def alpha_at_look(look: int, fractions: Sequence[float], n_pairs: int,
                  alpha: float = DEFAULT_ALPHA) -> tuple[float, float]:
    """``(nominal, spent)`` at ``look`` (1-based): the two-sided level that the t-test's p of
    this look is compared with, and the family-wise alpha spent up to it (``<= alpha``;
    ``alpha`` at fraction 1). 0.0 nominal where nothing can be tested (< 3 pairs).

    Args:
        fractions: information fractions of looks 1..look or more (tested pairs / most tested
            pairs), non-decreasing in (0, 1]; only the first ``look`` are used.
        n_pairs: tested pairs at this look; the earlier looks had ``n_pairs * t_j / t_look``
            (the t-test's degrees of freedom change the boundaries).

    Raises:
        ValueError: ``look`` out of range, fractions not in (0, 1] or decreasing, alpha not in
            (0, 1), ``n_pairs < 0``.
    """
    ts = tuple(float(t) for t in fractions[:look])
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    if look < 1 or len(ts) < look or n_pairs < 0:
        raise ValueError(f"look {look} needs {look} information fractions and n_pairs >= 0, got "
                         f"{len(fractions)} and {n_pairs}")
    if any(not 0.0 < t <= 1.0 for t in ts) or any(b < a for a, b in zip(ts, ts[1:])):
        raise ValueError(f"information fractions must be non-decreasing in (0, 1]: {ts}")
    ns = tuple(round(n_pairs * t / ts[-1]) for t in ts)
    return _levels(ns, ts, alpha)[-1], alpha_spent(ts[-1], alpha)


def paired_compare(baseline_ms: Sequence[float], candidate_ms: Sequence[float], *,
                   arm: str = "", metric: str = "latency ms", left: str = "baseline",
                   right: str = "candidate", floor_rel: float = DEFAULT_FLOOR_REL,
                   alpha: float = DEFAULT_ALPHA, warmup: int = 1, look: int = 1,
                   max_looks: int = 1, fractions: Sequence[float] | None = None,
                   unit: str = "ms", worse: str = "") -> TimingVerdict:
    """Compare interleaved samples pair by pair; see the module docstring.

    Args:
        baseline_ms, candidate_ms: samples in drawing order (ms, > 0), equal length; pair i is
            (baseline_ms[i], candidate_ms[i]). warmup: leading pairs not tested (default 1).
        floor_rel: effect-size floor (default 0.05 = 5 %). alpha: family-wise level (0.01).
        look, max_looks: this look's number and how many are planned (default 1 of 1: alpha).
        fractions: information fractions of looks 1..look (default equally spaced,
            ``j / max_looks``); :func:`sequential_compare` passes the real ones.
        unit: unit of the samples for messages (default ``ms``).
        worse: which direction is a regression (``higher`` | ``lower``; '' = not judged).

    Raises:
        ValueError (a caller's bug): unequal lengths, a non-positive or non-finite sample, ``floor_rel <= 0``,
            ``warmup < 0``, ``look`` not in 1..max_looks, bad alpha or fractions.
    """
    if len(baseline_ms) != len(candidate_ms):
        raise ValueError(f"baseline_ms and candidate_ms must pair up: {len(baseline_ms)} vs "
                         f"{len(candidate_ms)} samples")
    b_all, c_all = tuple(float(x) for x in baseline_ms), tuple(float(x) for x in candidate_ms)
    if not all(math.isfinite(x) and x > 0 for x in (*b_all, *c_all)):
        raise ValueError("durations must be finite and > 0 ms (a zero means the job did not run)")
    if floor_rel <= 0:
        raise ValueError(f"floor_rel must be > 0, got {floor_rel}")
    if warmup < 0 or not 1 <= look <= max_looks:
        raise ValueError(f"need warmup >= 0 and 1 <= look <= max_looks, got warmup={warmup}, "
                         f"look={look}, max_looks={max_looks}")
    ts = [j / max_looks for j in range(1, look + 1)] if fractions is None else fractions
    b, c = b_all[warmup:], c_all[warmup:]
    n = len(b)
    a_look, spent = alpha_at_look(look, ts, n, alpha)
    base: dict[str, Any] = dict(
        arm=arm, metric=metric, left=left, right=right, test=TEST, paired=True, n_pairs=n,
        warmup_pairs=min(warmup, len(b_all)), alpha=alpha, alpha_look=json_safe(a_look),
        alpha_spent=json_safe(spent), look=look, max_looks=max_looks, floor_rel=floor_rel,
        unit=unit, worse=worse, left_summary=summarize(b), right_summary=summarize(c),
        left_samples=json_safe_all(b_all), right_samples=json_safe_all(c_all))
    if n < MIN_PAIRS:
        return TimingVerdict(verdict=INCONCLUSIVE, reason=f"too few pairs after {warmup} warmup "
                             f"({n}; need {MIN_PAIRS})", **base)
    d = [math.log(y / x) for x, y in zip(b, c)]
    m = math.fsum(d) / n
    sd = math.sqrt(math.fsum((x - m) ** 2 for x in d) / (n - 1))
    se = sd / math.sqrt(n)
    if se <= 1e-12 * max(1.0, abs(m)):  # every pair gives the same ratio: no noise to test
        t_stat, p = (math.copysign(math.inf, m), 0.0) if m != 0 else (0.0, 1.0)
        h1 = h2 = 0.0
    else:  # = stats.ttest_1samp(d, 0) and its t interval, through the ufuncs that it uses
        t_stat = m / se
        p = float(2.0 * special.stdtr(n - 1, -abs(t_stat)))
        h1, h2 = (-float(special.stdtrit(n - 1, q)) * se for q in (a_look / 2.0, a_look))
    ratio, ci, eq = (math.exp(m), (math.exp(m - h1), math.exp(m + h1)),
                     (math.exp(m - h2), math.exp(m + h2)))
    lim = math.log1p(floor_rel)
    band = f"+/-{floor_rel:.0%} floor"
    direction = ""
    if -lim < m - h2 and m + h2 < lim:
        verdict, why = SAME, (f"the ratio's {1 - 2 * a_look:.2%} interval [{eq[0]:.3f}, "
                              f"{eq[1]:.3f}] lies inside the {band}")
    elif p < a_look:  # then |m| > lim / 2 (module docstring)
        verdict, direction = DIFFERENT, ("slower" if m > 0 else "faster")
        why = (f"p={p:.2g} < {a_look:.4f}, and the ratio {ratio:.3f} is beyond half the {band} "
               f"with an interval [{eq[0]:.3f}, {eq[1]:.3f}] that reaches the floor")
    else:
        verdict, why = INCONCLUSIVE, (f"p={p:.2g} >= {a_look:.4f}, ratio {ratio:.3f} "
                                      f"[{ci[0]:.3f}, {ci[1]:.3f}]: neither beyond nor inside "
                                      f"the {band}")
    if direction:
        direction = direction_of(ratio, unit)
    return TimingVerdict(verdict=verdict, direction=direction,
                         regression=is_regression(direction, worse), ratio=json_safe(ratio),
                         ratio_ci=(json_safe(ci[0]), json_safe(ci[1])),
                         equivalence_ci=(json_safe(eq[0]), json_safe(eq[1])),
                         log_ratio_sd=json_safe(sd), statistic=json_safe(t_stat), df=n - 1,
                         p_value=json_safe(p), reason=why, **base)


def sequential_compare(draw: Callable[[int], tuple[Sequence[float], Sequence[float]]], *,
                       initial: int = 6, step: int = 2, budget: int = 11, warmup: int = 1,
                       **kwargs: Any) -> TimingVerdict:
    """Compare, drawing more interleaved pairs while INCONCLUSIVE, spending alpha over looks.

    Args:
        draw: ``draw(n)`` returns ``n`` NEW pairs as two sequences (baseline ms, candidate ms),
            drawn interleaved (baseline, candidate, baseline, ...); empty sequences end the run.
        initial: pairs of the first look, warmup included (default 6). step: pairs added per
            look (default 2). budget: most pairs in all, warmup included (default 11: 1 warmup
            + 10 tested). warmup: leading pairs not tested (default 1).
        kwargs: passed to :func:`paired_compare` (``arm``, ``floor_rel``, ``alpha``, ...).

    Returns:
        The last verdict. Its ``alpha_spent`` is what the spending function spent up to that
        look (``alpha`` when the budget was used up): the family-wise false-alarm rate of all
        looks together is ``<= alpha`` (the group-sequential boundaries; see the module).

    Raises:
        ValueError: ``warmup < 0``, ``initial <= warmup``, ``step < 1``, ``budget < initial``,
            or what :func:`paired_compare` raises on the drawn samples.
    """
    if warmup < 0 or initial <= warmup or step < 1 or budget < initial:
        raise ValueError(f"need 0 <= warmup < initial <= budget and step >= 1, got warmup="
                         f"{warmup}, initial={initial}, step={step}, budget={budget}")
    planned = 1 + -(-(budget - initial) // step)
    most = budget - warmup
    b: list[float] = []
    c: list[float] = []
    fractions: list[float] = []
    want = initial
    verdict: TimingVerdict | None = None
    while len(b) < budget:
        nb, nc = draw(want)
        if not len(nb) or not len(nc):
            break
        b += [float(x) for x in nb]
        c += [float(x) for x in nc]
        fractions.append(min(1.0, max(len(b) - warmup, 1) / most))
        look = len(fractions)
        verdict = paired_compare(b, c, warmup=warmup, look=look, max_looks=max(planned, look),
                                 fractions=fractions, **kwargs)
        if verdict.verdict is not INCONCLUSIVE:
            break
        want = min(step, budget - len(b))
    if verdict is None:
        return paired_compare([], [], warmup=warmup, **kwargs)
    if len(b) < budget and verdict.verdict is INCONCLUSIVE:
        verdict = replace(verdict, reason=f"{verdict.reason}; draw gave no more pairs")
    return verdict
