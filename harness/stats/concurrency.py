"""How many jobs a daemon was really proving at once, from the timings it reported."""

from __future__ import annotations

from collections.abc import Sequence

from proofdiff.model.jobs import JobRecord

__all__ = ["in_progress", "in_progress_of"]


def in_progress(jobs: Sequence[tuple[float, float, float]]) -> list[float]:
    """Per job, how many jobs (itself included) the daemon was proving on average during the
    job's own proving interval ``[start + queue_wait, start + total]``, from ``(start_s,
    queue_wait_ms, total_ms)``. 1.0 = alone; a daemon that runs jobs one at a time gives 1.0 to
    every job whatever the concurrency it was offered."""
    iv = [(s + q / 1000.0, s + max(q, t) / 1000.0) for s, q, t in jobs]
    out = []
    for a0, a1 in iv:
        span = a1 - a0
        if span <= 0:
            out.append(1.0)
            continue
        covered = sum(max(0.0, min(a1, b1) - max(a0, b0)) for b0, b1 in iv)
        out.append(max(1.0, covered / span))
    return out


def in_progress_of(jobs: Sequence[JobRecord]) -> list[float]:
    """:func:`in_progress` of the COMPLETED records among ``jobs``."""
    return in_progress([(j.started_unix_s, j.timings.queue_wait_ms, j.timings.total_ms) for j in jobs
                        if j.completed and not j.await_only])
