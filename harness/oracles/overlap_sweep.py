"""The most intervals in progress at one instant: one sweep over their ends.

Two oracles ask this question of different intervals: work items the daemon logged
(:mod:`proofdiff.oracles.log_events`) and jobs whose proving the answers make certain
(:mod:`proofdiff.oracles.observed_overlap`).
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["most_at_once"]


def most_at_once(intervals: Sequence[tuple[float, float]]) -> tuple[int, float, tuple[int, ...]]:
    """``(count, when, indices)``: the most of ``intervals`` (``(start, end)``, seconds) that
    share an instant, the first instant it is reached, and the indices into ``intervals`` of
    those in progress then, in the order they started. Touching ends do not overlap: at one
    instant an end is taken before a start."""
    events = sorted([(s, 1, n) for n, (s, _e) in enumerate(intervals)]
                    + [(e, -1, n) for n, (_s, e) in enumerate(intervals)],
                    key=lambda ev: (ev[0], ev[1]))
    best, when = 0, 0.0
    live: dict[int, None] = {}  # insertion-ordered: the order the intervals started
    best_live: tuple[int, ...] = ()
    for t, step, n in events:
        if step > 0:
            live[n] = None
        else:
            live.pop(n, None)
        if len(live) > best:
            best, when, best_live = len(live), t, tuple(live)
    return best, when, best_live
