"""The gate's timing rounds as units of the fleet: each round holds both builds on one host, so
its pair stays a pair, and rounds on several hosts run at once (``proofdiff gate --hosts`` or
``--cluster``; docs/design/fleet.md, "A gate over the fleet").

An arm (one profile on one workload, :func:`proofdiff.gate.timing_rounds.measure_profile`) keeps
one session of the profile on both sides on each host it reaches (:func:`open_pair`): the
daemons start with the arm's first unit there, the candidate runs the workload once (the
warm-up that loads the SRS; its bad jobs are the gate's faults), and they stay warm for the
arm's later rounds on that host. The sequential test's looks stay on the caller: each wave of
rounds goes one per host (:class:`FleetRounds`), round ``k`` drawn by
:func:`~proofdiff.gate.timing_rounds.draw_round` as on one machine, and the pairs come back as
the model's structs, pooled in round order. A pair's log-ratio is taken within one host, so
hosts of unlike speed pool soundly; a host that runs one side slower than another host does
would need a per-host model (hosts of one kind are what a gate's fleet is). At the arm's end
:func:`close_unit` runs on every host: it stops that host's daemons and gives back each side's
run with every flow sent (the history's samples).

The sessions live in the worker's process (:data:`_arms`), keyed by the gate's run id, the
profile and the workload; one left idle for :data:`ARM_IDLE_S` (its caller died before its
close units ran) is closed by the next arm there. A round's GPUs are leased for the unit
(:func:`proofdiff.fleet.placement.on_host`) while the arm's daemons keep the UUIDs of its
first round there: a gate runs one arm at a time, so no other unit of it holds them.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import msgspec

from proofdiff.core.plan import plan_runs
from proofdiff.core.session import Session
from proofdiff.fleet.executor import Executor
from proofdiff.gate.gate_result import VerifierCheck
from proofdiff.gate.host_builds import on_side
from proofdiff.gate.quiet_cores import quiet_placement
from proofdiff.gate.timing_rounds import RoundOutcome, bad_jobs, draw_round
from proofdiff.gate.verifier_crosscheck import cross_check
from proofdiff.model.choices import Runtime
from proofdiff.model.jobs import FlowRecord, JobSpec
from proofdiff.model.profile import Profile
from proofdiff.model.run_options import RunOptions
from proofdiff.model.runs import RunRecord

__all__ = ["ARM_IDLE_S", "INTERRUPTED", "ArmTask", "FleetRounds", "close_unit", "cross_check_unit", "open_pair",
           "pair_profiles", "round_unit", "verifier_check"]


class ArmTask(msgspec.Struct, frozen=True, kw_only=True):
    """One timing arm as the fleet's units carry it: ``key`` (the gate's run id / profile /
    workload) names its sessions on the hosts; ``pair``: the profile on the baseline side and
    on the candidate side (named ``<profile>-baseline`` and ``<profile>-candidate``, their
    programs by shipped reference on a fleet); ``options``: the gate's run options, its
    artifacts shipped; ``concurrency``: jobs per batch."""

    key: str
    profile: str
    workload: str
    pair: tuple[Profile, Profile]
    options: RunOptions
    concurrency: int


class RoundTask(msgspec.Struct, frozen=True):
    """Round ``index`` of ``arm``."""

    arm: ArmTask
    index: int


class CrossTask(msgspec.Struct, frozen=True):
    """The verifier cross-check of ``arm``'s baseline side: ``theirs`` is the baseline's own
    verifier (its image tag, or its build's ``verify`` program), run with ``runtime``."""

    arm: ArmTask
    theirs: str
    runtime: Runtime


def pair_profiles(name: str, p: Profile, sides: tuple[str, str],
                  verifier: str = "") -> tuple[Profile, Profile]:
    """Profile ``p`` on the baseline side and on the candidate side (``sides``: their image
    tags; with ``verifier``, the folders of two host builds, every program taken from its
    side's folder and the proofs judged by ``verifier``)."""
    out = []
    for role, side in zip(("baseline", "candidate"), sides, strict=True):
        side_name = f"{name}-{role}"
        out.append(on_side(p, side, verifier, side_name) if verifier
                   else msgspec.structs.replace(p, name=side_name, image=side))
    return out[0], out[1]


def open_pair(pair: tuple[Profile, Profile], workload: str, opts: RunOptions,
              log: Callable[[str], None] = lambda _l: None) -> Session:
    """A session holding both sides of ``pair``, for ``workload`` alone (nothing is started
    until a side is sent work), both daemons placed on the same cores, apart from proofdiff's
    where the host has cores to spare (:func:`proofdiff.gate.quiet_cores.quiet_placement`);
    the caller closes it."""
    timing_opts = msgspec.structs.replace(opts, workloads=(workload,), suites=("validity",),
                                          run_id=f"{opts.run_id}-timing", images=())
    session = Session(plan_runs({p.name: p for p in pair}, timing_opts, log=log)[0], log=log)
    session.placement = quiet_placement([p.name for p in pair], sorted(os.sched_getaffinity(0)))
    return session


def verifier_check(session: Session, side: str, workload: str, theirs: str,
                   runtime: Runtime) -> VerifierCheck:
    """The baseline's verifier against the pinned one on ``side``'s first workload run
    (:func:`proofdiff.gate.verifier_crosscheck.cross_check`), timed (never raises on a
    disagreement: the caller decides)."""
    t0 = time.time()
    session.run(side, workload)
    check = cross_check(session.flows(side, workload), session.workload(workload),
                        session.verifier(side), session.runner, theirs,
                        session.plan.param_cache, timeout_s=session.plan.verify_timeout_s,
                        runtime=runtime)
    return msgspec.structs.replace(check, started_unix_s=t0, stopped_unix_s=time.time())


# -- on the host ---------------------------------------------------------------------------------

#: An arm's session left unused this long on a host is closed by the next arm's unit there (a
#: caller that died before its close units ran leaves no daemons for ever on a joined cluster), s.
ARM_IDLE_S = 1800.0


@dataclass
class _Arm:
    """One arm's session on this host, and its candidate's warm-up (run once, at its first
    round here); ``used``: when a unit last used it (``time.monotonic()``)."""

    session: Session
    jobs: list[str]
    warm: list[str] | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)
    used: float = field(default_factory=time.monotonic)


#: What a unit interrupted on its host (the caller's Ctrl-C) gives back; the caller raises
#: :class:`KeyboardInterrupt` on it.
INTERRUPTED = "interrupted (Ctrl-C on the caller)"

#: The arms this process holds sessions for, by :attr:`ArmTask.key`.
_arms: dict[str, _Arm] = {}
_arms_lock = threading.Lock()


def _arm(task: ArmTask) -> _Arm:
    """The arm's session on this host, opened at its first unit here; arms idle for
    :data:`ARM_IDLE_S` are closed first."""
    now = time.monotonic()
    with _arms_lock:
        stale = [k for k, a in _arms.items() if now - a.used > ARM_IDLE_S and k != task.key]
        left = [_arms.pop(k) for k in stale]
        got = _arms.get(task.key)
        if got is None:
            session = open_pair(task.pair, task.workload, task.options)
            got = _arms[task.key] = _Arm(session, [j.name for j in session.workload(
                task.workload).jobs])
        got.used = now
    for a in left:
        a.session.close()
    return got


def round_unit(task: RoundTask) -> RoundOutcome:
    """Round ``task.index`` of its arm on this host (module docstring): the arm's session here
    opened, and its candidate warmed up, at its first round. A warm-up with a bad job stops
    the arm with those jobs as faults (as one warm-up on one machine does).

    Raises:
        ProofdiffError: a daemon could not start here (the caller's gate errs, naming it).
    """
    arm, a = task.arm, _arm(task.arm)
    b_side, c_side = (p.name for p in arm.pair)
    try:
        with a.lock:
            if a.warm is None:
                a.warm = [b for f in a.session.run(c_side, arm.workload).flows
                          for b in bad_jobs(f)]
            if a.warm:
                return RoundOutcome(None, stopped="not timed: the candidate's warm-up run "
                                    "failed", faults=tuple(f"warm-up run: {b}" for b in a.warm))

            def send(side: str, specs: list[JobSpec], label: str) -> FlowRecord:
                return a.session.send(side, arm.workload, specs, name="gate", label=label,
                                      concurrency=len(specs))
            return draw_round(send, task.index, jobs=a.jobs, sides=(b_side, c_side),
                              concurrency=arm.concurrency)
    except KeyboardInterrupt:  # the caller's Ctrl-C, carried here: it raises it again
        return RoundOutcome(None, stopped=INTERRUPTED)


def cross_check_unit(task: CrossTask) -> VerifierCheck:
    """The verifier cross-check on this host's session of the arm (its baseline daemon's first
    workload run, which also warms it)."""
    a = _arm(task.arm)
    try:
        with a.lock:
            return verifier_check(a.session, task.arm.pair[0].name, task.arm.workload,
                                  task.theirs, task.runtime)
    except KeyboardInterrupt:  # the caller's Ctrl-C, carried here: it raises it again
        return VerifierCheck(baseline_image=task.theirs, note=INTERRUPTED)


def close_unit(key: str) -> list[RunRecord]:
    """Stop this host's daemons of the arm ``key``; each side's run, with every flow sent to
    its daemon ([] when the arm never reached this host)."""
    with _arms_lock:
        a = _arms.pop(key, None)
    if a is None:
        return []
    try:
        return [msgspec.structs.replace(r, flows=tuple(a.session.flows(r.profile, r.workload)))
                for r in a.session.runs()]
    finally:
        a.session.close()


# -- on the caller -------------------------------------------------------------------------------

def _lost_round(task: RoundTask, message: str) -> RoundOutcome:
    return RoundOutcome(None, stopped=f"round {task.index}: {message}")


def _lost_runs(_key: str, _message: str) -> list[RunRecord]:
    return []


class FleetRounds:
    """The rounds of ``arm`` over ``hosts`` of ``executor``: a wave of rounds at once, one
    pinned to each host (:class:`~proofdiff.gate.timing_rounds.Rounds`); a round whose host
    is lost stops the arm, naming it. :meth:`close` ends the arm on every host."""

    def __init__(self, executor: Executor, arm: ArmTask, hosts: Sequence[str]) -> None:
        self.executor, self.arm, self.hosts = executor, arm, list(hosts)
        self.width = max(1, len(self.hosts))

    def draw(self, ks: Sequence[int]) -> list[RoundOutcome]:
        tasks = [RoundTask(self.arm, k) for k in ks]
        got = self.executor.map_placed(round_unit, tasks, name="gate-round", lost=_lost_round,
                                       on=self.hosts[:len(tasks)])
        if any(o.stopped == INTERRUPTED for _w, o in got):
            raise KeyboardInterrupt
        return [o._replace(host=where) for where, o in got]

    def cross_check(self, theirs: str, runtime: Runtime) -> VerifierCheck:
        """The verifier cross-check on the first host."""
        [(_where, check)] = self.executor.map_placed(
            cross_check_unit, [CrossTask(self.arm, theirs, runtime)], name="gate-cross-check",
            on=self.hosts[:1])
        if check.note == INTERRUPTED:
            raise KeyboardInterrupt
        return check

    def close(self) -> list[RunRecord]:
        """Every host's runs of the arm, its daemons stopped there."""
        got = self.executor.map_placed(close_unit, [self.arm.key] * len(self.hosts),
                                       name="gate-close", lost=_lost_runs, on=self.hosts)
        return [r for _where, runs in got for r in runs]
