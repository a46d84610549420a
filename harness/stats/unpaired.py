"""Timing comparisons (docs/design/statistics.md): distributions, not single numbers.

Two samples of durations (ms) are compared on the log scale, so an effect is a ratio:

* ``summarize``: n, median, IQR (q1, q3), min, max of one sample.
* ``compare``: a Mann-Whitney U test (``scipy.stats.mannwhitneyu``, two-sided) plus the
  Hodges-Lehmann estimate of the log-ratio with its distribution-free confidence interval (the
  order statistics of the pairwise differences that the U distribution selects), as a
  :class:`~proofdiff.model.timing_verdict.TimingVerdict`. Three values:

  - ``DIFFERENT``: p < alpha AND the estimated ratio is beyond the effect-size floor
    (``ratio >= 1 + floor`` or ``ratio <= 1 / (1 + floor)``);
  - ``SAME``: the whole confidence interval of the ratio lies inside the floor band
    ``[1 / (1 + floor), 1 + floor]`` (an equivalence test: a difference may exist but is too
    small to matter);
  - ``INCONCLUSIVE``: neither (too few samples, or too much noise for the floor).

* ``adaptive_compare``: draws more interleaved samples while the verdict is INCONCLUSIVE, up to
  a budget; alpha is split over the looks it may take (Bonferroni), so adding samples does not
  inflate the false-alarm rate.

Never gate on a percentage of two point estimates (STYLE.md 11): every verdict carries the
sample sizes, medians, IQRs, the ratio with its interval, U and p.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import msgspec
import numpy as np
from scipy import stats  # type: ignore[import-untyped]

from proofdiff.model.status import Comparison
from proofdiff.model.timing_verdict import (NO_SAMPLES, SampleSummary, TimingVerdict, json_safe,
                                            json_safe_all)

__all__ = ["DIFFERENT", "INCONCLUSIVE", "SAME", "adaptive_compare", "compare", "summarize"]

SAME, DIFFERENT, INCONCLUSIVE = Comparison.SAME, Comparison.DIFFERENT, Comparison.INCONCLUSIVE
#: Default effect-size floor: ratios within [1/1.25, 1.25] are "the same" for proof latency.
DEFAULT_FLOOR_REL = 0.25
#: Default family-wise significance level of one comparison (all looks together).
DEFAULT_ALPHA = 0.05
#: Fewer samples than this per side can never give SAME or DIFFERENT.
MIN_SAMPLES = 4
TEST = "Mann-Whitney U on log samples"


def summarize(xs: Sequence[float]) -> SampleSummary:
    """Median, quartiles (numpy's linear interpolation), min and max of ``xs`` (any unit)."""
    if not xs:
        return NO_SAMPLES
    a = np.asarray(xs, dtype=float)
    q1, med, q3 = (float(x) for x in np.percentile(a, [25, 50, 75]))
    return SampleSummary(n=len(a), median=med, q1=q1, q3=q3, min=float(a.min()),
                         max=float(a.max()))


def direction_of(ratio: float, unit: str) -> str:
    """Which way the right side moved: ``slower``/``faster`` for durations, ``higher``/
    ``lower`` otherwise."""
    up = ratio > 1.0
    if unit == "ms":
        return "slower" if up else "faster"
    return "higher" if up else "lower"


def is_regression(direction: str, worse: str) -> bool:
    """A DIFFERENT verdict's ``direction`` is a regression when it goes the ``worse`` way
    (``higher``: slower or higher; ``lower``: faster or lower)."""
    up = direction in ("slower", "higher")
    return bool(worse) and bool(direction) and (up if worse == "higher" else not up)


def _hl_interval(la: np.ndarray, lb: np.ndarray, alpha: float) -> tuple[float, float, float]:
    """Hodges-Lehmann shift of ``lb - la`` and its (1 - alpha) interval from the pairwise
    differences (normal approximation of the U distribution's critical value)."""
    d = np.sort((lb[None, :] - la[:, None]).ravel())
    n1, n2 = len(la), len(lb)
    z = float(stats.norm.ppf(1 - alpha / 2))
    k = int(math.floor(n1 * n2 / 2 - z * math.sqrt(n1 * n2 * (n1 + n2 + 1) / 12.0)))
    k = max(0, min(k, len(d) - 1))
    return float(np.median(d)), float(d[k]), float(d[len(d) - 1 - k])


def compare(a_ms: Sequence[float], b_ms: Sequence[float], *, arm: str = "", metric: str = "ms",
            left: str = "A", right: str = "B", floor_rel: float = DEFAULT_FLOOR_REL,
            alpha: float = DEFAULT_ALPHA, looks: int = 1, unit: str = "ms",
            worse: str = "") -> TimingVerdict:
    """Compare two samples of positive durations (ms); see the module docstring.

    Args:
        a_ms, b_ms: the samples (ms, > 0). floor_rel: effect-size floor (default 0.25 = 25 %).
        alpha: family-wise significance level (default 0.05). looks: how many comparisons the
            caller makes in total on growing samples (alpha is divided by it).
        unit: unit of the samples for messages (default ``ms``; any positive quantity works).
        worse: which direction is a regression (``higher`` | ``lower``; '' = not judged).

    Raises:
        ValueError: a non-positive duration or ``floor_rel <= 0`` (a caller's bug).
    """
    if floor_rel <= 0:
        raise ValueError(f"floor_rel must be > 0, got {floor_rel}")
    if any(x <= 0 for x in (*a_ms, *b_ms)):
        raise ValueError("durations must be > 0 ms (a zero means the job did not run)")
    sa, sb = summarize(a_ms), summarize(b_ms)
    a_look = alpha / max(1, looks)
    base: dict[str, Any] = dict(
        arm=arm, metric=metric, left=left, right=right, test=TEST, left_summary=sa,
        right_summary=sb, floor_rel=floor_rel, alpha=alpha, alpha_look=json_safe(a_look),
        max_looks=looks, unit=unit, worse=worse, left_samples=json_safe_all(a_ms),
        right_samples=json_safe_all(b_ms))
    if min(sa.n, sb.n) < MIN_SAMPLES:
        return TimingVerdict(verdict=INCONCLUSIVE, reason=f"too few samples ({sa.n} and "
                             f"{sb.n}; need {MIN_SAMPLES} per side)", **base)
    la, lb = np.log(np.asarray(a_ms, float)), np.log(np.asarray(b_ms, float))
    res = stats.mannwhitneyu(lb, la, alternative="two-sided", method="auto")
    u, p = float(res.statistic), float(res.pvalue)
    if math.isnan(p):  # every value tied on both sides: no evidence of a difference
        p = 1.0
    rbc = 2.0 * u / (len(la) * len(lb)) - 1.0
    shift, lo, hi = _hl_interval(la, lb, a_look)
    ratio, ci = math.exp(shift), (math.exp(lo), math.exp(hi))
    band_hi, band_lo = 1.0 + floor_rel, 1.0 / (1.0 + floor_rel)
    if p < a_look and (ratio >= band_hi or ratio <= band_lo):
        verdict, why = DIFFERENT, (f"p={p:.4f} < {a_look:.4f} and the ratio {ratio:.2f} is beyond "
                                   f"the +/-{floor_rel:.0%} floor")
    elif band_lo < ci[0] and ci[1] < band_hi:
        verdict, why = SAME, (f"the ratio's interval [{ci[0]:.2f}, {ci[1]:.2f}] lies inside "
                              f"the +/-{floor_rel:.0%} floor")
    else:
        verdict, why = INCONCLUSIVE, (f"p={p:.4f}, ratio {ratio:.2f} [{ci[0]:.2f}, {ci[1]:.2f}]:"
                                      f" neither beyond nor inside the +/-{floor_rel:.0%} floor")
    direction = direction_of(ratio, unit) if verdict is DIFFERENT else ""
    return TimingVerdict(verdict=verdict, direction=direction,
                         regression=is_regression(direction, worse), ratio=json_safe(ratio),
                         ratio_ci=(json_safe(ci[0]), json_safe(ci[1])), p_value=json_safe(p),
                         statistic=json_safe(u), effect_size=json_safe(rbc), reason=why, **base)


def adaptive_compare(draw: Callable[[int], tuple[Sequence[float], Sequence[float]]], *,
                     initial: int = 5, step: int = 2, budget: int = 11,
                     **kwargs: Any) -> TimingVerdict:
    """Compare, drawing more samples while INCONCLUSIVE.

    Args:
        draw: ``draw(n)`` returns ``n`` NEW samples of each side (ms), drawn interleaved
            (A B A B) by the caller so both sides see the same machine conditions.
        initial: samples per side first (default 5). step: added per look (default 2).
        budget: most samples per side in total (default 11).
        kwargs: passed to :func:`compare` (``arm``, ``left``, ``right``, ``floor_rel``, ...).

    Returns:
        The last verdict; ``look`` says how many comparisons were made, ``max_looks`` over how
        many alpha was split (the most the budget allows).
    """
    max_looks = 1 + max(0, -(-(budget - initial) // max(1, step)))
    a: list[float] = []
    b: list[float] = []
    na, nb = draw(initial)
    a += na
    b += nb
    look = 1
    verdict = compare(a, b, looks=max_looks, **kwargs)
    while verdict.verdict is INCONCLUSIVE and len(a) < budget:
        na, nb = draw(min(step, budget - len(a)))
        if not na or not nb:
            break
        a += na
        b += nb
        look += 1
        verdict = compare(a, b, looks=max_looks, **kwargs)
    return msgspec.structs.replace(verdict, look=look)
