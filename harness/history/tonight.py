"""Tonight against the recent nights of the same machine: did tonight get worse?

The nightly's question per timing series (metric x profile x workload, one machine
fingerprint): is tonight's value worse than the recent nights' level by more than their own
night-to-night spread allows? One-sided, so that a step is flagged on the night it happens,
where a change point (:mod:`proofdiff.history.changes`) needs nights on both of its sides.

**The recent nights** are the series' valued nights before tonight since its last change point
(the current level: a step already found is not the baseline of the next), the last
:data:`WINDOW` of them. Fewer than :data:`MIN_NIGHTS` is **undecided**: there is no level to be
worse than yet. A night flagged right after a flagged night is **still** slower, the same step
(reported, not new), until the change points see the step and start the new level.

**The test** is on the log of the nightly values (a step is a ratio): the one-sided prediction
t statistic of tonight against the recent nights, ``t = (y0 - mean) / (s sqrt(1 + 1/n))``, ``s``
their standard deviation, ``n - 1`` degrees of freedom (a new observation against a normal
sample: Hahn & Meeker, *Statistical Intervals*, 1991, section 4.7). It uses the spread between
nights, which on the machines measured is most of the noise (the drift of a machine from one
run to the next, which more proofs per night do not average out: tests/data/history/
PROVENANCE.md), so its false-alarm rate holds whatever a machine's drift, and a noisy machine
gets a wider bound rather than false alarms (the spread is taken as :data:`SPREAD_FLOOR` at
least). Tonight is **new** when ``t`` passes the level that
its share of the machine's nightly false-alarm rate :data:`NIGHT_ALPHA` sets (the series judged
tonight share it: Bonferroni), worse in the metric's worse direction.

Each test carries its evidence: the step (tonight over the recent level), the recent nights
and their builds, ``t``, ``df`` and ``p``, and the **MDE**: the step this series flags on its
first night with 90 % power at its measured spread.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from scipy import special  # type: ignore[import-untyped]

from proofdiff.history.changes import change_points
from proofdiff.history.query import Point, Series

__all__ = ["MIN_NIGHTS", "NIGHT_ALPHA", "SPREAD_FLOOR", "TonightTest", "WINDOW",
           "recent_nights", "tonight_test"]

#: Earlier nights at the current level that a night is compared with, at least.
MIN_NIGHTS = 3
#: ... and at most (the most recent).
WINDOW = 10
#: A machine's nightly false-NEW rate from the timing series, all of them together: one false
#: NEW in 60 clean nights expected, so that 30 clean nights see at most one in most months.
NIGHT_ALPHA = 1.0 / 60.0
#: The power the MDE is stated at.
MDE_POWER = 0.90
#: The least spread a series' nights are taken to have (of the log values): a night's value is
#: a median of a few proofs, which no machine measured repeats within this, so a few nights that
#: happen to agree closely do not make any small step look certain.
SPREAD_FLOOR = 0.005


@dataclass(frozen=True)
class TonightTest:
    """One series' test of tonight (module docstring).

    Attributes:
        metric, unit, profile, workload, worse: the series. tonight: its last point.
        recent: the recent nights compared (oldest first). new: tonight is worse, flagged.
        still: tonight is worse, and so was the night before (the same step: not new).
        undecided: why there was nothing to compare ('' when compared). step: tonight over
            the recent level, less 1 (``+0.10`` = 10 % higher). spread: the recent nights'
            standard deviation of the log values. t, df, p: the one-sided prediction test
            (``p`` against ``alpha``, this series' share). mde: the step flagged on a first
            night with 90 % power at this spread (a fraction; ``None`` when undecided).
    """

    metric: str
    unit: str
    profile: str
    workload: str
    worse: str
    tonight: Point
    recent: tuple[Point, ...]
    new: bool = False
    still: bool = False
    undecided: str = ""
    step: float = 0.0
    spread: float = 0.0
    t: float = 0.0
    df: int = 0
    p: float = 1.0
    alpha: float = 0.0
    mde: float | None = None

    def level(self) -> float:
        """The recent nights' level (geometric mean, the metric's unit)."""
        return math.exp(statistics.fmean(math.log(p.value or 1.0) for p in self.recent))

    def headline(self) -> str:
        """``night N (image X): +10.4 % against the 5 nights before it (image Y)``."""
        imgs = sorted({p.image_tag for p in self.recent})
        return (f"night {self.tonight.run_id} ({self.tonight.image_tag}): {self.step:+.1%} in "
                f"{self.unit} against the {len(self.recent)} night(s) before it "
                f"({', '.join(imgs)})")

    def evidence(self) -> str:
        """The numbers: tonight's value, the recent nights (run, image, value), the level,
        the spread, t, df, p against alpha, the MDE."""
        nights = "; ".join(f"{p.run_id} {p.image_tag} {p.value:.4g}" for p in self.recent)
        return (f"tonight {self.tonight.value:.4g} {self.unit} against the level "
                f"{self.level():.4g} of {len(self.recent)} night(s) [{nights}]; spread "
                f"{self.spread:.2%} a night; one-sided prediction t={self.t:.2f} (df {self.df}), "
                f"p={self.p:.2g} against {self.alpha:.3g}; this series flags a step of "
                f"{(self.mde or 0.0):.1%} on its first night 9 times in 10")


def _flagged(tonight: Point, recent: Sequence[Point], sign: float, alpha: float
             ) -> tuple[bool, float, float, int, float, float, float]:
    """``(flagged, step, spread, df, t, p, mde)`` of ``tonight`` against ``recent``."""
    ys = [math.log(p.value or 1.0) for p in recent]
    n = len(ys)
    mean = statistics.fmean(ys)
    s = max(statistics.stdev(ys), SPREAD_FLOOR)
    y0 = math.log(tonight.value or 1.0)
    scale = s * math.sqrt(1.0 + 1.0 / n)
    t = sign * (y0 - mean) / scale
    df = n - 1
    p = float(special.stdtr(df, -t))
    crit = float(special.stdtrit(df, 1.0 - alpha))
    mde = math.expm1((crit + float(special.stdtrit(df, MDE_POWER))) * scale)
    return p < alpha, math.expm1(y0 - mean), s, df, t, p, mde


def recent_nights(points: Sequence[Point], sign: float, alpha: float, *,
                  min_nights: int = MIN_NIGHTS, window: int = WINDOW
                  ) -> tuple[list[Point], bool]:
    """The recent nights of ``points`` (oldest first: the valued points since their last
    change point, the last ``window`` of them), and whether the last of them was itself
    flagged against the nights before it."""
    valued = [p for p in points if p.value is not None and p.value > 0]
    steps = change_points([p.value or 0.0 for p in valued])
    level = valued[steps[-1].index if steps else 0:]
    last = len(level) > min_nights and _flagged(level[-1], level[:-1][-window:], sign,
                                                alpha)[0]
    return level[-window:], last


def tonight_test(series: Series, alpha: float, *, min_nights: int = MIN_NIGHTS,
                 window: int = WINDOW) -> TonightTest | None:
    """Tonight (the series' last point) against its recent nights (module docstring);
    ``None`` when tonight has no value or the metric has no worse direction. A night flagged
    right after a flagged night is ``still`` slower, not new.

    Args:
        alpha: this series' share of the machine's nightly false-alarm rate.
    """
    pts = list(series.points)
    spec = series.metric
    if not pts or pts[-1].value is None or pts[-1].value <= 0 or not spec.worse:
        return None
    sign = 1.0 if spec.worse == "higher" else -1.0
    recent, before = recent_nights(pts[:-1], sign, alpha, min_nights=min_nights,
                                   window=window)
    base = dict(metric=spec.name, unit=spec.unit, profile=series.profile,
                workload=series.workload, worse=spec.worse, tonight=pts[-1],
                recent=tuple(recent), alpha=alpha)
    if len(recent) < min_nights:
        return TonightTest(**base, undecided=(  # type: ignore[arg-type]
            f"{len(recent)} earlier night(s) at the current level; {min_nights} needed"))
    flagged, step, spread, df, t, p, mde = _flagged(pts[-1], recent, sign, alpha)
    return TonightTest(**base, new=flagged and not before, still=flagged and before,  # type: ignore[arg-type]
                       step=step, spread=spread, t=t, df=df, p=p, mde=mde)
