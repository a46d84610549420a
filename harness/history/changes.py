"""Change points of a metric's series: where a run's value stepped, with the evidence.

The method is Hunter's (Fleming et al., "Hunter: Using Change Point Detection to Hunt for
Performance Regressions", ICPE 2023, https://doi.org/10.1145/3578244.3583719), which Apache
Otava implements: candidate split points, then a merge step that drops the weakest candidate
while its two-sided Student's t-test between the neighbouring segments has p >= ``max_pvalue``
(or its relative step is below ``min_magnitude``), re-testing its neighbours after each drop.
The candidates come from ruptures' binary segmentation (``ruptures.Binseg``, least-squares
cost), which adds a split while it lowers the cost by more than a BIC-like penalty
(:data:`PENALTY` x the noise variance x log n, the noise estimated from the first differences,
robust to the steps), rather than from Otava's E-Divisive windows: Otava 0.8.0 pins
``numpy==2.2.*`` and ``scipy<1.17`` and cannot be installed beside requirements.lock
(docs/design/statistics.md, "The nightly").
Otava's defaults are kept: ``max_pvalue`` 0.001, ``min_magnitude`` 0.

A step needs :data:`MIN_SIZE` runs on each side: a new step is flagged from its second run on.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["MAX_PVALUE", "MIN_MAGNITUDE", "MIN_SIZE", "Step", "change_points"]

#: Otava's default significance of a change point.
MAX_PVALUE = 0.001
#: Otava's default relative step below which a change is dropped (0: any significant step).
MIN_MAGNITUDE = 0.0
#: Points on each side of a step, at least.
MIN_SIZE = 2
#: The candidates' penalty per change point, in units of the noise variance x log(n) (BIC's
#: for a change in mean). A fixed count of candidates instead offers the largest chance splits
#: of a long series to the t-test, which then passes some: over 1,000 runs of noise with one
#: step, a fixed 16 gave two false change points besides the step, the penalty none.
PENALTY = 2.0


@dataclass(frozen=True)
class Step:
    """One change point: the series' value moved at ``index`` (the first point after it).

    Attributes:
        index: the first point of the new level. n_before, n_after: points in the segments
            compared (from the previous change point to the next one).
        mean_before, mean_after, sd_before, sd_after: the two segments' means and standard
            deviations (population, as Otava's). median_before, median_after: their medians.
        rel_change: ``mean_after / mean_before - 1`` (0 when the mean before is 0).
        p_value: the two-sided Student's t-test's p between the segments (0 when both are
            constant and differ).
    """

    index: int
    n_before: int
    n_after: int
    mean_before: float
    mean_after: float
    sd_before: float
    sd_after: float
    median_before: float
    median_after: float
    rel_change: float
    p_value: float

    @property
    def magnitude(self) -> float:
        """Otava's change magnitude: the larger relative change, forwards or backwards."""
        back = self.mean_before / self.mean_after - 1.0 if self.mean_after else 0.0
        return max(abs(self.rel_change), abs(back))

    def evidence(self, unit: str) -> str:
        """``mean 3712 -> 4090 ms (+10.2 %), median 3700 -> 4085; Student's t-test p=2.1e-07
        (10 runs before, 5 after)``."""
        return (f"mean {self.mean_before:.4g} -> {self.mean_after:.4g} {unit} "
                f"({self.rel_change:+.1%}), sd {self.sd_before:.3g} / {self.sd_after:.3g}, "
                f"median {self.median_before:.4g} -> {self.median_after:.4g}; Student's t-test "
                f"p={self.p_value:.2g} ({self.n_before} runs before, {self.n_after} after)")


def _step(xs: Sequence[float], lo: int, at: int, hi: int) -> Step:
    from scipy.stats import ttest_ind_from_stats  # type: ignore[import-untyped]

    left, right = list(xs[lo:at]), list(xs[at:hi])
    ml, mr = statistics.fmean(left), statistics.fmean(right)
    sl, sr = statistics.pstdev(left), statistics.pstdev(right)
    if sl == 0 and sr == 0:
        p = 1.0 if ml == mr else 0.0
    else:
        p = float(ttest_ind_from_stats(ml, sl, len(left), mr, sr, len(right)).pvalue)
        p = 1.0 if math.isnan(p) else p
    return Step(index=at, n_before=len(left), n_after=len(right), mean_before=ml,
                mean_after=mr, sd_before=sl, sd_after=sr, median_before=statistics.median(left),
                median_after=statistics.median(right),
                rel_change=mr / ml - 1.0 if ml else 0.0, p_value=p)


def _noise_sd(xs: Sequence[float]) -> float:
    """The series' noise, robust to its steps: the MAD of the first differences, scaled to a
    standard deviation (/ 0.6745 / sqrt 2); the plain standard deviation when that is 0 (a
    series of repeated values); 0 for a constant series."""
    diffs = [b - a for a, b in zip(xs, xs[1:])]
    med = statistics.median(diffs)
    mad = statistics.median(abs(d - med) for d in diffs)
    return mad / 0.6745 / math.sqrt(2) if mad > 0 else statistics.pstdev(xs)


def _candidates(xs: Sequence[float], min_size: int) -> list[int]:
    import numpy as np
    import ruptures

    sd = _noise_sd(xs)
    if sd == 0:
        return []
    algo = ruptures.Binseg(model="l2", min_size=min_size, jump=1).fit(
        np.asarray(xs, dtype=float).reshape(-1, 1))
    return [int(b) for b in algo.predict(pen=PENALTY * sd ** 2 * math.log(len(xs)))[:-1]]


def change_points(values: Sequence[float], *, max_pvalue: float = MAX_PVALUE,
                  min_magnitude: float = MIN_MAGNITUDE, min_size: int = MIN_SIZE) -> list[Step]:
    """The change points of ``values`` (oldest first), in order (module docstring).

    Args:
        values: one value per run. max_pvalue: the t-test's level (default 0.001).
        min_magnitude: the smallest relative step kept (default 0). min_size: points on each
            side at least (default :data:`MIN_SIZE`).

    Returns:
        The steps that survive the merge, each tested against its neighbouring segments; none
        for fewer than ``2 * min_size`` values.
    """
    xs = [float(v) for v in values]
    cps = sorted(set(_candidates(xs, min_size))) if len(xs) >= 2 * min_size else []
    while cps:
        bounds = [0, *cps, len(xs)]
        steps = [_step(xs, bounds[i], bounds[i + 1], bounds[i + 2]) for i in range(len(cps))]
        weakest = max(range(len(steps)), key=lambda i: steps[i].p_value)
        if steps[weakest].p_value < max_pvalue:
            weakest = min(range(len(steps)), key=lambda i: steps[i].magnitude)
            if steps[weakest].magnitude >= min_magnitude:
                return steps
        del cps[weakest]
    return []
