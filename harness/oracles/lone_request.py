"""The latency of a lone request: one request alone on an idle daemon, judged against the time
the same profile's proofs take to prove.

Property (every correct cuzk-compatible daemon): a request that arrives at an idle daemon has
nothing to wait for, so it is answered in about the time it takes to prove. A daemon that holds
a lone request back is wrong for the requests that come alone: a WinningPoSt comes alone and has
a deadline (one epoch; a late proof loses the block: bellperson #291, lotus #9727). cuzk's
scheduler has such a wait by design: ``scheduler.max_batch_wait_ms`` "Max time (ms) to wait for
batch to fill before flushing", default 10 000 ms (curio ``extern/cuzk/cuzk-core/src/config.rs``
``SchedulerConfig``), with ``scheduler.max_batch_size`` > 1. Batches of the profile's
concurrency fill at once and never show it; only a request sent alone does.

Judged by two bounds, both derived from the same profile's proofs, not fixed numbers. The
*proving time* of a proof is what its answer's own timings give, ``total_ms - queue_wait_ms -
srs_load_ms`` (``AwaitProofResponse`` fields 10-14, docs/design/cuzk-interface.md), capped by
the wall time the client observed from send to answer (a claim never widens a bound past what
was seen);
the basis is the median proving time of the profile's other proofs (its workload run):

* **its wait**: a lone request's wall time less its own proving time (what it spent waiting,
  by its own answer) stays within :data:`WAIT_FACTOR` x the basis. Waiting is not CPU work, so
  a loaded machine does not stretch it: a correct daemon's lone request waits milliseconds,
  whatever the load. A daemon that reports its hold honestly (cuzk counts the batch wait in
  the queue) fails here.
* **its wall**: the lone request's wall time, proofdiff's own observation, stays within
  :data:`LONE_FACTOR` x the basis, so a daemon whose timings hide the hold still fails when the
  hold is long; wide, because the basis was timed a minute earlier, and a shared machine's
  load changes in a minute (a clean bench's lone requests can take three times its
  workload's proofs in a nightly whose every other figure is clean).

Both are judged on the median over the lone requests: two are sent, and a third only when the
two fall on either side of a bound. The median of three values is within a bound exactly when
two of them are, so two that agree already give the decision three would; the third costs a
proof only where it can change it.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import Any

import msgspec

from proofdiff.model.jobs import JobRecord, JobSpec
from proofdiff.model.status import Outcome

from proofdiff.oracles.evidence import Evidence, Recorder

__all__ = ["LONE_FACTOR", "WAIT_FACTOR", "LoneBound", "check", "judge_lone", "lone_bound", "lone_spec",
           "proving_ms", "split"]

#: The config keys that make a daemon hold a request back to batch it (cuzk's scheduler), for
#: the suspects of a failure.
BATCH_KEYS = ("config.scheduler.max_batch_size", "config.scheduler.max_batch_wait_ms",
              "concurrency")
#: Lone requests the behaviour check judges the median of, one after another (one sample on a
#: shared machine can meet a neighbour's burst); the last only where the others split on a bound.
LONE_REQUESTS = 3
#: A lone request's wait (its wall less its own proving time) over the basis: a correct daemon
#: waits milliseconds; a hold of a whole proof's time or more is the defect.
WAIT_FACTOR = 1.0
#: A lone request's wall over the basis: 1 by the property; 5 for the load of a shared machine,
#: which can change threefold between the basis and the lone requests of a clean nightly. A
#: 10 s batch wait (cuzk's default) beside proofs of a second or two still shows.
LONE_FACTOR = 5.0


class LoneBound(msgspec.Struct, frozen=True, kw_only=True):
    """What a lone request of one profile is judged against.

    Attributes:
        bound_ms: the latency a lone request must stay within, ms
            (:data:`LONE_FACTOR` x ``median_proving_ms``).
        median_proving_ms: the median proving time of the basis proofs, ms.
        proofs: how many proofs gave a proving time (COMPLETED, with timings reported).
    """

    bound_ms: float
    median_proving_ms: float
    proofs: int


def proving_ms(job: JobRecord) -> float | None:
    """The proving time of one answered job, ms: ``min(total_ms, wall_ms) - queue_wait_ms -
    srs_load_ms`` from its answer; ``None`` when the job did not complete, is an await-only probe,
    or its answer reports no timings (``total_ms`` 0) or an impossible split (not above 0)."""
    if not job.completed or job.await_only or job.timings.total_ms <= 0:
        return None
    t = job.timings
    got = min(float(t.total_ms), job.wall_ms) - t.queue_wait_ms - t.srs_load_ms
    return got if got > 0 else None


def lone_bound(basis: Sequence[JobRecord]) -> LoneBound | None:
    """The bound from the profile's proofs ``basis`` (module docstring); ``None`` when none of
    them gives a proving time (nothing to derive a bound from)."""
    times = [p for p in (proving_ms(j) for j in basis) if p is not None]
    if not times:
        return None
    med = float(statistics.median(times))
    return LoneBound(bound_ms=LONE_FACTOR * med, median_proving_ms=med, proofs=len(times))


def lone_spec(job: str, index: int = 0) -> JobSpec:
    """One request of a lone flow: workload job ``job`` with its own priority."""
    return JobSpec(index=index, job=job)


def judge_lone(lones: Sequence[JobRecord], basis: Sequence[JobRecord],
               where: str) -> tuple[Outcome, str, dict[str, Any]]:
    """Judge the lone requests ``lones`` (each sent alone to the idle daemon) against the bound
    from ``basis`` (module docstring), by the median of their latencies.

    Args:
        where: names the profile and workload in the message (``profile 'prod' (wpost-2k)``).

    Returns:
        ``(outcome, message, evidence)``: PASS within the bound, FAIL beyond it, ERROR when a
        lone request did not complete or no basis proof gives a proving time (nothing to judge).
    """
    bound = lone_bound(basis)
    walls = [j.wall_ms for j in lones if j.completed]
    bad = next((j for j in lones if not j.completed), None)
    head = (f"one request alone on the idle daemon of {where}" if len(lones) == 1 else
            f"{len(lones)} requests, each alone on the idle daemon of {where}")
    ev: dict[str, Any] = {"lone_ms": [round(w, 1) for w in walls], "lone_requests": len(lones),
                          "lone_queue_wait_ms": [j.timings.queue_wait_ms for j in lones],
                          "factor": LONE_FACTOR}
    if bad is not None or not walls:
        return Outcome.ERROR, (f"{head}: nothing to judge: " + (
            f"{bad.render()} got no proof: {bad.error or '(no text)'}"
            if bad is not None else "no lone request was sent")), ev
    if bound is None:
        return Outcome.ERROR, (f"{head}: nothing to judge: none of the profile's {len(basis)} "
                               "other proof(s) completed with timings (total_ms), so there is no "
                               "proving time to bound it by"), ev
    lone_ms = float(statistics.median(walls))
    waits_ms = [j.wall_ms - (proving_ms(j) or 0.0) for j in lones]
    wait_ms = float(statistics.median(waits_ms))
    ratio = lone_ms / bound.median_proving_ms
    wait_bound = WAIT_FACTOR * bound.median_proving_ms
    ev.update(median_lone_ms=round(lone_ms, 1), bound_ms=round(bound.bound_ms, 1),
              median_proving_ms=round(bound.median_proving_ms, 1), basis_proofs=bound.proofs,
              ratio=round(ratio, 3), median_wait_ms=round(wait_ms, 1),
              wait_bound_ms=round(wait_bound, 1))
    one = len(walls) == 1
    figs = (f"{'it was' if one else 'they were (median)'} answered in {lone_ms:.0f} ms, of which "
            f"{wait_ms:.0f} ms not proving by {'its answer' if one else 'their answers'}"
            f"{chr(39) + 's' if one else chr(39)} own timings (bound {WAIT_FACTOR:g}x), {ratio:.2f}x the median proving time "
            f"{bound.median_proving_ms:.0f} ms of the profile's {bound.proofs} proof(s) (bound "
            f"{LONE_FACTOR:g}x = {bound.bound_ms:.0f} ms)")
    why = ("a request that comes alone is held back (a batch that waits to fill? cuzk "
           "scheduler.max_batch_wait_ms); a WinningPoSt, which comes alone with a deadline, "
           "would be late")
    if wait_ms > wait_bound:
        return Outcome.FAIL, f"{head}: {figs}: it waited longer than a proof takes: {why}", ev
    if lone_ms > bound.bound_ms:
        return Outcome.FAIL, f"{head}: {figs}: beyond the bound: {why}", ev
    return Outcome.PASS, f"{head}: {figs}", ev


def split(lones: Sequence[JobRecord], basis: Sequence[JobRecord]) -> bool:
    """Whether the answered requests ``lones`` fall on both sides of a bound of
    :func:`judge_lone` (its wait bound or its wall bound), so that only one more request can
    decide their median. ``False`` when any of them got no proof or ``basis`` gives no bound:
    :func:`judge_lone` then says ERROR, whatever another request gives."""
    bound = lone_bound(basis)
    if bound is None or not lones or not all(j.completed for j in lones):
        return False
    wait_bound = WAIT_FACTOR * bound.median_proving_ms
    waits = {j.wall_ms - (proving_ms(j) or 0.0) <= wait_bound for j in lones}
    walls = {j.wall_ms <= bound.bound_ms for j in lones}
    return len(waits) > 1 or len(walls) > 1


def check(ev: Evidence, rec: Recorder, name: str, workload: str,
          oracle: str) -> tuple[JobRecord, ...]:
    """Send requests to ``name``'s idle daemon (after its workload run), one after another at
    concurrency 1, so each is alone: two, and a third only where the two split on a bound
    (:func:`split`); record ``oracle`` on their median, the workload run's proofs as the basis
    of the bound. Returns the lone requests' records (the solo latency of the priority check)."""
    wl_flow = ev.run(name, workload).workload_flow
    basis = wl_flow.jobs if wl_flow else ()
    jobs = ev.workload(workload).jobs
    specs = [lone_spec(jobs[i % len(jobs)].name, i) for i in range(LONE_REQUESTS)]
    lones = list(ev.send(name, workload, specs[:-1], name="lone", concurrency=1).jobs)
    if split(lones, basis):
        lones += ev.send(name, workload, specs[-1:], name="lone", label="tie-break",
                         concurrency=1).jobs
    outcome, message, evidence = judge_lone(lones, basis, f"profile {name!r} ({workload})")
    rec(oracle, name, outcome, message, evidence=evidence,
        names=BATCH_KEYS if outcome is Outcome.FAIL else ())
    return tuple(lones)
