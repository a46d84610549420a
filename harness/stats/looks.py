"""The looks of a sequential comparison: how many interleaved pairs are drawn before each
planned look at the data. Kept apart from :mod:`proofdiff.stats.paired` (numpy, scipy) so the
CLI can parse ``proofdiff gate --rounds`` without importing them."""

from __future__ import annotations

import argparse

__all__ = ["DEFAULT_BUDGET", "DEFAULT_INITIAL", "DEFAULT_STEP", "look_sizes", "timing_rounds"]

#: Default schedule: the first look at 6 pairs (1 warmup + 5 tested), then every 4 pairs, up to
#: 21 pairs (1 warmup + 20 tested).
DEFAULT_INITIAL, DEFAULT_STEP, DEFAULT_BUDGET = 6, 4, 21


def look_sizes(*, initial: int = DEFAULT_INITIAL, step: int = DEFAULT_STEP,
               budget: int = DEFAULT_BUDGET, warmup: int = 1) -> list[int]:
    """Pairs drawn (warmup included) at each planned look: ``initial``, ``+step``, ...,
    ``budget`` (the last step may be shorter).

    Raises:
        ValueError: ``warmup < 0``, ``initial <= warmup``, ``step < 1``, ``budget < initial``.
    """
    if warmup < 0 or initial <= warmup or step < 1 or budget < initial:
        raise ValueError(f"need 0 <= warmup < initial <= budget and step >= 1, got warmup="
                         f"{warmup}, initial={initial}, step={step}, budget={budget}")
    return [*range(initial, budget, step), budget]


def timing_rounds(text: str) -> int:
    """``--rounds N``: the most pairs (rounds) a gate's timing arm draws, the warmup included:
    a whole number from the first look (:data:`DEFAULT_INITIAL`) up.

    Raises:
        argparse.ArgumentTypeError: anything else (says what is expected and why).
    """
    try:
        val = int(text)
    except ValueError:
        val = 0
    if val < DEFAULT_INITIAL:
        raise argparse.ArgumentTypeError(
            f"{text!r}: expected a whole number of rounds >= {DEFAULT_INITIAL} (the first look "
            f"needs {DEFAULT_INITIAL}: a warm-up round and {DEFAULT_INITIAL - 1} tested)")
    return val
