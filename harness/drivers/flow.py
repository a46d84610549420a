"""The one prove-many flow: a driver, a deadline and the hang guard around a set of jobs.

Every flow proofdiff sends (the workload run, the isolation flows, each timing batch) goes
through :func:`prove_many`, so every wait has the same deadline rule and the same stall guard,
whatever the driver, and every flow comes back as a :class:`~proofdiff.model.jobs.FlowRecord`.
Each flow is a quiet progress task (:mod:`proofdiff.model.progress`, topic ``proofs``): its
jobs answered out of those sent, per profile; the caller logs its start and end.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from proofdiff.model.choices import DriverKind
from proofdiff.model import interrupt, progress
from proofdiff.model.jobs import FlowRecord, JobRecord, JobSpec
from proofdiff.model.workload import Workload

from proofdiff.drivers.protocol import Driver, Log, Mode
from proofdiff.drivers.deadlines import POLL_S, Deadlines
from proofdiff.drivers.hang_guard import CpuProbe, guarded
from proofdiff.drivers.stall_rule import AnswerClock

if TYPE_CHECKING:
    from proofdiff.runtime.process_probe import ProcessProbe

__all__ = ["prove_many"]


def prove_many(driver: Driver, address: str, workload: Workload, specs: Sequence[JobSpec], *,
               name: str, label: str = "", profile: str = "", concurrency: int, mode: Mode = Mode.PROVE,
               deadlines: Deadlines, log: Log, clock: AnswerClock | None = None,
               cpu: CpuProbe | None = None, probe: ProcessProbe | None = None,
               on_answer: Callable[[JobRecord], None] | None = None) -> FlowRecord:
    """Send ``specs`` through ``driver`` to the daemon at ``address`` and collect the flow.

    ``profile`` names the daemon's profile in the progress shown ('' when there is none).
    Deadline: :meth:`~proofdiff.drivers.deadlines.Deadlines.flow_s` for the specs at
    ``concurrency``; the hang guard polls the daemon every ``POLL_S`` and gives up on a stalled
    daemon (:mod:`proofdiff.drivers.stall_rule`, from ``clock``: the daemon's answers over its
    flows, and ``cpu``: its CPU samples, when it proves on the CPU; with the ``grpc`` driver). Jobs given up come back
    ``STUCK`` (a stall) or ``LOST`` (the deadline) with the reason; the record's ``stall`` says
    why. ``on_answer`` is told each record the driver shows as answered, on its thread, while
    the flow goes on (a job's, or one partition's where the driver sends them apart).
    ``probe`` reads the daemon's process before the first request, every ``POLL_S`` and
    after the last answer (the record's ``usage``; none without a probe). Every status poll's
    latency is kept, and every poll that failed (``samples``, ``poll_failures``).

    Raises:
        ValueError: ``mode`` is one the driver does not support (a programming error: callers
            check ``driver.modes`` and record the check as skipped instead).
        KeyboardInterrupt: the run was interrupted (:mod:`proofdiff.model.interrupt`) before
            or while the flow was sent, on whatever thread sends it.
    """
    if mode not in driver.modes:
        raise ValueError(f"driver {driver.name!r} cannot send a {mode.value!r} flow")
    interrupt.check()  # an interrupted run sends nothing more
    real = [s for s in specs if not s.await_only]
    t0 = time.monotonic()
    # the bench tool starts a container before it sends anything: its start-up is no idle
    # time of the daemon's, so the CPU is watched only where proofdiff sends the requests itself
    watched = cpu if driver.name == DriverKind.GRPC else None
    shown_as = " ".join(x for x in (f"[{profile}]" if profile else "", name, label) if x)
    with progress.task("proofs", shown_as, total=len(real), quiet=True) as shown, \
            guarded(address, deadline_s=deadlines.flow_s(len(real), concurrency),
                    stall_s=deadlines.stall_s, poll_s=POLL_S, clock=clock, cpu=watched,
                    probe=probe, on_done=shown.advance if shown.live else None,
                    on_answer=on_answer) as guard:
        guard.add(len(real))
        got = driver.send(specs, workload=workload, concurrency=concurrency, mode=mode,
                          guard=guard, deadlines=deadlines, log=log)
        reason, status = guard.reason, guard.given_up()
        wall_ms = (time.monotonic() - t0) * 1000.0  # not the guard's last poll, which may wait
    if guard.interrupted:  # a flow cut by the run's interrupt is no evidence: the run stops
        raise KeyboardInterrupt
    samples = tuple(guard.samples)
    by_index = {r.index: r for r in got}
    jobs: list[JobRecord] = []
    for s in specs:
        rec = by_index.get(s.index)
        why = reason or "the driver returned nothing for this job"
        jobs.append(rec if rec is not None else JobRecord(
            index=s.index, job=s.job, request_id=s.request_id or "", priority=s.priority,
            status=status, await_only=s.await_only,
            error=f"not sent: the flow was stopped ({why})" if s.await_only else f"no answer: {why}"))
    stuck = [j.request_id or j.job for j in jobs if j.status is status and reason
             and not j.await_only]
    if stuck:
        log(f"{name}{f' {label}' if label else ''}: gave up on {len(stuck)} job(s) "
            f"{stuck}: {reason}")
    return FlowRecord(name=name, label=label, concurrency=concurrency, jobs=tuple(jobs),
                      wall_ms=wall_ms, stall=reason if stuck else "", samples=samples,
                      poll_failures=tuple(guard.poll_failures), usage=tuple(guard.usage),
                      started_unix_s=guard.started_unix_s)
