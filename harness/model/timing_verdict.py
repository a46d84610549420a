"""One timing verdict record, whatever test made it: the unpaired comparison of the timing
suite (Mann-Whitney U, :mod:`proofdiff.stats.unpaired`) and the paired sequential one of the
gate (:mod:`proofdiff.stats.paired`) both return a :class:`TimingVerdict`, which oracle records,
the gate's result, the reports and the history read as it is.

Every number is JSON-safe: what a test could not compute is ``None``, never NaN
(:func:`json_safe`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import msgspec

from proofdiff.model.status import Comparison

__all__ = ["NO_SAMPLES", "SampleSummary", "TimingVerdict", "json_safe", "json_safe_all"]


def json_safe(x: float | None) -> float | None:
    """``x`` as a float, or ``None`` when it is ``None``, NaN or infinite (JSON has no NaN:
    msgspec would write ``null`` into a float field and fail to read it back)."""
    if x is None or not math.isfinite(x):
        return None
    return float(x)


def json_safe_all(xs: Iterable[float]) -> tuple[float, ...]:
    """Every finite value of ``xs`` as a float (a sample that is not a number is not a
    sample)."""
    return tuple(float(x) for x in xs if math.isfinite(x))


class SampleSummary(msgspec.Struct, frozen=True, kw_only=True):
    """One side's tested samples: ``n``, median, quartiles, min, max (in the verdict's
    ``unit``; all 0 when ``n`` is 0: :data:`NO_SAMPLES`)."""

    n: int
    median: float
    q1: float
    q3: float
    min: float
    max: float

    @property
    def iqr(self) -> float:
        """The interquartile range, ``q3 - q1``."""
        return self.q3 - self.q1

    def render(self, unit: str = "ms") -> str:
        """``median 3712 ms (IQR 3650-3790, n=6)``."""
        f = ".0f" if unit == "ms" else ".3g"
        return f"median {self.median:{f}} {unit} (IQR {self.q1:{f}}-{self.q3:{f}}, n={self.n})"


#: The summary of no samples.
NO_SAMPLES = SampleSummary(n=0, median=0.0, q1=0.0, q3=0.0, min=0.0, max=0.0)


def _num(x: float | None, spec: str) -> str:
    return "-" if x is None else format(x, spec)


class TimingVerdict(msgspec.Struct, frozen=True, kw_only=True):
    """The verdict of one timing comparison, ``right`` vs ``left`` (ratio = right / left).

    Attributes:
        arm: what was compared (``latency bench``, ``A/A bench``, ``throughput prod``).
        metric: the quantity (``latency``, ``throughput``, ``in-progress``, ``per-proof cost``).
        left, right: the two sides' labels (the baseline first).
        verdict: SAME | DIFFERENT | INCONCLUSIVE (:class:`~proofdiff.model.status.Comparison`).
        test: the test that made it (``Mann-Whitney U on log samples``, ``paired t-test on
            log-ratios``). paired: pair ``i`` is (left ``i``, right ``i``).
        unit: the samples' unit (``ms``, ``jobs``).
        direction: for DIFFERENT, which way ``right`` moved: ``slower`` / ``faster`` (ms),
            ``higher`` / ``lower`` (other units); '' otherwise.
        worse: which direction is a regression (``higher`` | ``lower``; '' = not judged).
        regression: DIFFERENT in the ``worse`` direction (computed once, when made).
        left_summary, right_summary: the tested samples of each side.
        n_pairs, warmup_pairs: paired: pairs tested, and leading pairs set apart (kept in the
            samples, not tested).
        ratio: the estimated ratio (Hodges-Lehmann for unpaired, the geometric mean of the
            paired ratios); ratio_ci: its (1 - alpha_look) interval; equivalence_ci (paired):
            the (1 - 2 alpha_look) interval the SAME decision reads.
        p_value, statistic (U or t), df (paired), effect_size (rank-biserial, unpaired),
            log_ratio_sd (paired: the pair noise).
        floor_rel: the effect-size floor (a change within it is SAME). alpha: the family-wise
            level of all looks; alpha_look: this look's nominal level; alpha_spent: alpha spent
            up to this look; look, max_looks: which look, of how many planned.
        beta, beta_look (paired): the false-SAME level over all looks (a change at the floor
            said SAME at most this often) and this look's share of it; ``None`` unpaired.
        reason: one sentence on why this verdict.
        left_samples, right_samples: every sample in drawing order (warmup first).
    """

    arm: str
    metric: str
    left: str
    right: str
    verdict: Comparison
    test: str
    paired: bool = False
    unit: str = "ms"
    direction: str = ""
    worse: str = ""
    regression: bool = False
    left_summary: SampleSummary = NO_SAMPLES
    right_summary: SampleSummary = NO_SAMPLES
    n_pairs: int = 0
    warmup_pairs: int = 0
    ratio: float | None = None
    ratio_ci: tuple[float | None, float | None] = (None, None)
    equivalence_ci: tuple[float | None, float | None] = (None, None)
    p_value: float | None = None
    statistic: float | None = None
    df: int | None = None
    effect_size: float | None = None
    log_ratio_sd: float | None = None
    floor_rel: float = 0.05
    alpha: float = 0.05
    look: int = 1
    max_looks: int = 1
    alpha_look: float | None = None
    alpha_spent: float | None = None
    beta: float | None = None
    beta_look: float | None = None
    reason: str = ""
    left_samples: tuple[float, ...] = ()
    right_samples: tuple[float, ...] = ()

    @property
    def samples(self) -> int:
        """The smaller side's count of tested samples."""
        return min(self.left_summary.n, self.right_summary.n)

    def line(self) -> str:
        """``DIFFERENT slower, ratio 1.062 [1.031, 1.094] (10 pairs)``."""
        head = f"{self.verdict.value}" + (f" {self.direction}" if self.direction else "")
        n = (f"{self.n_pairs} pairs" if self.paired
             else f"{self.left_summary.n}+{self.right_summary.n} samples")
        return (f"{head}, ratio {_num(self.ratio, '.3f')} [{_num(self.ratio_ci[0], '.3f')}, "
                f"{_num(self.ratio_ci[1], '.3f')}] ({n})")

    def render(self) -> str:
        """One paragraph: the verdict and why, both sides, the ratio with its interval, the
        test's statistic and p, the floor and alpha."""
        head = f"{self.verdict.value}, {self.right} {self.direction}" if self.direction \
            else self.verdict.value
        warm = f" after {self.warmup_pairs} warmup pair(s)" if self.warmup_pairs else ""
        stat = (f"t={_num(self.statistic, '.2f')} (df {self.df})" if self.paired
                else f"U={_num(self.statistic, '.1f')}, rank-biserial "
                     f"{_num(self.effect_size, '+.2f')}")
        return (f"{self.arm}: {head} ({self.reason})\n"
                f"  {self.left}: {self.left_summary.render(self.unit)}\n"
                f"  {self.right}: {self.right_summary.render(self.unit)}{warm}\n"
                f"  ratio {self.right}/{self.left} = {_num(self.ratio, '.3f')} "
                f"[{_num(self.ratio_ci[0], '.3f')}, {_num(self.ratio_ci[1], '.3f')}]; "
                f"{self.test}: {stat}, p={_num(self.p_value, '.4g')}; look {self.look}/"
                f"{self.max_looks} at alpha {_num(self.alpha_look, '.4f')} (family-wise "
                f"{self.alpha}); floor +/-{self.floor_rel * 100:g}%")
