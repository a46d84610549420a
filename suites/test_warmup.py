"""Warmup, per profile: the first proof after start completes and verifies, within a plausible
time, recorded apart from steady state; and the daemon is still up after the run (a crash is
reported with its exit code and OOMKilled from ``docker inspect``, never as a bare connection
error).

The first proof is job 0 of the workload run (``fixtures.differential``: that run is the first
proving a fresh daemon does). Steady state for the plausibility floor: the run's jobs after its
first wave.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from fixtures.session import ProofdiffSession
from harness.oracle_liveness import liveness
from harness.oracle_warmup import steady_jobs, warmup
from harness.records import RunResult

pytestmark = pytest.mark.proofdiff


def test_first_proof_completes_verifies_and_is_plausible(
        proofdiff_session: ProofdiffSession, proofdiff_run: RunResult,
        proofdiff_record: Callable[..., None]) -> None:
    profile = proofdiff_session.profiles[proofdiff_run.profile]
    steady = [j.wall_ms for j in steady_jobs(proofdiff_run, profile.concurrency)]
    out = warmup(proofdiff_run, steady)
    proofdiff_record("first-proof", out.profile, out.workload, "pass" if out.ok else "fail",
                     out.explain(), data=out.to_json())


def test_daemon_survives_the_run(proofdiff_session: ProofdiffSession, proofdiff_run: RunResult,
                                 proofdiff_record: Callable[..., None]) -> None:
    if not proofdiff_run.container_id:
        pytest.skip(f"profile {proofdiff_run.profile!r} ran no container: "
                    f"{'; '.join(proofdiff_run.errors)[:300]}")
    daemon = proofdiff_session.daemon(proofdiff_run.profile)
    state = daemon.state()
    tail = ""
    if state.get("Status") not in ("running", None):
        try:
            tail = daemon.logs(tail=30)
        except Exception:  # noqa: BLE001 - evidence only
            tail = ""
    out = liveness(proofdiff_run, state, tail)
    proofdiff_record("liveness", out.profile, proofdiff_run.workload,
                     "pass" if out.alive else "fail",
                     out.message or f"daemon {proofdiff_run.container_id} is "
                     f"{state.get('Status')}", data=out.to_json())
