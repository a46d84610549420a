"""One-sided group-sequential boundaries for the gate's paired test (:mod:`proofdiff.stats.paired`).

The gate looks at a metric after every round from its first look on, so each of its two
one-sided questions (WORSE: is the candidate worse than the margin?; WITHIN: is it less than
the tolerance worse?) needs a boundary per look that keeps the question's error rate over all
looks at its level. The boundaries here are error-spending boundaries (Lan & DeMets 1983,
"Discrete sequential boundaries for clinical trials", Biometrika 70(3)) with the Hwang-Shih-
DeCani spending family (Hwang, Shih & DeCani 1990, Statistics in Medicine 9(12)),
``spent(t) = level * (1 - exp(-gamma t)) / (1 - exp(-gamma))`` (``gamma = 0``: linear), over the
information fraction ``t = n / max_pairs`` of a fixed maximum: a cap sized later from the noise
only ends sampling early (INCONCLUSIVE), which can only lower both error rates, so the levels
hold whatever the cap.

Each boundary is placed for the statistic the gate really computes: the trimmed mean of the
log-ratios over its Tukey-McLaughlin standard error (:func:`trimmed`), on :data:`PATHS` seeded
null paths of normal log-ratios (the same paths on every run: the boundaries are
deterministic), so no t approximation of the trimmed statistic is involved. Look ``k``'s
boundary ``c_k`` is the value that the not yet crossed paths exceed in ``spent(t_k) - spent
(t_{k-1})`` of all paths; the first look's is the quantile itself.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import lru_cache

import numpy as np

__all__ = ["MAX_PAIRS_LIMIT", "PATHS", "critical_values", "spent", "trimmed"]

#: Null paths that place the boundaries.
PATHS = 1 << 16
_SEED = 20261207
#: The most tested pairs a schedule may plan (the paths' memory: PATHS x this x 4 bytes).
MAX_PAIRS_LIMIT = 200


def spent(t: float, level: float, gamma: float) -> float:
    """The error spent up to information fraction ``t`` (0 at t <= 0, ``level`` at t >= 1):
    the Hwang-Shih-DeCani function (module docstring); ``gamma`` 0 is linear, negative values
    spend late (O'Brien-Fleming-like), positive early (Pocock-like)."""
    if t <= 0.0:
        return 0.0
    if t >= 1.0:
        return level
    if gamma == 0.0:
        return level * t
    return level * (1.0 - math.exp(-gamma * t)) / (1.0 - math.exp(-gamma))


def trimmed(d: Sequence[float] | np.ndarray, trim: float) -> tuple[float, float, int, float]:
    """``(mean, se, df, sd)`` of the ``trim``-trimmed mean of ``d``: ``g = floor(trim * n)``
    values cut at each end, the winsorized standard deviation ``sd_w``, ``se = sd_w / ((1 -
    2 g / n) sqrt(n))`` (Tukey & McLaughlin 1963; Wilcox, *Introduction to Robust Estimation
    and Hypothesis Testing*, 4th ed., 2017, section 4.5), ``df = n - 2 g - 1``, and ``sd = se *
    sqrt(n)``: one pair's noise on the scale of the trimmed mean. ``trim = 0`` is the plain mean
    with its t-test's standard error. Equal to ``scipy.stats.trim_mean`` and the standard
    deviation of ``scipy.stats.mstats.winsorize`` (tests/unit/test_stats_paired.py), without
    their masked arrays.

    Raises:
        ValueError: fewer than 2 values.
    """
    n = len(d)
    if n < 2:
        raise ValueError(f"a trimmed mean's standard error needs 2 values or more, got {n}")
    g = int(math.floor(trim * n))
    x = np.sort(np.asarray(d, dtype=float))
    m = float(x[g:n - g].mean())
    w = np.clip(x, x[g], x[n - g - 1])
    sd = float(w.std(ddof=1)) / (1.0 - 2.0 * g / n)
    return m, sd / math.sqrt(n), n - 2 * g - 1, sd


@lru_cache(maxsize=4)
def _paths(max_pairs: int) -> np.ndarray:
    """:data:`PATHS` seeded null paths of ``max_pairs`` standard normal log-ratios (float32)."""
    rng = np.random.default_rng(_SEED)
    return rng.standard_normal((PATHS, max_pairs), dtype=np.float32)


def _statistic(x: np.ndarray, n: int, trim: float) -> np.ndarray:
    """The trimmed mean over its standard error (:func:`trimmed`) of each path's first ``n``."""
    s = np.sort(x[:, :n].astype(np.float64), axis=1)
    g = int(math.floor(trim * n))
    m = s[:, g:n - g].mean(axis=1)
    w = np.clip(s, s[:, [g]], s[:, [n - g - 1]])
    se = w.std(axis=1, ddof=1) / ((1.0 - 2.0 * g / n) * math.sqrt(n))
    return np.asarray(m / np.maximum(se, 1e-300))


@lru_cache(maxsize=64)
def critical_values(first: int, max_pairs: int, trim: float,
                    spending: tuple[tuple[float, float], ...]) -> tuple[tuple[float, ...], ...]:
    """Per ``(level, gamma)`` of ``spending``, the boundary of each look ``n = first, first + 1,
    ..., max_pairs`` tested pairs (module docstring): a one-sided question crosses at look
    ``n`` when its statistic reaches ``c[n - first]``; ``inf`` where that look spends nothing.

    Raises:
        ValueError: ``first < 3`` or ``first > max_pairs`` or ``max_pairs`` above
            :data:`MAX_PAIRS_LIMIT`; a level not in (0, 0.5); ``trim`` not in [0, 0.5).
    """
    if not 3 <= first <= max_pairs <= MAX_PAIRS_LIMIT:
        raise ValueError(f"need 3 <= first <= max_pairs <= {MAX_PAIRS_LIMIT}, got first="
                         f"{first}, max_pairs={max_pairs}")
    if any(not 0.0 < level < 0.5 for level, _ in spending) or not 0.0 <= trim < 0.5:
        raise ValueError(f"levels must be in (0, 0.5) and trim in [0, 0.5): {spending}, {trim}")
    x = _paths(max_pairs)
    alive = [np.ones(PATHS, dtype=bool) for _ in spending]
    crossed = [0] * len(spending)
    out: list[list[float]] = [[] for _ in spending]
    for n in range(first, max_pairs + 1):
        z = _statistic(x, n, trim)
        for i, (level, gamma) in enumerate(spending):
            quota = round(spent(n / max_pairs, level, gamma) * PATHS) - crossed[i]
            live = z[alive[i]]
            if quota <= 0 or not len(live):
                out[i].append(math.inf)
                continue
            k = len(live) - quota
            c = float(np.partition(live, k)[k]) if k > 0 else float(live.min())
            hit = alive[i] & (z >= c)
            crossed[i] += int(hit.sum())
            alive[i] &= ~hit
            out[i].append(c)
    return tuple(tuple(c) for c in out)
