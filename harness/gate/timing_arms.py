"""The gate's timing arms (:func:`timing_arms`): per profile and workload, the profile on both
builds, here (:func:`arm_here`: both daemons on this machine, the rounds one after the other) or
over a fleet's hosts (:func:`arm_on_fleet`: the rounds in waves, :mod:`proofdiff.gate.
round_units`); the verifier cross-check that comes with the first arm (or alone, with no timing:
:func:`cross_check_alone`); and :class:`Where` the gate's work runs, its artifacts and builds
shipped to a fleet's hosts.
"""

from __future__ import annotations

import functools
import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import msgspec

from proofdiff.core.differential import run_differential
from proofdiff.core.session import Session
from proofdiff.fleet.executor import Executor
from proofdiff.gate.gate_error import GateError
from proofdiff.gate.gate_result import ProfileTiming, VerifierCheck
from proofdiff.gate.host_builds import on_side
from proofdiff.gate.quiet_cores import harness_on, split_cores
from proofdiff.gate.round_units import (ArmTask, FleetRounds, open_pair, pair_profiles,
                                        verifier_check)
from proofdiff.gate.arm_judge import Family
from proofdiff.gate.timing_rounds import BUDGET_PAIRS, bad_jobs, measure_profile
from proofdiff.model.choices import Runtime
from proofdiff.model.image import ImageInfo
from proofdiff.model.jobs import FlowRecord, JobSpec
from proofdiff.model.profile import DEFAULT_VERIFIER, Profile
from proofdiff.model.result import DifferentialResult
from proofdiff.model.run_options import RunOptions
from proofdiff.model.runs import RunRecord

__all__ = ["Where", "arm_here", "arm_on_fleet", "cross_check_alone", "keep_check", "not_timed",
           "theirs", "timing_arms"]


class Where:
    """Where the gate's work runs: here, or on the hosts of a fleet (``ex`` remote), where the
    run's artifacts, the two builds of a host-binary gate and its ``verify`` are shipped to
    every host once and named by reference (:mod:`proofdiff.fleet.shipping`).

    Raises:
        GateError: two images to gate on hosts that run their daemons as processes (they
            would run one build, the hosts', on both sides).
    """

    def __init__(self, ex: Executor, opts: RunOptions, sides: tuple[ImageInfo, ImageInfo],
                 verifier: ImageInfo, host: bool) -> None:
        self.ex, self.host, self.options, self.sides = ex, host, opts, sides
        #: the ``verify`` that judges a host-binary gate's proofs ('' for images)
        self.verifier = verifier.tag if host else ""
        if not ex.remote:
            return
        if not host and ex.process_hosts():
            raise GateError(f"two images cannot be gated on hosts that run daemons as "
                            f"processes ({', '.join(ex.process_hosts())})",
                            fix="gate two builds' host binaries there (--candidate-bin-dir, "
                                "--baseline-bin-dir), or use hosts whose runtime is docker")
        # the units run where they are placed: no fleet of their own; both images go to the
        # docker hosts that lack them; two host builds run as processes, so nothing of Docker
        # is built for them (a joined cluster's workers say nothing of their runtime)
        self.options = ex.ship(msgspec.structs.replace(
            opts, cluster="", hosts="",
            overrides=(*opts.overrides, "*.runtime=process") if host else opts.overrides,
            images=opts.images if host else (sides[1].tag, sides[0].tag)))
        if host:
            self.sides = (
                msgspec.structs.replace(sides[0], tag=ex.ship_path(
                    "the baseline build", sides[0].tag, programs=True)),
                msgspec.structs.replace(sides[1], tag=ex.ship_path(
                    "the candidate build", sides[1].tag, programs=True)))
            self.verifier = ex.ship_path("the verifier", verifier.tag)

    def differential(self, changes: dict[str, Any], resolved: dict[str, Profile],
                     log: Callable[[str], None]) -> DifferentialResult:
        """The candidate's differential (``changes`` to the run options), here or as one unit
        of the fleet (its report written here, as a run's is)."""
        profiles = ({n: on_side(p, self.sides[1].tag, self.verifier) for n, p in resolved.items()}
                    if self.host else resolved)
        dopts = msgspec.structs.replace(self.options, **changes)
        if not self.ex.remote:
            return run_differential(dopts, profiles=profiles, log=log)
        from proofdiff.fleet.differential import differential_via
        from proofdiff.report.writer import write_report

        where, result = differential_via(self.ex, dopts, profiles)
        log(f"gate: the candidate's differential ran on {where}")
        write_report(result, Path(changes["report_dir"]))
        return result


def keep_check(check: VerifierCheck, checks: list[VerifierCheck],
                log: Callable[[str], None]) -> None:
    """Log and keep the verifier cross-check; a disagreement ends the gate.

    Raises:
        GateError: the baseline's verifier and the pinned one disagree.
    """
    log(f"gate: verifier cross-check on {check.proofs} proof(s): "
        f"{check.note or ('agree' if check.agreed else 'DISAGREE')}")
    checks.append(check)
    if check.agreed is False:
        raise GateError("the baseline's verifier and the pinned verifier disagree, so no proof "
                        "verdict can be trusted: " + "; ".join(check.disagreements[:3]),
                        fix="find which of the two is wrong on the named proofs, and fix it (or "
                            "re-pin harness/artifacts/pinned_verifier.py)")


def theirs(baseline: ImageInfo, verifier: str) -> tuple[str, Runtime]:
    """The baseline's own verifier and how it runs: its image, or its build's ``verify``."""
    if verifier:
        return str(Path(baseline.tag) / DEFAULT_VERIFIER), Runtime.PROCESS
    return baseline.tag, Runtime.DOCKER


def cross_check_alone(profiles: dict[str, Profile], workloads: Sequence[str],
                       sides: tuple[ImageInfo, ImageInfo], opts: RunOptions,
                       checks: list[VerifierCheck], log: Callable[[str], None],
                       verifier: str = "") -> None:
    """The verifier cross-check with no timing arm (``--no-timing``): the baseline's proofs of
    the first profile and workload, judged by both verifiers (raises GateError when they
    disagree). Without it a PASS with no timing would rest on a verifier nobody checked."""
    name, p = next(iter(profiles.items()))
    wl = (list(workloads) or [p.workload])[0]
    pair = pair_profiles(name, p, (sides[0].tag, sides[1].tag), verifier)
    session = open_pair(pair, wl, opts, log)
    try:
        keep_check(verifier_check(session, pair[0].name, wl, *theirs(sides[0], verifier)),
                    checks, log)
    finally:
        session.close()


def not_timed(name: str, wl: str, p: Profile, t0: float, why: str,
               faults: Sequence[str] = ()) -> ProfileTiming:
    return ProfileTiming(profile=name, workload=wl, concurrency=p.concurrency,
                         faults=tuple(faults), stopped=why, started_unix_s=t0,
                         stopped_unix_s=time.time())


def arm_here(name: str, p: Profile, wl: str, sides: tuple[ImageInfo, ImageInfo], *,
              deadline: float, rounds: int, opts: RunOptions, checks: list[VerifierCheck],
              family: Family, log: Callable[[str], None], verifier: str,
              runs: list[RunRecord] | None, max_slowdown: float) -> ProfileTiming:
    """One arm on this machine: both sides' daemons here, the rounds one after the other; on a
    host with cores to spare, both daemons on the same cores and proofdiff's threads on others
    for the arm's length (:mod:`proofdiff.gate.quiet_cores`)."""
    t0 = time.time()
    pair = pair_profiles(name, p, (sides[0].tag, sides[1].tag), verifier)
    b_side, c_side = pair[0].name, pair[1].name
    session = open_pair(pair, wl, opts, log)
    split = split_cores(sorted(os.sched_getaffinity(0)))
    where = session.placement.reason if session.placement else ""
    log(f"gate timing {name}/{wl}: {where}")
    try:
        with harness_on(split[0] if split else ()):
            arm = _timed(session, name, p, wl, sides, b_side, c_side, t0, deadline=deadline,
                         rounds=rounds, checks=checks, family=family, log=log,
                         verifier=verifier, max_slowdown=max_slowdown)
        return msgspec.structs.replace(arm, started_unix_s=t0, stopped_unix_s=time.time(),
                                       placement=where)
    finally:
        if runs is not None:
            runs.extend(msgspec.structs.replace(r, flows=tuple(
                session.flows(r.profile, r.workload))) for r in session.runs())
        session.close()


def _timed(session: Session, name: str, p: Profile, wl: str,
           sides: tuple[ImageInfo, ImageInfo], b_side: str, c_side: str, t0: float, *,
           deadline: float, rounds: int, checks: list[VerifierCheck], family: Family,
           log: Callable[[str], None], verifier: str, max_slowdown: float) -> ProfileTiming:
    """:func:`arm_here`'s work on its open session: the cross-check (first arm), the
    candidate's warm-up run, the rounds."""
    jobs = [j.name for j in session.workload(wl).jobs]
    if not checks:
        keep_check(verifier_check(session, b_side, wl, *theirs(sides[0], verifier)),
                    checks, log)
    warm = [f"warm-up run: {b}" for f in session.run(c_side, wl).flows for b in bad_jobs(f)]
    if warm:
        return not_timed(name, wl, p, t0, "not timed: the candidate's warm-up run failed",
                          warm)

    def send(side: str, specs: list[JobSpec], label: str) -> FlowRecord:
        return session.send(side, wl, specs, name="gate", label=label,
                            concurrency=len(specs))
    return measure_profile(send, profile=name, workload=wl, jobs=jobs, sides=(b_side, c_side),
                           concurrency=p.concurrency, deadline=deadline,
                           floors=p.timing_floor, family=family, log=log, budget_pairs=rounds,
                           max_slowdown=max_slowdown)


def arm_on_fleet(ex: Executor, name: str, p: Profile, wl: str,
                  sides: tuple[ImageInfo, ImageInfo], *, deadline: float, rounds: int,
                  opts: RunOptions, checks: list[VerifierCheck], family: Family,
                  log: Callable[[str], None], verifier: str,
                  runs: list[RunRecord] | None, max_slowdown: float) -> ProfileTiming:
    """One arm over the fleet's hosts (:mod:`proofdiff.gate.round_units`): ``sides`` and
    ``verifier`` are references shipped to every host, ``opts`` shipped run options."""
    t0 = time.time()
    arm = ArmTask(key=f"{opts.run_id}/{name}/{wl}", profile=name, workload=wl,
                  pair=pair_profiles(name, p, (sides[0].tag, sides[1].tag), verifier),
                  options=opts, concurrency=p.concurrency)
    drawn = FleetRounds(ex, arm, ex.workers())
    try:
        if not checks:
            keep_check(drawn.cross_check(*theirs(sides[0], verifier)), checks, log)
        got = measure_profile(profile=name, workload=wl, jobs=[], sides=(
            arm.pair[0].name, arm.pair[1].name), concurrency=p.concurrency, deadline=deadline,
            floors=p.timing_floor, family=family, log=log, rounds_at=drawn,
            budget_pairs=rounds, max_slowdown=max_slowdown)
        return msgspec.structs.replace(got, started_unix_s=t0, stopped_unix_s=time.time())
    finally:
        closed = drawn.close()
        if runs is not None:
            runs.extend(closed)


def timing_arms(profiles: dict[str, Profile], workloads: Sequence[str],
            sides: tuple[ImageInfo, ImageInfo], *, budget_s: float,
            rounds: int = BUDGET_PAIRS, opts: RunOptions,
            broken: set[str], checks: list[VerifierCheck], family: Family,
            log: Callable[[str], None], verifier: str = "",
            runs: list[RunRecord] | None = None, ex: Executor | None = None,
            max_slowdown: float = 0.05) -> list[ProfileTiming]:
    """The timing arm of every profile, each of at most ``rounds`` rounds (the warm-up
    included); the first profile with a baseline daemon also runs the verifier cross-check
    into ``checks`` (raises GateError when they disagree). The
    candidate's warm-up run in the arm's session is evidence too: its bad jobs are faults.
    ``verifier``: set for host builds (the sides are folders, :mod:`proofdiff.gate.host_builds`),
    the ``verify`` program that judges both sides' proofs. ``runs``: where each side's run goes,
    with every flow sent to its daemon (the history's samples), also when the arm stops.
    ``ex``: a fleet's executor (remote): each arm's rounds go over its hosts, ``sides``,
    ``verifier`` and ``opts`` already shipped there. ``max_slowdown``: the tolerated slowdown
    (a fraction). Once an arm finds a metric WORSE (``family.failed``), the gate fails and
    the arms after it are not timed."""
    out: list[ProfileTiming] = []
    deadline = time.monotonic() + budget_s
    for name, p in profiles.items():
        for wl in workloads or [p.workload]:
            if name in broken:
                out.append(not_timed(name, wl, p, time.time(), "not timed: the candidate "
                                      "fails its checks on this profile"))
                continue
            if family.failed:
                out.append(not_timed(name, wl, p, time.time(), "not timed: the gate already "
                                      f"fails on timing ({family.failed})"))
                continue
            one = (functools.partial(arm_on_fleet, ex) if ex is not None and ex.remote
                   else arm_here)
            out.append(one(name, p, wl, sides, deadline=deadline, rounds=rounds, opts=opts,
                           checks=checks, family=family, log=log, verifier=verifier, runs=runs,
                           max_slowdown=max_slowdown))
    return out
