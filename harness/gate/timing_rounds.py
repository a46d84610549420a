"""The gate's timing arm: one profile on the baseline and the candidate image side by side,
interleaved rounds, a paired sequential verdict per metric (:mod:`proofdiff.stats.paired`).

Both daemons are up at once (two containers of the same profile, one per image) and each first
runs the workload once (its proofs verified: the warm-up that loads the SRS). Then round ``k``
sends one batch of ``concurrency`` proofs to each side through the profile's own driver, the
baseline first in even rounds and the candidate first in odd ones, so that neither side always
follows the other (drift within a pair would otherwise read as a change). Pair ``k`` is
(baseline batch ``k``, candidate batch ``k``); the first pair is a warmup, kept but not tested.

Metrics of one batch (each a pair of samples per round):

* ``latency``: the median job wall time, client side (ms); worse = higher;
* ``throughput``: batch wall / proofs (ms per proof, the inverse of throughput); worse = higher;
* ``in-progress``: mean jobs the daemon proved at once during each job (from its own
  ``queue_wait_ms`` / ``total_ms``: :func:`proofdiff.stats.concurrency.in_progress_of`), only for
  a profile with ``concurrency > 1``; worse = lower.
* ``lone-latency``: the wall time of one request sent alone to the idle daemon right after the
  side's batch (ms), only for a profile with ``concurrency > 1`` (at concurrency 1 every batch is
  one lone request, and ``latency`` is this metric); worse = higher. A delay that hits only a
  request that comes alone (a batch that waits to fill: cuzk ``scheduler.max_batch_wait_ms``)
  never shows in batches of ``concurrency``, and is what a WinningPoSt meets
  (:mod:`proofdiff.oracles.lone_request`, which also bounds it on the candidate alone).

Each metric is a :func:`~proofdiff.stats.paired.sequential_compare` over the shared rounds: more
rounds are drawn while any metric is INCONCLUSIVE, up to ``budget_pairs`` or the gate's
deadline. A batch that does not complete stops the sampling: the candidate's checks say why.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Mapping
from typing import NamedTuple

from proofdiff.model.jobs import FlowRecord, JobSpec
from proofdiff.stats.concurrency import in_progress_of
from proofdiff.stats.paired import sequential_compare

from proofdiff.gate.gate_result import ProfileTiming

__all__ = ["BUDGET_PAIRS", "METRICS", "OVERLAP_METRICS", "Sender", "SideRound", "measure_profile"]

#: Most pairs per profile, the warmup pair included (1 warmup + 10 tested).
BUDGET_PAIRS = 11

#: metric -> (worse direction, unit, the sample of one flow, the flow of the round it reads:
#: ``batch`` = the batch of ``concurrency``, ``lone`` = the request sent alone after it)
METRICS: dict[str, tuple[str, str, Callable[[FlowRecord], float], str]] = {
    "latency": ("higher", "ms", lambda f: float(statistics.median(j.wall_ms for j in f.jobs)),
                "batch"),
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


def measure_profile(send: Sender, *, profile: str, workload: str, jobs: list[str],
                    sides: tuple[str, str], concurrency: int, deadline: float,
                    floors: Mapping[str, float], budget_pairs: int = BUDGET_PAIRS,
                    log: Callable[[str], None] = lambda _l: None) -> ProfileTiming:
    """The timing arm of ``profile`` (module docstring).

    Args:
        send: sends one batch to one side. jobs: the workload's job names, used in turn.
        sides: the session's profile names of the baseline and the candidate side.
        deadline: ``time.monotonic()`` after which no round starts (the gate's budget).
        floors: effect-size floor per metric (default 5 %).

    Returns:
        The :class:`~proofdiff.gate.gate_result.ProfileTiming` (never raises on a broken daemon: the
        sampling stops and says so).
    """
    t0 = time.monotonic()
    rounds: list[tuple[SideRound, SideRound]] = []
    stopped = ""

    def sent(i: int, specs: list[JobSpec], label: str) -> FlowRecord | None:
        nonlocal stopped
        flow = send(sides[i], specs, label)
        if len(flow.completed()) != len(flow.jobs) or not flow.jobs:
            bad = [f"{j.request_id or j.job} {j.status.value}: {j.error}" for j in flow.jobs
                   if not j.completed]
            stopped = (f"round {len(rounds)} on the {('baseline', 'candidate')[i]}"
                       f"{' (lone request)' if label.endswith(':lone') else ''}: "
                       + (flow.stall or "; ".join(bad[:3]) or "no job ran"))
            return None
        return flow

    def draw_round() -> bool:
        k = len(rounds)
        specs = [JobSpec(index=i, job=jobs[(k * concurrency + i) % len(jobs)])
                 for i in range(concurrency)]
        order = [0, 1] if k % 2 == 0 else [1, 0]
        got: dict[int, SideRound] = {}
        for i in order:
            label = f"{('baseline', 'candidate')[i]}#{k}"
            batch = sent(i, specs, label)
            if batch is None:
                return False
            lone = batch if concurrency < 2 else sent(i, [JobSpec(index=0, job=specs[0].job)],
                                                      f"{label}:lone")
            if lone is None:
                return False
            got[i] = SideRound(batch, lone)
        rounds.append((got[0], got[1]))
        log(f"gate timing {profile} round {k}: baseline {got[0].batch.wall_ms:.0f} ms, candidate "
            f"{got[1].batch.wall_ms:.0f} ms")
        return True

    def drawer(sample: Callable[[FlowRecord], float],
               which: str) -> Callable[[int], tuple[list[float], list[float]]]:
        pos = 0

        def draw(n: int) -> tuple[list[float], list[float]]:
            nonlocal pos, stopped
            while len(rounds) < pos + n and not stopped:
                if len(rounds) >= budget_pairs:
                    break
                if time.monotonic() >= deadline:
                    stopped = "the gate's time budget (--budget-s) ran out"
                    break
                if not draw_round():
                    break
            got = rounds[pos:pos + n]
            pos += len(got)
            return ([sample(b.flow(which)) for b, _ in got],
                    [sample(c.flow(which)) for _, c in got])
        return draw

    verdicts = []
    for metric, (worse, unit, sample, which) in METRICS.items():
        if metric in OVERLAP_METRICS and concurrency < 2:
            continue  # one job at a time on both sides: nothing to overlap, every batch is lone
        verdicts.append(sequential_compare(
            drawer(sample, which), budget=budget_pairs, arm=f"{metric} {profile}", metric=metric,
            left="baseline", right="candidate", floor_rel=floors.get(metric, 0.05), unit=unit,
            worse=worse))
    return ProfileTiming(profile=profile, workload=workload, concurrency=concurrency,
                         metrics=tuple(verdicts), rounds=len(rounds), stopped=stopped,
                         wall_s=round(time.monotonic() - t0, 3))
