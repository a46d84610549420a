"""Validity: every COMPLETED proof verifies, partition by partition, against its own public
inputs, every job completes, on every profile; and the profiles agree with the baseline."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import pytest

from proofdiff.core.verdict import uncompared
from proofdiff.model.oracle_records import Divergence

if TYPE_CHECKING:
    from proofdiff.core.session import Session

pytestmark = pytest.mark.proofdiff


def test_every_completed_proof_verifies(proofdiff_check: Callable[..., object],
                                        proofdiff_profile_name: str) -> None:
    proofdiff_check("validity", "proofs")


def test_every_job_completes(proofdiff_check: Callable[..., object],
                             proofdiff_profile_name: str) -> None:
    proofdiff_check("validity", "jobs")


def test_profiles_agree(proofdiff_divergences: Callable[[str], list[Divergence]],
                        proofdiff_session: Session, proofdiff_workload_name: str) -> None:
    divs = proofdiff_divergences("validity")
    if divs:
        pytest.fail("\n\n".join(
            "\n".join([d.headline, d.message, "most likely cause (ranked config differences):",
                       *(f"  {i}. {s.render()}" for i, s in enumerate(d.suspects[:5], 1))])
            for d in divs), pytrace=False)
    records = proofdiff_session.suite_records("validity", proofdiff_workload_name)
    why = uncompared(records, next(iter(proofdiff_session.profiles)))
    if why:  # a skipped record cannot diverge, nor show agreement
        pytest.skip("not compared: " + "; ".join(why))
