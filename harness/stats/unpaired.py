"""Timing comparisons (DESIGN.md section 5): distributions, not single numbers.

Two samples of durations (ms) are compared on the log scale, so an effect is a ratio:

* ``summarize``: n, median, IQR (q1, q3), min, max of one sample.
* ``compare``: a Mann-Whitney U test (``scipy.stats.mannwhitneyu``, two-sided) plus the
  Hodges-Lehmann estimate of the log-ratio with its distribution-free confidence interval (the
  order statistics of the pairwise differences that the U distribution selects). Three values:

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

__all__ = ["SAME", "DIFFERENT", "INCONCLUSIVE", "Summary", "TimingVerdict", "adaptive_compare",
           "compare", "summarize"]

SAME, DIFFERENT, INCONCLUSIVE = "SAME", "DIFFERENT", "INCONCLUSIVE"
#: Default effect-size floor: ratios within [1/1.25, 1.25] are "the same" for proof latency.
DEFAULT_FLOOR_REL = 0.25
#: Default family-wise significance level of one comparison (all looks together).
DEFAULT_ALPHA = 0.05
#: Fewer samples than this per side can never give SAME or DIFFERENT.
MIN_SAMPLES = 4


class Summary(msgspec.Struct, frozen=True):
    """One sample of durations: ``n``, ``median_ms``, ``q1_ms``, ``q3_ms``, ``iqr_ms``,
    ``min_ms``, ``max_ms`` (all ms; 0 when the sample is empty)."""

    n: int
    median_ms: float
    q1_ms: float
    q3_ms: float
    iqr_ms: float
    min_ms: float
    max_ms: float

    def render(self, unit: str = "ms") -> str:
        """``median 3712 ms (IQR 3650-3790, n=6)`` (values are in ``unit``, ms by default)."""
        f = ".0f" if unit == "ms" else ".3g"
        return (f"median {self.median_ms:{f}} {unit} (IQR {self.q1_ms:{f}}-{self.q3_ms:{f}}, "
                f"n={self.n})")



def summarize(xs_ms: Sequence[float]) -> Summary:
    """Median, quartiles (numpy's linear interpolation), min and max of ``xs_ms`` (ms)."""
    if not xs_ms:
        return Summary(0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    a = np.asarray(xs_ms, dtype=float)
    q1, med, q3 = (float(x) for x in np.percentile(a, [25, 50, 75]))
    return Summary(len(a), med, q1, q3, q3 - q1, float(a.min()), float(a.max()))


class TimingVerdict(msgspec.Struct, frozen=True, kw_only=True):
    """The verdict of one comparison ``right`` vs ``left`` (ratio = right / left).

    Attributes:
        arm: what was compared (``latency bench vs prod``, ``A/A bench``).
        metric: the measured quantity and unit (``per-job cost ms``).
        left, right: labels of the two sides. a, b: their summaries (ms).
        verdict: SAME | DIFFERENT | INCONCLUSIVE.
        ratio: Hodges-Lehmann estimate of right/left (1.0 = equal); nan when not computed.
        ratio_ci: its confidence interval (level 1 - alpha_look).
        p_value: two-sided Mann-Whitney p (nan with too few samples). u_stat: U of ``right``.
        effect_size: rank-biserial correlation in [-1, 1] (>0: right tends to be larger).
        floor_rel: the effect-size floor. alpha: family-wise level; looks: comparisons made.
        reason: one sentence on why this verdict.
        a_ms, b_ms: the raw samples (ms), for plots and pytest-benchmark JSON.
    """

    arm: str
    metric: str
    left: str
    right: str
    verdict: str
    a: Summary
    b: Summary
    ratio: float = math.nan
    ratio_ci: tuple[float, float] = (math.nan, math.nan)
    p_value: float = math.nan
    u_stat: float = math.nan
    effect_size: float = math.nan
    floor_rel: float = DEFAULT_FLOOR_REL
    alpha: float = DEFAULT_ALPHA
    looks: int = 1
    reason: str = ""
    a_ms: tuple[float, ...] = ()
    b_ms: tuple[float, ...] = ()
    unit: str = "ms"

    def render(self) -> str:
        """One paragraph: verdict, both sides, ratio with interval, U, p, floor."""
        return (f"{self.arm}: {self.verdict} ({self.reason})\n"
                f"  {self.left}: {self.a.render(self.unit)}\n"
                f"  {self.right}: {self.b.render(self.unit)}\n"
                f"  ratio {self.right}/{self.left} = {self.ratio:.3f} "
                f"[{self.ratio_ci[0]:.3f}, {self.ratio_ci[1]:.3f}], Mann-Whitney U={self.u_stat:.1f} "
                f"p={self.p_value:.4f}, rank-biserial {self.effect_size:+.2f}; floor "
                f"+/-{self.floor_rel:.0%}, alpha {self.alpha} over {self.looks} look(s)")

    def evidence(self) -> dict[str, Any]:
        """JSON-ready evidence (NaN as ``None``): every field."""
        def num(x: Any) -> Any:
            if isinstance(x, float):
                return None if math.isnan(x) else round(x, 6)
            if isinstance(x, (list, tuple)):
                return [num(v) for v in x]
            if isinstance(x, dict):
                return {k: num(v) for k, v in x.items()}
            return x
        return {k: num(v) for k, v in msgspec.to_builtins(self).items()}


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
            alpha: float = DEFAULT_ALPHA, looks: int = 1, unit: str = "ms") -> TimingVerdict:
    """Compare two samples of positive durations (ms); see the module docstring.

    Args:
        a_ms, b_ms: the samples (ms, > 0). floor_rel: effect-size floor (default 0.25 = 25 %).
        alpha: family-wise significance level (default 0.05). looks: how many comparisons the
            caller makes in total on growing samples (alpha is divided by it).
        unit: unit of the samples for messages (default ``ms``; any positive quantity works).

    Raises:
        ValueError: a non-positive duration or ``floor_rel <= 0``.
    """
    if floor_rel <= 0:
        raise ValueError(f"floor_rel must be > 0, got {floor_rel}")
    if any(x <= 0 for x in (*a_ms, *b_ms)):
        raise ValueError("durations must be > 0 ms (a zero means the job did not run)")
    sa, sb = summarize(a_ms), summarize(b_ms)
    base = dict(arm=arm, metric=metric, left=left, right=right, a=sa, b=sb,
                floor_rel=floor_rel, alpha=alpha, looks=looks, unit=unit,
                a_ms=tuple(float(x) for x in a_ms), b_ms=tuple(float(x) for x in b_ms))
    if min(sa.n, sb.n) < MIN_SAMPLES:
        return TimingVerdict(verdict=INCONCLUSIVE, reason=f"too few samples ({sa.n} and "
                             f"{sb.n}; need {MIN_SAMPLES} per side)", **base)  # type: ignore[arg-type]
    a_look = alpha / max(1, looks)
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
    return TimingVerdict(verdict=verdict, ratio=ratio, ratio_ci=ci, p_value=p, u_stat=u,
                         effect_size=rbc, reason=why, **base)  # type: ignore[arg-type]


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
        The last verdict; ``looks`` says how many comparisons were made (alpha was split over
        the most looks the budget allows).
    """
    max_looks = 1 + max(0, -(-(budget - initial) // max(1, step)))
    a: list[float] = []
    b: list[float] = []
    na, nb = draw(initial)
    a += na
    b += nb
    verdict = compare(a, b, looks=max_looks, **kwargs)
    while verdict.verdict == INCONCLUSIVE and len(a) < budget:
        na, nb = draw(min(step, budget - len(a)))
        if not na or not nb:
            break
        a += na
        b += nb
        verdict = compare(a, b, looks=max_looks, **kwargs)
    return verdict
