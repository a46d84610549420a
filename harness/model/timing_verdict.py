"""One timing verdict record, whatever test made it: the unpaired, two-sided comparison of the
timing suite (Mann-Whitney U, :mod:`proofdiff.stats.unpaired`) and the paired, one-sided,
sequential one of the gate (:mod:`proofdiff.stats.paired`) both return a :class:`TimingVerdict`,
which oracle records, the gate's result, the reports and the history read as it is.

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


def _pct(x: float | None) -> str:
    """``0.0512`` -> ``5.1 %``; ``-`` for ``None``."""
    return "-" if x is None else f"{100.0 * x:.1f} %"


class TimingVerdict(msgspec.Struct, frozen=True, kw_only=True):
    """The verdict of one timing comparison, ``right`` vs ``left`` (ratio = right / left).

    Attributes:
        arm: what was compared (``latency bench``, ``A/A bench``, ``throughput prod``).
        metric: the quantity (``latency``, ``throughput``, ``in-progress``, ``per-proof cost``).
        left, right: the two sides' labels (the baseline first).
        verdict: SAME | DIFFERENT | INCONCLUSIVE (two-sided, unpaired), WITHIN | WORSE |
            INCONCLUSIVE (the gate's one-sided question) (:class:`~proofdiff.model.status.
            Comparison`).
        test: the test that made it (``Mann-Whitney U on log samples``, ``paired t-test on
            log-ratios``). paired: pair ``i`` is (left ``i``, right ``i``).
        unit: the samples' unit (``ms``, ``jobs``).
        direction: which way ``right`` moved where its interval says so: for DIFFERENT and
            WORSE, and for WITHIN when the whole interval lies on one side of 1: ``slower`` /
            ``faster`` (ms), ``higher`` / ``lower`` (other units); '' otherwise.
        worse: which direction is a regression (``higher`` | ``lower``; '' = not judged).
        regression: DIFFERENT in the ``worse`` direction, or WORSE (computed once, when made).
        left_summary, right_summary: the tested samples of each side.
        n_pairs, warmup_pairs: paired: pairs tested, and leading pairs set apart (kept in the
            samples, not tested).
        ratio: the estimated ratio (Hodges-Lehmann for unpaired, the trimmed geometric mean of
            the paired ratios); ratio_ci: its (1 - alpha_look) interval (unpaired); paired: the
            bound that the WORSE question reads on the better side and the bound that the
            WITHIN question reads on the worse side, each at its own level (the gate's
            boundaries, :mod:`proofdiff.stats.paired`); equivalence_ci: unused, as the gate
            asks one-sided (``None``).
        p_value, statistic (U or t), df (paired), effect_size (rank-biserial, unpaired),
            log_ratio_sd (paired: the pair noise).
        floor_rel: the effect-size floor of the two-sided tests (a change within it is SAME).
            alpha: unpaired, the level of all looks; paired, this metric's false-WORSE level
            over all looks (its share of the gate's family-wise level); alpha_look: this
            look's nominal level; alpha_spent: alpha spent up to this look; look, max_looks:
            which look, of how many planned (paired: one look per tested pair from the first).
        beta, beta_look (paired): the false-WITHIN level over all looks (a candidate worse by
            exactly the tolerance said WITHIN at most this often) and this look's nominal
            level; ``None`` unpaired.
        max_slowdown, margin (paired): the tolerated slowdown (``--max-slowdown``) and the
            practical margin below which a slowdown is never WORSE, as fractions (0.05 = 5 %).
        mde (paired): the smallest tolerated slowdown that this metric's measured noise
            decides within ``max_pairs`` (a fraction): where it exceeds ``max_slowdown`` the
            tolerance asked is finer than the noise allows.
        cap_pairs, max_pairs (paired): the tested pairs this metric is sampled to at most, sized
            from its noise (0 = not sized yet), and the most any metric may have
            (``--rounds`` less the warm-up).
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
    max_slowdown: float | None = None
    margin: float | None = None
    mde: float | None = None
    cap_pairs: int = 0
    max_pairs: int = 0
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

    @property
    def one_sided(self) -> bool:
        """A verdict of the gate's one-sided question (it has a tolerated slowdown)."""
        return self.max_slowdown is not None

    def line(self) -> str:
        """``DIFFERENT slower, ratio 1.062 [1.031, 1.094] (10 pairs)``; the gate's: ``WITHIN,
        ratio 0.992 [0.975, 1.021] (12 pairs; max slowdown 5 %, MDE 3.1 %)``."""
        head = f"{self.verdict.value}" + (f" {self.direction}" if self.direction else "")
        if self.one_sided:
            return (f"{head}, ratio {_num(self.ratio, '.3f')} [{_num(self.ratio_ci[0], '.3f')}, "
                    f"{_num(self.ratio_ci[1], '.3f')}] ({self.n_pairs} pairs; max slowdown "
                    f"{_pct(self.max_slowdown)}, MDE {_pct(self.mde)})")
        n = (f"{self.n_pairs} pairs" if self.paired
             else f"{self.left_summary.n}+{self.right_summary.n} samples")
        return (f"{head}, ratio {_num(self.ratio, '.3f')} [{_num(self.ratio_ci[0], '.3f')}, "
                f"{_num(self.ratio_ci[1], '.3f')}] ({n})")

    def render(self) -> str:
        """One paragraph: the verdict and why, both sides, the ratio with its interval, the
        test's statistic and p, the floor (two-sided) or the tolerance, margin, noise and
        MDE (one-sided), and alpha."""
        head = f"{self.verdict.value}, {self.right} {self.direction}" if self.direction \
            else self.verdict.value
        if self.one_sided:
            return (f"{self.arm}: {head} ({self.reason})\n"
                    f"  {self.left}: {self.left_summary.render(self.unit)}\n"
                    f"  {self.right}: {self.right_summary.render(self.unit)}"
                    f"{f' after {self.warmup_pairs} warmup pair(s)' if self.warmup_pairs else ''}"
                    f"\n  ratio {self.right}/{self.left} = {_num(self.ratio, '.3f')} "
                    f"[{_num(self.ratio_ci[0], '.3f')}, {_num(self.ratio_ci[1], '.3f')}]; "
                    f"{self.test}: t={_num(self.statistic, '.2f')} against the margin, "
                    f"p={_num(self.p_value, '.3g')}; {self.n_pairs} pairs (sized to "
                    f"{self.cap_pairs or '-'}, at most {self.max_pairs}); max slowdown "
                    f"{_pct(self.max_slowdown)}, margin {_pct(self.margin)}, noise sd "
                    f"{_pct(self.log_ratio_sd)} per pair, MDE {_pct(self.mde)}; false WORSE "
                    f"<= {self.alpha:.4g}, false WITHIN <= {_num(self.beta, '.3g')}")
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
