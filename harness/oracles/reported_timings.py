"""Timings that add up: the figures every answer carries against each other, the client's
clock and the daemon's own log.

``AwaitProofResponse`` fields 10-14 (docs/design/cuzk-interface.md) are unsigned milliseconds: queue
wait, SRS load, synthesis, GPU compute and total, counted by the daemon from its receipt of the
request. Schedulers and dashboards read them (curio logs them per proof; cuzk-bench prints
``prove=`` and ``queue=``), so a figure in the wrong unit or from a wrapped subtraction misleads
every reader. Property (every correct cuzk-compatible daemon), per answer:

* **non-negative**: a figure of 2^63 ms or more is a negative difference that wrapped in an
  unsigned field (cuzk computes the queue wait as ``elapsed - proving`` with
  ``saturating_sub``: curio ``extern/cuzk/cuzk-core/src/engine.rs``);
* **queue wait plus compute is at most the total**: the queue wait, the SRS load and the
  partitions' compute all lie within the total, and cuzk and refprover sum synthesis and GPU
  time *over partitions*, which may run side by side: so ``queue_wait + srs_load +
  (synthesis + gpu_compute) / partitions <= total`` (each partition's own time lies within the
  proving that follows the queue wait);
* **the total is at most the wall time the client observed** from its send to the answer (the
  daemon starts counting when the request arrives and stops before it answers); a job the
  driver sent as several requests (one per partition) carries their sums: at most their count
  times the wall;
* **the same unit as its log**: where the daemon logs a job's total at its end (refprover's
  ``job completed``, cuzk's ``proof assembled``), the answer's total agrees with it.

Tolerance: :data:`TOL_MS` plus :data:`TOL_SHARE` of the figure compared (each figure is rounded
to a whole millisecond; the log's time is taken a moment after the answer's); a driver whose
wall has a coarser resolution adds it (cuzk-bench prints ``X.Xs``: 100 ms). A violation fails
on that profile with the job ids; an answer with no timings (total 0) is not judged.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from proofdiff.model.choices import DriverKind
from proofdiff.model.jobs import JobRecord
from proofdiff.model.status import Outcome

from proofdiff.oracles.evidence import Evidence, Recorder
from proofdiff.oracles.log_events import logged_totals

__all__ = ["TOL_MS", "TOL_SHARE", "WRAPPED", "check", "problems_of"]

#: Slack per comparison, ms: whole-ms rounding of up to four figures, and the moment between
#: the answer's total and the log line's.
TOL_MS = 10.0
#: Slack per comparison, as a share of the larger side (the two clocks' rates).
TOL_SHARE = 0.02
#: A figure at or above this is a negative number that wrapped in a uint64 field.
WRAPPED = 2 ** 63
#: The bench tool's wall resolution (``X.Xs``), ms.
BENCH_WALL_MS = 100.0
LOG_LINES = 100_000
TIMING_KEYS = ("config.pipeline.enabled", "config.synthesis.partition_workers", "image")
_FIELDS = ("queue_wait_ms", "srs_load_ms", "synthesis_ms", "gpu_compute_ms", "total_ms")


def _tol(x: float, extra: float = 0.0) -> float:
    return TOL_MS + TOL_SHARE * x + extra


def problems_of(job: JobRecord, partitions: int, *, wall_extra_ms: float = 0.0,
                logged: Sequence[int] = ()) -> list[str]:
    """What does not add up in ``job``'s answer (module docstring); [] when it all does or the
    answer reports no timings. ``logged``: the totals the log gives for its id."""
    t = job.timings
    if t.total_ms <= 0 and not any(getattr(t, f) >= WRAPPED for f in _FIELDS):
        return []
    out = [f"{f}={getattr(t, f)} is a negative number wrapped in an unsigned field"
           for f in _FIELDS if getattr(t, f) >= WRAPPED]
    if out:
        return out
    answers = max(1, len(job.job_id.split(","))) if job.job_id else 1
    inner = t.queue_wait_ms + t.srs_load_ms + (t.synthesis_ms + t.gpu_compute_ms) / max(
        1, partitions)
    if inner > t.total_ms + _tol(inner):
        out.append(f"queue_wait {t.queue_wait_ms} + srs_load {t.srs_load_ms} + (synthesis "
                   f"{t.synthesis_ms} + gpu_compute {t.gpu_compute_ms}) / {partitions} "
                   f"partition(s) = {inner:.0f} ms is more than its total {t.total_ms} ms")
    if job.wall_ms > 0 and t.total_ms > answers * job.wall_ms + _tol(t.total_ms, wall_extra_ms):
        out.append(f"total {t.total_ms} ms is more than the {job.wall_ms:.0f} ms the client "
                   "observed from its send to the answer"
                   + (f" (x {answers} requests)" if answers > 1 else ""))
    if logged and answers == 1:
        near = min(logged, key=lambda x: abs(x - t.total_ms))
        if abs(near - t.total_ms) > _tol(max(near, t.total_ms)):
            out.append(f"total {t.total_ms} ms but its log says total_ms={near} "
                       f"({near / max(1, t.total_ms):.3g}x): not the same unit")
    return out


def check(ev: Evidence, rec: Recorder, name: str, workload: str) -> None:
    """Record ``timings`` for ``name`` over every answer of every flow so far."""
    wl = ev.workload(workload)
    extra = BENCH_WALL_MS if ev.driver(name).name == DriverKind.BENCH_CLI else 0.0
    totals = logged_totals(ev.daemon_log(name, LOG_LINES))
    judged, in_log, bad = 0, 0, []
    for f in ev.flows(name, workload):
        for j in f.jobs:
            if j.await_only:
                continue
            logged = totals.get(j.request_id, ())
            found = problems_of(j, wl.job(j.job).shape.partitions, wall_extra_ms=extra,
                                logged=logged)
            judged += j.timings.total_ms > 0 or bool(found)
            in_log += bool(logged) and j.timings.total_ms > 0
            if found:
                bad.append((f.name, j, found))
    head = f"the timings of profile {name!r}'s answers ({workload}, {judged} answer(s) judged)"
    ev_: dict[str, Any] = {"judged": judged, "against_the_log": in_log,
                           "violations": [{"flow": fl, "id": j.request_id, "job": j.job,
                                           "timings": {k: getattr(j.timings, k) for k in _FIELDS},
                                           "wall_ms": round(j.wall_ms, 1), "problems": p}
                                          for fl, j, p in bad[:20]]}
    if not judged:
        rec("timings", name, Outcome.SKIPPED, f"{head}: no answer carried timings (every "
            "total_ms 0): nothing to add up", evidence=ev_)
    elif bad:
        lines = [f"  {j.request_id or j.job} ({fl}): {'; '.join(p)}" for fl, j, p in bad[:6]]
        rec("timings", name, Outcome.FAIL, "\n".join(
            [f"{head}: {len(bad)} answer(s) whose figures do not add up", *lines]
            + ([f"  ... and {len(bad) - 6} more"] if len(bad) > 6 else [])),
            evidence=ev_, names=TIMING_KEYS)
    else:
        rec("timings", name, Outcome.PASS, f"{head}: every figure non-negative, queue wait + "
            "compute within its total, the total within the client's wall"
            + (f", and {in_log} of them in the same unit as the total its log gives"
               if in_log else ""), evidence=ev_)
