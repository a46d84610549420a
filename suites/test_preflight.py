"""Preflight, before any proof, per profile: the image and its digest, the workload file, the
params readable where the daemon really reads them (checked inside the container), the config
keys the daemon knows, a bench-cli profile's command line (``proofdiff.oracles.preflight``).
A failed blocking check makes the proving suites skip that profile, with the reason."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from proofdiff.oracles.preflight import ORACLES

pytestmark = pytest.mark.proofdiff


@pytest.mark.parametrize("oracle", ORACLES)
def test_preflight(proofdiff_check: Callable[..., object], proofdiff_profile_name: str,
                   proofdiff_workload_name: str, oracle: str) -> None:
    proofdiff_check("preflight", oracle)
