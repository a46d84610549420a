"""Warmup, per profile: the first proof after start completes, verifies and took plausibly
long; the daemon is still up after the run (a crash is reported with its exit code and
OOMKilled from ``docker inspect``)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

pytestmark = pytest.mark.proofdiff


def test_first_proof_completes_verifies_and_is_plausible(
        proofdiff_check: Callable[..., object], proofdiff_profile_name: str) -> None:
    proofdiff_check("warmup", "first-proof")


def test_daemon_survives_the_run(proofdiff_check: Callable[..., object],
                                 proofdiff_profile_name: str) -> None:
    proofdiff_check("warmup", "liveness")
