"""Validity: every COMPLETED proof verifies against its own public inputs, on every profile,
and all profiles agree with the baseline (the first profile, e.g. ``bench``)."""

from __future__ import annotations

import pytest

from fixtures.session import ProofdiffSession
from harness.oracles import diverge, validity
from harness.records import RunResult

pytestmark = pytest.mark.proofdiff


def test_every_completed_proof_verifies(proofdiff_run: RunResult) -> None:
    outcome = validity(proofdiff_run)
    msg = outcome.explain()
    if proofdiff_run.errors and proofdiff_run.log_tail and "--- last log lines ---" not in msg:
        msg += "\n--- daemon log tail ---\n" + proofdiff_run.log_tail[-3000:]
    if not outcome.ok:
        pytest.fail(msg, pytrace=False)


def test_profiles_agree(proofdiff_session: ProofdiffSession,
                        proofdiff_workload_name: str) -> None:
    names = list(proofdiff_session.profiles)
    if len(names) < 2:
        pytest.skip(f"only one profile selected ({names}); agreement needs two")
    base = validity(proofdiff_session.run(names[0], proofdiff_workload_name))
    problems = []
    for other in names[1:]:
        outcome = validity(proofdiff_session.run(other, proofdiff_workload_name))
        div = diverge(base, outcome, proofdiff_session.delta(names[0], other))
        if div is not None:
            problems.append(div.render())
    if problems:
        pytest.fail("\n\n".join(problems), pytrace=False)
