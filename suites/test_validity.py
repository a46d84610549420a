"""Validity: every COMPLETED proof verifies against its own public inputs, on every profile,
and all profiles agree with the baseline (the first profile, e.g. ``bench``)."""

from __future__ import annotations

import json

import allure
import pytest

from fixtures.session import ProofdiffSession
from harness.oracles import diverge, validity
from harness.records import RunResult

pytestmark = pytest.mark.proofdiff


def test_every_completed_proof_verifies(proofdiff_run: RunResult) -> None:
    outcome = validity(proofdiff_run)
    allure.attach(json.dumps(outcome.to_json(), indent=2), name="validity outcome",
                  attachment_type=allure.attachment_type.JSON)
    if proofdiff_run.log_tail:
        allure.attach(proofdiff_run.log_tail, name=f"{proofdiff_run.profile} daemon log tail",
                      attachment_type=allure.attachment_type.TEXT)
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
        delta = proofdiff_session.delta(names[0], other)
        allure.attach(delta.render(), name=f"config delta {names[0]} -> {other}",
                      attachment_type=allure.attachment_type.TEXT)
        div = diverge(base, outcome, delta)
        if div is not None:
            problems.append(div.render())
    if problems:
        pytest.fail("\n\n".join(problems), pytrace=False)
