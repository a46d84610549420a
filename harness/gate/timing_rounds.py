"""The gate's timing arm: one profile on the baseline and the candidate image side by side,
interleaved rounds, a paired sequential verdict per metric (:mod:`proofdiff.stats.paired`).

Both daemons are up at once (two containers of the same profile, one per image) and each first
runs the workload once (its proofs verified: the warm-up that loads the SRS). Then round ``k``
sends one batch of ``concurrency`` proofs to each side through the profile's own driver, the
baseline first in even rounds and the candidate first in odd ones, so that neither side always
follows the other (drift within a pair would otherwise read as a change). Pair ``k`` is
(baseline batch ``k``, candidate batch ``k``); the first pair is a warmup, kept but not tested.
Both batches of a round send the same jobs in the same order, so job ``i`` of one is paired
with job ``i`` of the other.

Metrics of one batch (each a pair of samples per round):

* ``latency``: the geometric mean of the batch's job wall times, client side (ms): its
  log-ratio is the mean over the batch of the job-by-job log-ratios (job ``i`` against job
  ``i``), which at ``concurrency > 1`` is far steadier than the median of four overlapping
  jobs; worse = higher;
* ``throughput``: batch wall / proofs (ms per proof, the inverse of throughput); worse = higher;
* ``in-progress``: mean jobs the daemon proved at once during each job (from its own
  ``queue_wait_ms`` / ``total_ms``: :func:`proofdiff.stats.concurrency.in_progress_of`), only for
  a profile with ``concurrency > 1``; worse = lower. Its floor is one job in ``concurrency``
  (a structural property: the change that matters is a job fewer in flight), unless the
  profile's ``timing_floor`` says otherwise.
* ``lone-latency``: the wall time of one request sent alone to the idle daemon right after the
  side's batch (ms), only for a profile with ``concurrency > 1`` (at concurrency 1 every batch is
  one lone request, and ``latency`` is this metric); worse = higher. A delay that hits only a
  request that comes alone (a batch that waits to fill: cuzk ``scheduler.max_batch_wait_ms``)
  never shows in batches of ``concurrency``, and is what a WinningPoSt meets
  (:mod:`proofdiff.oracles.lone_request`, which also bounds it on the candidate alone).

Each metric asks the gate's one-sided question (:mod:`proofdiff.stats.paired`): is the
candidate worse by at least the tolerated slowdown (``--max-slowdown``; for ``in-progress``, one
job in ``concurrency``; a profile's ``timing_floor`` sets its own per metric)? All metrics share
the rounds; from the first look (5 tested pairs) every metric still open is judged after each
round (:class:`~proofdiff.gate.arm_judge.ArmJudge`), and the rounds go on while one is open:
up to the cap that its noise calls for, ``budget_pairs`` at most, or the gate's deadline. A
metric found WORSE ends the arm and the gate's timing (:class:`~proofdiff.gate.arm_judge.Family`:
each metric's false-WORSE level is the gate's family-wise level over its metric count).

A batch is evidence too: a job of the candidate that fails, is lost, or whose proof the pinned
verifier rejects (or could not check) stops the arm, and each such job is listed in
:attr:`~proofdiff.gate.gate_result.ProfileTiming.faults` (a blocking finding of the gate). On
the baseline it only stops the arm (the baseline's failure is no evidence about the candidate).
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from typing import NamedTuple, Protocol

from proofdiff.model import progress
from proofdiff.model.jobs import FlowRecord, JobSpec
from proofdiff.stats.concurrency import in_progress_of
from proofdiff.stats.looks import DEFAULT_BUDGET
from proofdiff.stats.paired import DEFAULT_MAX_SLOWDOWN, Question

from proofdiff.gate.arm_judge import ArmJudge, Family, MetricSpec, run_arm
from proofdiff.gate.gate_result import ProfileTiming

__all__ = ["BUDGET_PAIRS", "METRICS", "OVERLAP_METRICS", "Family", "LocalRounds", "RoundOutcome",
           "Rounds", "Sender", "SideRound", "bad_jobs", "draw_round", "measure_profile",
           "metrics_of", "specs_of", "tolerance_of"]

#: Most rounds per profile, the warm-up round included (``--rounds``' default).
BUDGET_PAIRS = DEFAULT_BUDGET

#: metric -> (worse direction, unit, the sample of one flow, the flow of the round it reads:
#: ``batch`` = the batch of ``concurrency``, ``lone`` = the request sent alone after it)
METRICS: dict[str, tuple[str, str, Callable[[FlowRecord], float], str]] = {
    "latency": ("higher", "ms", lambda f: math.exp(statistics.fmean(
        math.log(j.wall_ms) for j in f.completed())), "batch"),
    "throughput": ("higher", "ms", lambda f: f.wall_ms / len(f.jobs), "batch"),
    "in-progress": ("lower", "jobs", lambda f: float(statistics.fmean(in_progress_of(f.jobs))),
                    "batch"),
    "lone-latency": ("higher", "ms", lambda f: f.jobs[0].wall_ms, "lone"),
}
#: The metrics that exist only where jobs can overlap (``concurrency > 1``).
OVERLAP_METRICS = ("in-progress", "lone-latency")


class SideRound(NamedTuple):
    """One side's flows of one round: its batch and its lone request (the batch itself at
    concurrency 1)."""

    batch: FlowRecord
    lone: FlowRecord

    def flow(self, which: str) -> FlowRecord:
        """The flow a metric reads (``batch`` or ``lone``, :data:`METRICS`)."""
        return self.lone if which == "lone" else self.batch


#: ``send(profile, specs, label)`` -> the batch's flow (``Session.send`` bound to a workload).
Sender = Callable[[str, list[JobSpec], str], FlowRecord]


def metrics_of(concurrency: int) -> list[str]:
    """The metrics judged on a profile at ``concurrency`` (:data:`OVERLAP_METRICS` only above
    1: at concurrency 1 nothing overlaps, and every batch is a lone request)."""
    return [m for m in METRICS if m not in OVERLAP_METRICS or concurrency > 1]


def tolerance_of(metric: str, concurrency: int, floors: Mapping[str, float],
                 max_slowdown: float = DEFAULT_MAX_SLOWDOWN) -> float:
    """The tolerated slowdown of ``metric`` (a fraction): the profile's ``timing_floor`` for
    it, else ``max_slowdown`` (``in-progress``: ``1 / concurrency``, a job fewer in flight)."""
    if metric in floors:
        return floors[metric]
    return 1.0 / concurrency if metric == "in-progress" else max_slowdown


def specs_of(concurrency: int, floors: Mapping[str, float], *, max_slowdown: float,
             alpha: float, max_pairs: int) -> dict[str, MetricSpec]:
    """Each metric of a profile at ``concurrency`` with its question (tolerance, this metric's
    false-WORSE level ``alpha``, ``max_pairs`` tested pairs at most), worse direction and
    unit."""
    return {m: MetricSpec(Question(max_slowdown=tolerance_of(m, concurrency, floors,
                                                             max_slowdown),
                                   alpha=alpha, max_pairs=max_pairs), METRICS[m][0], METRICS[m][1])
            for m in metrics_of(concurrency)}


def bad_jobs(flow: FlowRecord) -> list[str]:
    """Why ``flow`` (a batch, or a side's warm-up run) is no evidence: one line per job that
    did not complete (FAILED, LOST, STUCK, ...), whose proof the pinned verifier rejects, or
    whose proof was not verified (the verifier failed); [] when every job completed with a
    proof that verifies. A job whose client hands out no proof bytes (``unverifiable``, a
    bench tool) is not counted here: the differential reports that."""
    out = [f"{j.render()}: {j.error or 'no answer'}" for j in flow.jobs
           if not j.await_only and not j.completed]
    for j in flow.completed():
        if j.verdict is not None and not j.verdict.valid:
            out.append(f"{j.render()}: the pinned verifier rejects its proof (partitions "
                       f"{j.verdict.bad_partitions() or 'all: wrong length'})")
        elif j.verdict is None and not j.unverifiable:
            out.append(f"{j.render()}: its proof was not verified ("
                       f"{'; '.join(flow.errors) or 'no proof bytes'})")
    if not [j for j in flow.jobs if not j.await_only]:
        out.append("the batch ran no job")
    return out


class RoundOutcome(NamedTuple):
    """One round drawn (:func:`draw_round`): the pair of side rounds, or why the arm stops
    (``stopped``) with the candidate's bad jobs (``faults``); ``host``: where it ran (``local``,
    or a fleet host's name)."""

    pair: tuple[SideRound, SideRound] | None
    stopped: str = ""
    faults: tuple[str, ...] = ()
    host: str = "local"


def draw_round(send: Sender, k: int, *, jobs: list[str], sides: tuple[str, str],
               concurrency: int) -> RoundOutcome:
    """Round ``k`` (module docstring): one batch of ``concurrency`` jobs to each side, the
    baseline first when ``k`` is even, each followed by its lone request at ``concurrency >
    1``. A batch that is no evidence (:func:`bad_jobs`) ends the round there, stopped: on the
    candidate, its bad jobs are the outcome's faults."""
    specs = [JobSpec(index=i, job=jobs[(k * concurrency + i) % len(jobs)])
             for i in range(concurrency)]
    got: dict[int, SideRound] = {}

    def sent(i: int, specs: list[JobSpec], label: str) -> FlowRecord | RoundOutcome:
        flow = send(sides[i], specs, label)
        bad = bad_jobs(flow)
        if not bad:
            return flow
        lone = " (lone request)" if label.endswith(":lone") else ""
        return RoundOutcome(None, stopped=(
            f"round {k} on the {('baseline', 'candidate')[i]}{lone}: "
            + "; ".join(([flow.stall] if flow.stall else []) + bad[:3])),
            faults=tuple(f"round {k}{lone}: {b}" for b in bad) if i == 1 else ())

    for i in ([0, 1] if k % 2 == 0 else [1, 0]):
        label = f"{('baseline', 'candidate')[i]}#{k}"
        batch = sent(i, specs, label)
        if isinstance(batch, RoundOutcome):
            return batch
        lone = batch if concurrency < 2 else sent(i, [JobSpec(index=0, job=specs[0].job)],
                                                  f"{label}:lone")
        if isinstance(lone, RoundOutcome):
            return lone
        got[i] = SideRound(batch, lone)
    return RoundOutcome((got[0], got[1]))


class Rounds(Protocol):
    """Where an arm's rounds are drawn: ``width`` of them at once (one per host), each
    :meth:`draw` giving the outcomes of rounds ``ks`` in order (it may stop at the first
    stopped one)."""

    width: int

    def draw(self, ks: Sequence[int]) -> list[RoundOutcome]:
        """Rounds ``ks``, side by side where ``width`` allows."""
        ...


class LocalRounds:
    """The rounds of one arm here, one after the other, through ``send``."""

    width = 1

    def __init__(self, send: Sender, *, jobs: list[str], sides: tuple[str, str],
                 concurrency: int) -> None:
        self.send, self.jobs, self.sides, self.concurrency = send, jobs, sides, concurrency

    def draw(self, ks: Sequence[int]) -> list[RoundOutcome]:
        out: list[RoundOutcome] = []
        for k in ks:
            out.append(draw_round(self.send, k, jobs=self.jobs, sides=self.sides,
                                  concurrency=self.concurrency))
            if out[-1].pair is None:
                break
        return out


def measure_profile(send: Sender | None = None, *, profile: str, workload: str,
                    jobs: list[str], sides: tuple[str, str], concurrency: int, deadline: float,
                    floors: Mapping[str, float], family: Family | None = None,
                    budget_pairs: int = BUDGET_PAIRS,
                    max_slowdown: float = DEFAULT_MAX_SLOWDOWN,
                    clock: Callable[[], float] = time.monotonic,
                    log: Callable[[str], None] = lambda _l: None,
                    rounds_at: Rounds | None = None) -> ProfileTiming:
    """The timing arm of ``profile`` (module docstring).

    Args:
        send: sends one batch to one side (the rounds drawn here, one at a time), unless
            ``rounds_at`` draws them (a fleet's hosts, several at once:
            :mod:`proofdiff.gate.round_units`). jobs: the workload's job names, used in turn.
        sides: the session's profile names of the baseline and the candidate side.
        deadline: ``clock()`` after which no round starts (the gate's budget).
        floors: the profile's ``timing_floor`` by metric (:func:`tolerance_of` for the rest).
        family: the gate's family of WORSE questions (default: this arm's metrics alone, at
            5 %); its ``failed`` is set by the first WORSE found here.
        budget_pairs: most rounds, the warm-up included (default :data:`BUDGET_PAIRS`).
        max_slowdown: the tolerated slowdown (``--max-slowdown``, a fraction; default 5 %).
        clock: seconds, monotonic (a simulation passes its own).

    Returns:
        The :class:`~proofdiff.gate.gate_result.ProfileTiming` (never raises on a broken daemon:
        the sampling stops and says so, and the candidate's bad jobs are its ``faults``); its
        ``hosts`` count the rounds each host drew.
    """
    if rounds_at is None:
        if send is None:
            raise TypeError("measure_profile needs send or rounds_at")
        rounds_at = LocalRounds(send, jobs=jobs, sides=sides, concurrency=concurrency)
    names = metrics_of(concurrency)
    fam = family or Family(size=len(names))
    judge = ArmJudge(profile, workload, specs_of(
        concurrency, floors, max_slowdown=max_slowdown, alpha=fam.share(),
        max_pairs=budget_pairs - 1))
    t0 = clock()
    rounds: list[tuple[SideRound, SideRound]] = []
    faults: list[str] = []
    by_host: dict[str, int] = {}

    def samples() -> dict[str, tuple[list[float], list[float]]]:
        return {m: ([METRICS[m][2](b.flow(METRICS[m][3])) for b, _ in rounds],
                    [METRICS[m][2](c.flow(METRICS[m][3])) for _, c in rounds]) for m in names}

    with progress.task("timing", f"gate {profile} rounds", total=budget_pairs) as shown:
        def wave(k: int) -> tuple[int, str]:
            # a whole wave, one round per host: a host left idle is time lost
            for o in rounds_at.draw(range(k, min(budget_pairs, k + rounds_at.width))):
                if o.pair is None:
                    faults.extend(o.faults)
                    return len(rounds), o.stopped
                b, c = o.pair
                rounds.append(o.pair)
                by_host[o.host] = by_host.get(o.host, 0) + 1
                where = "" if o.host == "local" else f" on {o.host}"
                log(f"gate timing {profile} round {len(rounds) - 1}{where}: baseline "
                    f"{b.batch.wall_ms:.0f} ms, candidate {c.batch.wall_ms:.0f} ms")
                shown.advance(note=f"baseline {b.batch.wall_ms:.0f} ms, candidate "
                              f"{c.batch.wall_ms:.0f} ms")
            return len(rounds), ""
        _, stopped = run_arm(judge, fam, wave, samples, budget_pairs=budget_pairs,
                             deadline=deadline, clock=clock)
    return ProfileTiming(profile=profile, workload=workload, concurrency=concurrency,
                         metrics=judge.verdicts(stopped),
                         rounds=len(rounds), stopped=stopped, faults=tuple(faults),
                         wall_s=round(clock() - t0, 3),
                         hosts=by_host if set(by_host) != {"local"} else {})
