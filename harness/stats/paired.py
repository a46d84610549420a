"""Paired, sequential timing comparisons: the verdict that may gate an image push.

The unpaired :func:`proofdiff.stats.unpaired.compare` needs ~25 % effects; a gate has to catch a 5 %
slowdown and pass an unchanged image within a few minutes. Three things make that possible:

* **Pairing.** The caller interleaves the sides, alternating which one goes first (B C, C B,
  ...), and pair ``i`` is (``baseline_ms[i]``, ``candidate_ms[i]``). The test is on the paired
  log-ratios ``d_i = log(candidate_i / baseline_i)``: slow machine drift (thermal, frequency,
  a neighbour's load), shared by adjacent samples, cancels in ``d_i`` instead of widening both
  samples. The first ``warmup`` pairs (default 1) are kept in the evidence but not tested.
* **A robust location: the 20 %-trimmed mean of d** with the Tukey-McLaughlin standard error
  (winsorized variance; Wilcox, *Introduction to Robust Estimation and Hypothesis Testing*,
  4th ed., 2017, section 4.5), a t reference with ``n - 2g - 1`` degrees of freedom (``g``
  values trimmed at each end). Timing noise here is a tight lognormal core plus rare spikes (a
  neighbour, a page-cache miss: one sample in 30-50 is 10-30 % slow): one spike in 10 pairs
  inflated the plain t-test's variance enough to leave 20 % of the A/A gates of the
  2026-12-01 power table INCONCLUSIVE. Trimming drops up to ``g`` spikes per side at a cost of
  ~6 % efficiency on clean normal data. The ratio estimate is ``exp(trimmed mean d)``.
* **One floor for both verdicts** (``L = log(1 + floor_rel)``; default floor 2.5 %): the
  verdict is a statement about the change relative to the floor, with its confidence bound:

  - ``SAME``: the (1 - 2 beta_look) interval of the ratio lies inside ``[1/(1+floor),
    1+floor]`` (TOST equivalence at level beta_look: a change AT the floor is said SAME with
    probability <= beta_look per look, and <= ``beta`` (default 10 %) over all looks, which split ``beta``
    equally: Bonferroni over the planned looks).
  - ``DIFFERENT``: the (1 - alpha_look) interval lies entirely beyond the floor (its lower
    bound above ``1+floor``: ``slower``; its upper bound below ``1/(1+floor)``: ``faster``).
    A change is DIFFERENT only when it is shown to exceed the floor, so a true change at the
    floor is DIFFERENT with probability <= alpha_look/2 per look, and an A/A far less often.
  - ``INCONCLUSIVE``: neither (or fewer than 3 pairs after warmup).

  The floor is half the change the gate is built to catch: a 5 % slowdown lies a floor away
  from the floor on one side, an unchanged image a floor away on the other, so both are
  decided with the same precision (``python -m proofdiff.stats.power`` gives the rates).

Sequential testing spends ``alpha`` (the false-DIFFERENT level of one hypothesis, all looks
together; the gate passes each metric its Holm share of the gate's family-wise level) over the
looks with the Lan-DeMets O'Brien-Fleming-like spending function
``alpha(t) = 2 - 2 Phi(z_{1-alpha/2} / sqrt(t))``, t = tested pairs / most tested pairs. Each
look's nominal level comes from a group-sequential boundary on the t statistic, ``c_k`` such
that the null paths crossing at look k or before make up ``alpha(t_k)``: exact from the t
distribution at the first tested look, from 2**18 simulated null paths (fixed seed: the same
levels on every run, cached per schedule) at the later ones. The levels are derived for the
plain t statistic and applied to the trimmed one's p (an approximation; the simulated rates
of the whole procedure in :mod:`proofdiff.stats.power` are the check). O'Brien-Fleming rather
than Pocock because the power is needed at the budget's end. Stopping for SAME is a
non-binding futility stop, which can only lower the false-DIFFERENT rate; stopping for
DIFFERENT can only lower the false-SAME rate.
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
from proofdiff.stats.looks import DEFAULT_BUDGET, DEFAULT_INITIAL, DEFAULT_STEP, look_sizes
from proofdiff.stats.unpaired import (DIFFERENT, INCONCLUSIVE, SAME, direction_of,
                                      is_regression, summarize)

__all__ = ["DIFFERENT", "INCONCLUSIVE", "SAME", "alpha_at_look", "alpha_spent", "look_sizes",
           "paired_compare", "sequential_compare", "trimmed"]

#: Default floor of both verdicts: 2.5 %, half the 5 % slowdown the gate is built to catch.
DEFAULT_FLOOR_REL = 0.025
#: Default false-DIFFERENT level of one comparison (all looks together).
DEFAULT_ALPHA = 0.01
#: Default false-SAME level of one comparison (all looks together).
DEFAULT_BETA = 0.10
#: Default share of the log-ratios trimmed at each end.
DEFAULT_TRIM = 0.2
#: Fewer tested pairs than this can never give SAME or DIFFERENT.
MIN_PAIRS = 3
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


def trimmed(d: Sequence[float], trim: float = DEFAULT_TRIM) -> tuple[float, float, int, float]:
    """``(mean, se, df, sd)`` of the ``trim``-trimmed mean of ``d`` (module docstring):
    ``g = floor(trim * n)`` values cut at each end, the winsorized standard deviation ``sd``,
    ``se = sd / ((1 - 2 g / n) sqrt(n))``, ``df = n - 2 g - 1``. ``trim = 0`` is the plain
    mean with its t-test's se. Equal to ``scipy.stats.trim_mean`` and the standard deviation
    of ``scipy.stats.mstats.winsorize`` (tests/unit/test_stats_paired.py), without their
    masked arrays (the power simulation calls this ~10**6 times)."""
    n = len(d)
    g = int(math.floor(trim * n))
    x = np.sort(np.asarray(d, dtype=float))
    m = float(x[g:n - g].mean())
    w = np.clip(x, x[g], x[n - g - 1])
    sd = float(w.std(ddof=1)) if n > 1 else 0.0
    return m, sd / ((1.0 - 2.0 * g / n) * math.sqrt(n)), n - 2 * g - 1, sd


def paired_compare(baseline_ms: Sequence[float], candidate_ms: Sequence[float], *,
                   arm: str = "", metric: str = "latency ms", left: str = "baseline",
                   right: str = "candidate", floor_rel: float = DEFAULT_FLOOR_REL,
                   alpha: float = DEFAULT_ALPHA, beta: float = DEFAULT_BETA,
                   trim: float = DEFAULT_TRIM, warmup: int = 1, look: int = 1,
                   max_looks: int = 1, fractions: Sequence[float] | None = None,
                   unit: str = "ms", worse: str = "") -> TimingVerdict:
    """Compare interleaved samples pair by pair; see the module docstring.

    Args:
        baseline_ms, candidate_ms: samples in drawing order (ms, > 0), equal length; pair i is
            (baseline_ms[i], candidate_ms[i]). warmup: leading pairs not tested (default 1).
        floor_rel: the floor of both verdicts (default 0.025 = 2.5 %). alpha: false-DIFFERENT
            level over all looks (default 0.01). beta: false-SAME level over all looks (default
            0.10; this look gets ``beta / max_looks``). trim: share trimmed at each end (0.2).
        look, max_looks: this look's number and how many are planned (default 1 of 1: alpha).
        fractions: information fractions of looks 1..look (default equally spaced,
            ``j / max_looks``); :func:`sequential_compare` passes the real ones.
        unit: unit of the samples for messages (default ``ms``).
        worse: which direction is a regression (``higher`` | ``lower``; '' = not judged).

    Raises:
        ValueError (a caller's bug): unequal lengths, a non-positive or non-finite sample,
            ``floor_rel <= 0``, ``warmup < 0``, ``look`` not in 1..max_looks, bad alpha, beta,
            trim or fractions.
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
    if not 0.0 < beta < 0.5 or not 0.0 <= trim < 0.5:
        raise ValueError(f"need 0 < beta < 0.5 and 0 <= trim < 0.5, got beta={beta}, "
                         f"trim={trim}")
    ts = [j / max_looks for j in range(1, look + 1)] if fractions is None else fractions
    b, c = b_all[warmup:], c_all[warmup:]
    n = len(b)
    a_look, spent = alpha_at_look(look, ts, n, alpha)
    b_look = beta / max_looks
    base: dict[str, Any] = dict(
        arm=arm, metric=metric, left=left, right=right,
        test=f"paired {trim:.0%}-trimmed t-test on log-ratios, against the floor"
        if trim else "paired t-test on log-ratios, against the floor",
        paired=True, n_pairs=n,
        warmup_pairs=min(warmup, len(b_all)), alpha=alpha, alpha_look=json_safe(a_look),
        alpha_spent=json_safe(spent), beta=beta, beta_look=b_look, look=look,
        max_looks=max_looks, floor_rel=floor_rel, unit=unit, worse=worse,
        left_summary=summarize(b), right_summary=summarize(c),
        left_samples=json_safe_all(b_all), right_samples=json_safe_all(c_all))
    if n < MIN_PAIRS:
        return TimingVerdict(verdict=INCONCLUSIVE, reason=f"too few pairs after {warmup} warmup "
                             f"({n}; need {MIN_PAIRS})", **base)
    d = [math.log(y / x) for x, y in zip(b, c)]
    m, se, df, sd = trimmed(d, trim)
    lim = math.log1p(floor_rel)
    if se <= 1e-12 * max(1.0, abs(m)):  # every pair gives the same ratio: no noise to test
        h1 = h2 = 0.0
        t_stat = math.copysign(math.inf, abs(m) - lim) if abs(m) != lim else 0.0
        p = 0.0 if abs(m) > lim else 1.0
    else:  # t against the floor: how far |mean| lies beyond it, in standard errors
        t_stat = (abs(m) - lim) / se
        p = min(1.0, float(2.0 * special.stdtr(df, -t_stat)))
        h1 = -float(special.stdtrit(df, a_look / 2.0)) * se if a_look > 0 else math.inf
        h2 = -float(special.stdtrit(df, b_look)) * se
    ratio = math.exp(m)
    ci = (math.exp(m - h1), math.exp(m + h1)) if math.isfinite(h1) else (0.0, math.inf)
    eq = (math.exp(m - h2), math.exp(m + h2))
    band = f"+/-{floor_rel:.1%} floor"
    direction = ""
    if m - h1 > lim or m + h1 < -lim:
        verdict, direction = DIFFERENT, ("slower" if m > 0 else "faster")
        why = (f"the ratio's {1 - a_look:.2%} interval [{ci[0]:.3f}, {ci[1]:.3f}] lies beyond "
               f"the {band} (p={p:.2g} < {a_look:.4f} against the floor)")
    elif -lim < m - h2 and m + h2 < lim:
        verdict, why = SAME, (f"the ratio's {1 - 2 * b_look:.2%} interval [{eq[0]:.3f}, "
                              f"{eq[1]:.3f}] lies inside the {band}")
    else:
        verdict, why = INCONCLUSIVE, (f"ratio {ratio:.3f}: its {1 - a_look:.2%} interval "
                                      f"[{ci[0]:.3f}, {ci[1]:.3f}] is not beyond the {band} "
                                      f"and its {1 - 2 * b_look:.2%} interval [{eq[0]:.3f}, "
                                      f"{eq[1]:.3f}] not inside it")
    if direction:
        direction = direction_of(ratio, unit)
    return TimingVerdict(verdict=verdict, direction=direction,
                         regression=is_regression(direction, worse), ratio=json_safe(ratio),
                         ratio_ci=(json_safe(ci[0]), json_safe(ci[1])),
                         equivalence_ci=(json_safe(eq[0]), json_safe(eq[1])),
                         log_ratio_sd=json_safe(sd), statistic=json_safe(t_stat), df=df,
                         p_value=json_safe(p), reason=why, **base)


def sequential_compare(draw: Callable[[int], tuple[Sequence[float], Sequence[float]]], *,
                       initial: int = DEFAULT_INITIAL, step: int = DEFAULT_STEP,
                       budget: int = DEFAULT_BUDGET, warmup: int = 1,
                       **kwargs: Any) -> TimingVerdict:
    """Compare one metric, drawing more interleaved pairs while INCONCLUSIVE at the looks of
    :func:`look_sizes` (the gate's timing arm runs the same looks for all its metrics at once:
    :func:`proofdiff.gate.timing_rounds.measure_profile`).

    Args:
        draw: ``draw(n)`` returns ``n`` NEW pairs as two sequences (baseline ms, candidate ms),
            drawn interleaved (baseline, candidate, baseline, ...); empty sequences end the run.
        initial: pairs of the first look, warmup included (default 6). step: pairs added per
            look (default 4). budget: most pairs in all, warmup included (default 21: 1 warmup
            + 20 tested). warmup: leading pairs not tested (default 1).
        kwargs: passed to :func:`paired_compare` (``arm``, ``floor_rel``, ``alpha``, ...).

    Returns:
        The last verdict. Its ``alpha_spent`` is what the spending function spent up to that
        look (``alpha`` when the budget was used up).

    Raises:
        ValueError: what :func:`look_sizes` raises, or what :func:`paired_compare` raises on
            the drawn samples.
    """
    sizes = look_sizes(initial=initial, step=step, budget=budget, warmup=warmup)
    most = budget - warmup
    b: list[float] = []
    c: list[float] = []
    fractions: list[float] = []
    verdict: TimingVerdict | None = None
    for want in sizes:
        nb, nc = draw(want - len(b))
        if not len(nb) or not len(nc):
            break
        b += [float(x) for x in nb]
        c += [float(x) for x in nc]
        fractions.append(min(1.0, max(len(b) - warmup, 1) / most))
        look = len(fractions)
        verdict = paired_compare(b, c, warmup=warmup, look=look, max_looks=len(sizes),
                                 fractions=fractions, **kwargs)
        if verdict.verdict is not INCONCLUSIVE or len(b) < want:
            break
    if verdict is None:
        return paired_compare([], [], warmup=warmup, **kwargs)
    if len(b) < budget and verdict.verdict is INCONCLUSIVE:
        verdict = replace(verdict, reason=f"{verdict.reason}; draw gave no more pairs")
    return verdict
