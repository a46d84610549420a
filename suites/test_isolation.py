"""Isolation, per profile: concurrent jobs with colliding request ids and distinct inputs, a
reused id with new inputs, K distinct inputs submitted together (``harness.driver_isolation``).
Every result must verify against its own inputs, no two distinct inputs may get byte-identical
proofs (or partition proofs), nothing may be lost, stuck or returned twice; duplicates are
either rejected clearly or isolated (``harness.oracle_isolation``).

One flow set per profile (5 proofs), shared by every test here; each test judges one oracle.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from fixtures.differential import isolation_of
from fixtures.session import ProofdiffSession

pytestmark = pytest.mark.proofdiff


def _judge(session: ProofdiffSession, gate: Callable[..., None],
           rec: Callable[..., None], profile: str, workload: str, name: str,
           *oracles: str) -> None:
    gate(profile, workload, name)
    n = len(session.workload(workload).jobs)
    if n < 2:
        pytest.skip(f"workload {workload} has {n} job; isolation needs >= 2 distinct inputs")
    run, out = isolation_of(session, profile, workload)
    found = out.of(*oracles)
    rec(name, profile, workload, "fail" if found else "pass", out.explain(*oracles),
        data={"findings": [f.to_json() for f in found], "jobs": len(run.jobs),
              "stuck_ids": list(run.stuck_ids)})


def test_no_job_is_stuck(proofdiff_session: ProofdiffSession, proofdiff_gate: Callable[..., None],
                         proofdiff_record: Callable[..., None], proofdiff_profile_name: str,
                         proofdiff_workload_name: str) -> None:
    """Hang guard: every wait had a deadline; stuck job ids are named."""
    _judge(proofdiff_session, proofdiff_gate, proofdiff_record, proofdiff_profile_name,
           proofdiff_workload_name, "hang", "hang")


def test_nothing_lost_failed_or_returned_twice(
        proofdiff_session: ProofdiffSession, proofdiff_gate: Callable[..., None],
        proofdiff_record: Callable[..., None], proofdiff_profile_name: str,
        proofdiff_workload_name: str) -> None:
    _judge(proofdiff_session, proofdiff_gate, proofdiff_record, proofdiff_profile_name,
           proofdiff_workload_name, "lost-or-twice", "lost", "failed", "returned-twice")


def test_colliding_ids_get_their_own_proofs(
        proofdiff_session: ProofdiffSession, proofdiff_gate: Callable[..., None],
        proofdiff_record: Callable[..., None], proofdiff_profile_name: str,
        proofdiff_workload_name: str) -> None:
    _judge(proofdiff_session, proofdiff_gate, proofdiff_record, proofdiff_profile_name,
           proofdiff_workload_name, "colliding-ids", "colliding-ids")


def test_reused_id_gets_the_new_inputs_proof(
        proofdiff_session: ProofdiffSession, proofdiff_gate: Callable[..., None],
        proofdiff_record: Callable[..., None], proofdiff_profile_name: str,
        proofdiff_workload_name: str) -> None:
    _judge(proofdiff_session, proofdiff_gate, proofdiff_record, proofdiff_profile_name,
           proofdiff_workload_name, "reused-id", "reused-id")


def test_distinct_inputs_get_distinct_proofs(
        proofdiff_session: ProofdiffSession, proofdiff_gate: Callable[..., None],
        proofdiff_record: Callable[..., None], proofdiff_profile_name: str,
        proofdiff_workload_name: str) -> None:
    """K distinct inputs together (and the workload run): own proofs, never shared bytes."""
    _judge(proofdiff_session, proofdiff_gate, proofdiff_record, proofdiff_profile_name,
           proofdiff_workload_name, "distinct-inputs", "cross-talk", "identical")
