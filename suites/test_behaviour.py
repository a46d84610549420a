"""Behaviour, per profile: what the daemon really does against what the profile asked for:
priority before FIFO, the proving mode and workers asked for, the in-flight limit kept, and
memory and CPU under the container's limits (``proofdiff.oracles.behaviour``)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from proofdiff.oracles.behaviour import ORACLES

pytestmark = pytest.mark.proofdiff


@pytest.mark.parametrize("oracle", ORACLES)
def test_behaviour(proofdiff_check: Callable[..., object], proofdiff_profile_name: str,
                   oracle: str) -> None:
    proofdiff_check("behaviour", oracle)
