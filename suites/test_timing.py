"""Timing within one run (docs/design/statistics.md): steady latency and throughput per
profile; A/A on the baseline; throughput and jobs really in progress at once, each profile vs
the baseline.
Samples are interleaved through each profile's own driver; each arm describes the ratio with
its interval (``proofdiff.oracles.timing``) and fails only where the interval shows a property
broken (a throughput that collapsed, jobs that never overlap): never undecided."""

from __future__ import annotations

from collections.abc import Callable

import pytest

pytestmark = pytest.mark.proofdiff


def test_latency_and_throughput(proofdiff_check: Callable[..., object],
                                proofdiff_profile_name: str) -> None:
    proofdiff_check("timing", "latency-throughput")


@pytest.mark.parametrize("arm", ["aa", "throughput", "concurrency"])
def test_arm(proofdiff_check: Callable[..., object], proofdiff_profile_name: str,
             arm: str) -> None:
    """``aa`` exists on the baseline only; the scaling arms on the other profiles only."""
    proofdiff_check("timing", arm)
