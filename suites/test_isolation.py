"""Isolation, per profile: colliding request ids with distinct inputs, a reused id with new
inputs, K distinct inputs together. Every proof must verify against its own inputs, no two
distinct inputs may share a proof or a partition proof, nothing may be lost, stuck or returned
twice; duplicates are rejected clearly or isolated (``proofdiff.oracles.isolation``)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

pytestmark = pytest.mark.proofdiff


def test_no_job_is_stuck(proofdiff_check: Callable[..., object],
                         proofdiff_profile_name: str) -> None:
    proofdiff_check("isolation", "hang")


def test_nothing_lost_failed_or_returned_twice(proofdiff_check: Callable[..., object],
                                               proofdiff_profile_name: str) -> None:
    proofdiff_check("isolation", "lost-or-twice")


def test_colliding_ids_get_their_own_proofs(proofdiff_check: Callable[..., object],
                                            proofdiff_profile_name: str) -> None:
    proofdiff_check("isolation", "colliding-ids")


def test_reused_id_gets_the_new_inputs_proof(proofdiff_check: Callable[..., object],
                                             proofdiff_profile_name: str) -> None:
    proofdiff_check("isolation", "reused-id")


def test_distinct_inputs_get_distinct_proofs(proofdiff_check: Callable[..., object],
                                             proofdiff_profile_name: str) -> None:
    proofdiff_check("isolation", "distinct-inputs")
