"""The gate's round cap: ``proofdiff gate --rounds``. Kept apart from
:mod:`proofdiff.stats.paired` (numpy, scipy) so the CLI can parse it without importing them."""

from __future__ import annotations

import argparse

__all__ = ["DEFAULT_BUDGET", "FIRST_ROUNDS", "MAX_ROUNDS", "max_slowdown", "timing_rounds"]

#: The most rounds of one timing arm by default, the warm-up included (60 tested pairs): a
#: ceiling; each metric's own cap comes from its noise (:mod:`proofdiff.stats.paired`).
DEFAULT_BUDGET = 61
#: Rounds before the first look: the warm-up and 5 tested pairs
#: (:data:`proofdiff.stats.paired.DEFAULT_FIRST`).
FIRST_ROUNDS = 6
#: The most rounds ``--rounds`` accepts (:data:`proofdiff.stats.boundaries.MAX_PAIRS_LIMIT` + 1).
MAX_ROUNDS = 201


def timing_rounds(text: str) -> int:
    """``--rounds N``: the most rounds of a gate's timing arm, the warm-up included: a whole
    number from the first look (:data:`FIRST_ROUNDS`) to :data:`MAX_ROUNDS`.

    Raises:
        argparse.ArgumentTypeError: anything else (says what is expected and why).
    """
    try:
        val = int(text)
    except ValueError:
        val = 0
    if not FIRST_ROUNDS <= val <= MAX_ROUNDS:
        raise argparse.ArgumentTypeError(
            f"{text!r}: expected a whole number of rounds from {FIRST_ROUNDS} (the first look: "
            f"a warm-up round and {FIRST_ROUNDS - 1} tested) to {MAX_ROUNDS}")
    return val


def max_slowdown(text: str) -> float:
    """``--max-slowdown X``: the tolerated slowdown, a fraction (``0.05``) or a percentage
    (``5%``), above 0 and below 100 %.

    Raises:
        argparse.ArgumentTypeError: anything else (says what is expected).
    """
    raw = text.strip()
    try:
        val = float(raw[:-1]) / 100.0 if raw.endswith("%") else float(raw)
    except ValueError:
        val = -1.0
    if not 0.0 < val < 1.0:
        raise argparse.ArgumentTypeError(
            f"{text!r}: expected the tolerated slowdown as a fraction in (0, 1) such as 0.05, "
            "or a percentage such as 5%")
    return val
