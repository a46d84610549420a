"""Tonight's timing against the nights before it (pure: series in, slowdowns out).

Two questions, per timing series of this machine (metric x profile x workload):

1. **Is tonight worse than the recent nights?** (:func:`proofdiff.history.tonight.tonight_test`,
   the series judged tonight sharing the machine's nightly rate
   :data:`~proofdiff.history.tonight.NIGHT_ALPHA`, Bonferroni): a step is NEW on the night it
   happens, once the series has :data:`~proofdiff.history.tonight.MIN_NIGHTS` earlier nights at
   its current level; before that the series is **undecided**, and said so.
2. **Does the longer series show a change point it did not show last night?**
   (:func:`proofdiff.history.view.analyse`, Hunter's method): a slow drift that no single night
   shows, or a step that the first night did not show. A change point whose first night was
   itself flagged by question 1 (the same test, rerun on the series as it stood that night)
   **confirms** that step and is not new again.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import msgspec

from proofdiff.history.query import Series
from proofdiff.history.tonight import NIGHT_ALPHA, TonightTest, tonight_test
from proofdiff.history.view import SeriesView
from proofdiff.nightly.nightly_result import SeriesCompare, Slowdown

__all__ = ["TONIGHT_METRICS", "judge_timing"]

#: The metrics tonight is tested on: the proving times proofdiff measured itself
#: (start-to-ready is left to the change points: it is not proving).
TONIGHT_METRICS = ("latency", "throughput")


def _tests(series: Sequence[Series]) -> list[TonightTest]:
    """Tonight's test of each series of :data:`TONIGHT_METRICS`, the judged ones sharing
    :data:`NIGHT_ALPHA`."""
    mine = [s for s in series if s.metric.name in TONIGHT_METRICS]
    first = [t for s in mine if (t := tonight_test(s, NIGHT_ALPHA)) is not None]
    judged = sum(not t.undecided for t in first)
    share = NIGHT_ALPHA / max(1, judged)
    return [t for s in mine if (t := tonight_test(s, share)) is not None]


def _of(t: TonightTest) -> Slowdown:
    return Slowdown(metric=t.metric, unit=t.unit, profile=t.profile, workload=t.workload,
                    run_id=t.tonight.run_id, headline=t.headline(), evidence=t.evidence(),
                    kind="tonight", step=t.step, before=tuple(p.run_id for p in t.recent),
                    images_before=tuple(p.image_tag for p in t.recent),
                    image_after=t.tonight.image_tag)


def _flagged_then(s: Series, run_id: str, share: float) -> bool:
    """Whether the series, as it stood on night ``run_id``, had that night flagged."""
    upto = [p.run_id for p in s.points].index(run_id) + 1
    got = tonight_test(replace(s, points=s.points[:upto]), share)
    return got is not None and got.new


def judge_timing(before: Sequence[SeriesView], after: Sequence[SeriesView]
                 ) -> tuple[list[Slowdown], list[Slowdown], list[SeriesCompare]]:
    """``(slowdowns, confirmed, compared)`` for tonight (module docstring): ``after`` holds
    each series with tonight as its last night and its change points, ``before`` the same
    without tonight."""
    tests = _tests([v.series for v in after])
    share = NIGHT_ALPHA / max(1, sum(not t.undecided for t in tests))
    slowdowns = [_of(t) for t in tests if t.new]
    compared = [SeriesCompare(
        metric=t.metric, profile=t.profile, workload=t.workload,
        outcome=("undecided" if t.undecided else "new" if t.new else "still slower" if t.still
                 else "not worse"),
        line=(f"undecided: {t.undecided}" if t.undecided else
              f"{t.step:+.1%} against {len(t.recent)} night(s), t={t.t:.2f} (df {t.df}), "
              f"p={t.p:.2g} against {t.alpha:.3g}; flags {t.mde or 0.0:.1%} on a first night"),
        step=t.step, nights=len(t.recent), mde=t.mde) for t in tests]
    seen = {(v.series.machine.fingerprint, v.series.profile, v.series.workload,
             v.series.metric.name, c.run_id) for v in before for c in v.changes}
    confirmed: list[Slowdown] = []
    for v in after:
        s = v.series
        for c in v.changes:
            key = (s.machine.fingerprint, s.profile, s.workload, s.metric.name, c.run_id)
            if not c.regression or key in seen:
                continue
            at = [p.run_id for p in s.valued].index(c.run_id)
            cp = Slowdown(metric=s.metric.name, unit=s.metric.unit, profile=s.profile,
                          workload=s.workload, run_id=c.run_id,
                          headline=c.headline(s.metric.unit),
                          evidence=c.step.evidence(s.metric.unit), step=c.step.rel_change,
                          before=tuple(p.run_id for p in s.valued[max(0, at - c.step.n_before)
                                                                   :at]),
                          images_before=(c.before.image_tag,), image_after=c.after.image_tag)
            if s.metric.name in TONIGHT_METRICS and _flagged_then(s, c.run_id, share):
                confirmed.append(msgspec.structs.replace(cp, confirms=c.run_id))
            else:
                slowdowns.append(cp)
    return slowdowns, confirmed, compared
