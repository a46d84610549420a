"""How much work a daemon was observed proving at once, from the answers, not its own count.

An admission limit (``pipeline.max_parallel_synthesis``) is what the daemon says it keeps, and
its GetStatus ``in_progress`` is what it says it does: a daemon whose accounting is wrong
reports what it believes, so its count passes exactly when it should not. This module gives the
lower bound that proofdiff can stand behind:

* each job's *proving interval* is the part of its proving that is certain from the client's
  clock and its answer's own timings (``queue_wait_ms`` q and ``total_ms`` T, counted by the
  daemon from its receipt R): R lies between the send and ``answer - T`` (the daemon finished
  before the client read the answer), so the job proved at least over ``[max(send, answer - T)
  + q, min(send + T, answer)]``, less :data:`SLACK_S` for the whole milliseconds it reports.
  A job whose claimed T exceeds what the client observed (``wall_ms``) gives none;
* property (every correct cuzk-compatible daemon): within one priority, a daemon takes work in
  submission order (cuzk ``extern/cuzk/cuzk-core/src/scheduler.rs``: "Higher priority ->
  dequeued first. Within same priority, earlier submission first (FIFO)"; refprover README,
  "Scheduling": then partition order) and never pre-empts an item it started. So a job, once
  its first item started, always ranks before every pending item of a later job and holds at
  least one item until its last one ends: at any instant, the jobs of one priority whose
  proving intervals contain it are at most the work items in progress.

So the most jobs of one flow and one priority proving at once is a floor on the items the daemon
had in progress, whatever it reports. Flows that mix priorities (the priority check) are left
out: there a started job may wait, holding nothing, behind a later higher-priority one. The
floor is a count of whole proofs, so it bounds a limit that covers a proof's whole work: a CPU
prover's (refprover's limit counts the items being proved). On a GPU daemon cuzk's limit counts
syntheses only, while a proving interval also holds the GPU phase: there the floor is not a
bound on it (behaviour/in-flight judges it only on a profile that requests no GPU).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import msgspec

from proofdiff.model.jobs import FlowRecord, JobRecord
from proofdiff.oracles.overlap_sweep import most_at_once

__all__ = ["SLACK_S", "Overlap", "max_overlap", "observed_floor", "proving_interval"]

#: Trimmed from the start of a proving interval: the daemon reports whole milliseconds
#: (rounded down), seconds.
SLACK_S = 0.001


class Overlap(msgspec.Struct, frozen=True, kw_only=True):
    """The most jobs seen proving at once.

    Attributes:
        jobs: how many (0 when no job gave an interval).
        at_unix_s: when (wall clock, seconds since the epoch; 0.0 when ``jobs`` is 0).
        where: the flow (name and label) it was seen in ('' when ``jobs`` is 0).
        ids: the request ids proving then.
        intervals: how many proving intervals were looked at, over every flow judged.
        flows: the flows judged (one priority each) and ``mixed``: those left out.
    """

    jobs: int = 0
    at_unix_s: float = 0.0
    where: str = ""
    ids: tuple[str, ...] = ()
    intervals: int = 0
    flows: int = 0
    mixed: int = 0


def proving_interval(job: JobRecord) -> tuple[float, float] | None:
    """``(start, end)``: when one job was certainly proving, wall-clock seconds (module
    docstring); ``None`` when it did not complete, is an await-only probe, reports no timings
    (``total_ms`` 0) or more than the client observed, or leaves nothing certain."""
    t = job.timings
    if not job.completed or job.await_only or t.total_ms <= 0 or t.total_ms > job.wall_ms + 1:
        return None
    send, answer, total_s = job.started_unix_s, job.started_unix_s + job.wall_ms / 1000.0, \
        t.total_ms / 1000.0
    start = max(send, answer - total_s) + t.queue_wait_ms / 1000.0 + SLACK_S
    end = min(send + total_s, answer)
    return (start, end) if end > start else None


def max_overlap(jobs: Sequence[JobRecord]) -> tuple[int, float, tuple[str, ...], int]:
    """The most of ``jobs`` whose proving intervals share an instant: ``(count, when, ids,
    intervals looked at)`` (a sweep over the interval ends; touching ends do not overlap)."""
    iv = [(p, j.request_id or j.job) for j in jobs if (p := proving_interval(j)) is not None]
    best, when, live = most_at_once([p for p, _rid in iv])
    return best, when, tuple(iv[n][1] for n in live), len(iv)


def observed_floor(flows: Sequence[FlowRecord], kind_of: Callable[[str], str]) -> Overlap:
    """The most jobs of one flow and one priority seen proving at once over ``flows``: a floor
    on the work items the daemon had in progress (module docstring). ``kind_of(job)``: the proof
    kind of a workload job, for a job sent with no priority (the daemon gives it its kind's)."""
    best = Overlap()
    intervals = judged = mixed = 0
    for f in flows:
        real = [j for j in f.jobs if not j.await_only]
        if len({j.priority or f"default for {kind_of(j.job)}" for j in real}) > 1:
            mixed += 1
            continue
        judged += 1
        n, when, ids, looked = max_overlap(real)
        intervals += looked
        if n > best.jobs:
            best = Overlap(jobs=n, at_unix_s=when, ids=ids,
                           where=f"{f.name}{' ' + f.label if f.label else ''}")
    return msgspec.structs.replace(best, intervals=intervals, flows=judged, mixed=mixed)
