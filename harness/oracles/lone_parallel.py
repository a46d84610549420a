"""Promised parallelism on an idle daemon: a lone multi-partition job has its partitions in
progress side by side.

Property (every correct cuzk-compatible daemon): a daemon whose config gives it several workers
for partitions (``pipeline.enabled`` with ``synthesis.partition_workers`` > 1, refprover;
cuzk's partitioned pipeline, whose synthesis workers take partitions as they are queued,
``pipeline.max_parallel_synthesis`` at once: curio ``extern/cuzk/cuzk-core/src/engine.rs``,
``cuzk-core/src/config.rs``) proves the partitions of a lone job side by side:
``min(workers, in-flight limit, partitions)`` of them at once. Nothing else is queued, so nothing
may hold a free worker back. A daemon that proves them one after another still completes and
verifies, and four jobs at once hide it (``behaviour/mode`` judges the busiest flow); only a job
alone on an idle daemon shows it, and a lone job is what a deadline proof (a WindowPoSt
partition set, a WinningPoSt) is.

Judged on the lone requests of ``behaviour/lone-request`` (each alone on the idle daemon; no
proof is added), from what proofdiff observes, never from the daemon's status figures alone:

* the **log's events** (:mod:`proofdiff.oracles.log_events`): each partition's start and end,
  kept only where they lie within the request's send and answer times: the most of the job's
  partitions in progress at once;
* else the **answer's timings against the client's clock**: the partitions' compute (synthesis
  + GPU, summed over partitions, as cuzk and refprover report them) over the proving time the
  client saw (its wall, less the queue wait and SRS load): partitions proved one after another
  cannot add up to more than that time; side by side they do. Used only where the figures add
  up (a partition's share within the proving time; ``behaviour/timings`` judges the rest);
* the daemon's CPU over the job (cores busy) and its ``GetStatus`` in-progress count are quoted
  beside them (on a CPU prover whose one proof already keeps every core busy, the CPU cannot
  tell the two apart).

The median lone job decides: fewer at once than promised fails. Applies to profiles that
promise it (:func:`promised`); a workload whose jobs have one partition has nothing to put side
by side (SKIPPED, with the reason).
"""

from __future__ import annotations

import statistics
from typing import TYPE_CHECKING, Any

from proofdiff.model.jobs import FlowRecord, JobRecord
from proofdiff.model.profile import Profile
from proofdiff.model.status import Outcome

from proofdiff.oracles.log_events import fitted, logged_items, max_overlap

if TYPE_CHECKING:  # the suite table asks promised() without a session's imports
    from proofdiff.oracles.evidence import Evidence, Recorder

__all__ = ["RATIO_SLACK", "promised", "check", "compute_ratio", "cores_busy"]

#: Lines of the daemon's log read for its events.
LOG_LINES = 100_000
#: The share of the proving time the summed compute must exceed, over one partition's worth,
#: to show partitions side by side: whole-ms rounding and the assembly between partitions.
RATIO_SLACK = 0.2
PARALLEL_KEYS = ("config.pipeline.enabled", "config.synthesis.partition_workers",
                 "config.pipeline.max_parallel_synthesis", "env")


def promised(profile: Profile) -> int:
    """How many work items the profile's config lets the daemon prove side by side: its
    partition workers, capped by ``pipeline.max_parallel_synthesis``; 1 without the pipeline
    (a monolithic daemon proves a job as one item)."""
    cfg = profile.effective_config()
    if not cfg.get("pipeline", {}).get("enabled"):
        return 1
    workers = int(cfg.get("synthesis", {}).get("partition_workers") or 1)
    limit = int(cfg.get("pipeline", {}).get("max_parallel_synthesis") or 0)
    return min(workers, limit) if limit else workers


def compute_ratio(job: JobRecord, partitions: int) -> float | None:
    """The partitions' summed compute over the proving time the client saw (module docstring);
    ``None`` when the answer gives no compute, no proving time, or figures that do not add up."""
    t = job.timings
    compute = t.synthesis_ms + t.gpu_compute_ms
    proving = min(float(t.total_ms), job.wall_ms) - t.queue_wait_ms - t.srs_load_ms
    if not job.completed or compute <= 0 or proving <= 0 or t.total_ms <= 0:
        return None
    if compute / max(1, partitions) > proving * (1 + RATIO_SLACK):
        return None  # a partition's share longer than the job: the figures do not add up
    return compute / proving


def cores_busy(flow: FlowRecord, job: JobRecord) -> float | None:
    """The daemon's CPU over ``job``'s send to answer (its usage readings inside that span),
    in cores; ``None`` with fewer than two readings there."""
    if not flow.started_unix_s:
        return None
    lo = (job.started_unix_s - flow.started_unix_s) * 1000.0
    inside = [u for u in flow.usage if lo <= u.t_ms <= lo + job.wall_ms]
    if len(inside) < 2 or inside[-1].t_ms <= inside[0].t_ms:
        return None
    return (inside[-1].cpu_s - inside[0].cpu_s) / ((inside[-1].t_ms - inside[0].t_ms) / 1000.0)


def _lone(ev: Evidence, name: str, workload: str) -> list[tuple[FlowRecord, JobRecord]]:
    return [(f, j) for f in ev.flows(name, workload) if f.name == "lone" for j in f.jobs
            if not j.await_only]


def check(ev: Evidence, rec: Recorder, name: str, workload: str) -> None:
    """Record ``parallel`` for ``name`` from its lone requests (module docstring)."""
    wl = ev.workload(workload)
    want = promised(ev.profiles[name])
    lone = _lone(ev, name, workload)
    head = (f"partitions side by side on the idle daemon of profile {name!r} ({workload}): "
            f"its config lets it prove {want} at once")
    multi = [(f, j) for f, j in lone if wl.job(j.job).shape.partitions > 1]
    if lone and not multi:
        rec("parallel", name, Outcome.SKIPPED, f"{head}, but every lone request is a job of one "
            "partition: nothing to put side by side")
        return
    done = [(f, j) for f, j in multi if j.completed]
    if not done:
        rec("parallel", name, Outcome.ERROR, f"{head}: nothing to judge: no lone request of "
            "several partitions came back with a proof", evidence={"lone": len(lone)})
        return
    items, misfit = fitted(logged_items(ev.daemon_log(name, LOG_LINES)), [j for _, j in done])
    per_job: list[dict[str, Any]] = []
    for f, j in done:
        parts = wl.job(j.job).shape.partitions
        mine = [i for i in items if i.job_id == j.request_id]
        seen = max_overlap(mine)[0] if len(mine) >= parts else None
        per_job.append({"id": j.request_id, "partitions": parts, "expected": min(want, parts),
                        "log_at_once": seen, "compute_ratio": compute_ratio(j, parts),
                        "cores_busy": cores_busy(f, j), "wall_ms": round(j.wall_ms, 1),
                        "status_max_in_progress": max((s.in_progress for s in f.samples),
                                                      default=None)})
    ev_: dict[str, Any] = {"promised": want, "jobs": per_job, "log_items_misfit": misfit}
    expected = statistics.median(p["expected"] for p in per_job)
    by_log = [p["log_at_once"] for p in per_job if p["log_at_once"] is not None]
    by_time = [p["compute_ratio"] for p in per_job if p["compute_ratio"] is not None]
    quoted = "; ".join(
        f"{p['id']}: {p['partitions']} partitions, log "
        + (f"{p['log_at_once']} at once" if p["log_at_once"] is not None else "n/a")
        + ", compute "
        + (f"{p['compute_ratio']:.2f}x" if p["compute_ratio"] is not None else "n/a")
        + " its proving time, CPU " + (f"{p['cores_busy']:.2f}" if p["cores_busy"] is not None
                                       else "n/a")
        + f" cores, GetStatus at most {p['status_max_in_progress']} in progress"
        for p in per_job)
    if by_log:
        at_once = statistics.median(by_log)
        how = f"the log's partition events show {at_once:g} at once (median of {len(by_log)})"
        ok = at_once >= expected
    elif by_time:
        ratio = statistics.median(by_time)
        at_once = ratio
        how = (f"the answers' partition compute is {ratio:.2f}x the proving time the client saw "
               f"(median of {len(by_time)}): above {1 + RATIO_SLACK:g} only side by side")
        ok = ratio > 1 + RATIO_SLACK or expected <= 1
    else:
        rec("parallel", name, Outcome.ERROR, f"{head}: nothing to judge: the log has no "
            "partition events within the lone requests and their answers give no compute "
            f"figures that add up ({quoted})", evidence=ev_)
        return
    ev_["decided_by"] = "log" if by_log else "timings"
    if ok:
        rec("parallel", name, Outcome.PASS, f"{head}: {how}; {quoted}", evidence=ev_)
    else:
        rec("parallel", name, Outcome.FAIL, f"{head}, {expected:g} for a lone job here, but "
            f"{how}: its partitions were proved one after another while workers stood idle; "
            f"{quoted}", evidence=ev_, names=PARALLEL_KEYS)
