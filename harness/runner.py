"""Run one workload on one started daemon: drive, collect evidence, verify.

Glue between :mod:`launcher`, a :class:`~harness.driver_grpc.Driver` and a
:class:`~harness.verifier.Verifier`; returns a :class:`~harness.records.RunResult` and never
raises for a failed job or a broken verifier (those become ``errors`` in the result).
"""

from __future__ import annotations

import time
from collections.abc import Callable

from .driver_grpc import Driver
from .launcher import Daemon
from .profiles import Profile
from .records import RunResult
from .verifier import Verifier, VerifyError, verify_run_items
from .workload import Workload

__all__ = ["error_run", "execute"]

LOG_TAIL_LINES = 200


def execute(daemon: Daemon, workload: Workload, driver: Driver, verifier: Verifier,
            log: Callable[[str], None] | None = None) -> RunResult:
    """Run ``workload`` on ``daemon`` with ``driver``, then verify every COMPLETED proof.

    The result carries the daemon's log tail (200 lines) and ``docker inspect`` snapshot.
    A :class:`~harness.verifier.VerifyError` is recorded in ``errors`` (outcome ``error``).
    """
    profile = daemon.profile
    t0 = time.monotonic()
    jobs = driver.run(profile=profile, workload=workload, address=daemon.address, log=log)
    wall_ms = (time.monotonic() - t0) * 1000.0
    errors: list[str] = []
    verdicts = {}
    try:
        verdicts = verifier.verify(verify_run_items(workload, jobs))
    except VerifyError as exc:
        errors.append(f"verifier: {exc}")
    try:
        log_tail = daemon.logs(tail=LOG_TAIL_LINES)
    except Exception as exc:  # evidence only: a missing log must not lose the results
        log_tail = f"(log unavailable: {exc})"
    return RunResult(
        profile=profile.name, workload=workload.name, image=profile.image,
        partitions=workload.partitions, jobs=tuple(jobs), verdicts=verdicts,
        container_id=daemon.short_id, address=daemon.address,
        start_to_ready_ms=daemon.start_to_ready_ms, wall_ms=wall_ms, errors=tuple(errors),
        log_tail=log_tail, inspect=daemon.inspect())


def error_run(profile: Profile, workload_name: str, error: BaseException | str,
              partitions: int = 0, log_tail: str = "") -> RunResult:
    """A run that never got to drive jobs (launch or workload error): outcome ``error``."""
    return RunResult(profile=profile.name, workload=workload_name, image=profile.image,
                     partitions=partitions, errors=(str(error),),
                     log_tail=log_tail or getattr(error, "log_tail", "") or "")
