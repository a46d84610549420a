"""Admission judged every time: never more work items in progress than the daemon's limit,
over a flow built to reach it.

Property (every correct cuzk-compatible daemon): ``pipeline.max_parallel_synthesis`` is the
"maximum number of partition syntheses running in parallel" (curio
``extern/cuzk/cuzk-core/src/config.rs``; refprover: work items being proved), a memory bound a
deployment sets; the daemon never has more in progress, whatever the ids, priorities or
partitions of the jobs (curio a3bb5641: MaxPending 15, 44 claimed). The limit is the profile's,
else the one the daemon reports (``/status`` ``synthesis.max_concurrent``, its start log's
``max_concurrent=``); with none, nothing is judged (SKIPPED, with the reason).

An overrun shows only when more work is offered than the limit: that it happened to line up in
one run and not the next is luck. So the check needs a **saturating flow**: jobs sent at once
whose work items number more than the limit, all pending together for as long as a proof takes,
so that every one the daemon would admit is admitted before the first ends. The flows sent so
far usually include one (the workload at prod's concurrency, isolation's burst, the priority
flow); where none does, it sends one (``admission``: ``limit + 1`` items at once).

Judged over every flow so far, from three sources together:

* the **answers' proving intervals** (:mod:`proofdiff.oracles.observed_overlap`): the most jobs
  of one priority proving at once is a floor on the items in progress, whatever the daemon
  counts (a CPU prover only);
* the **log's work-item events** (:mod:`proofdiff.oracles.log_events`), each kept only where it
  lies within its request's send and answer times: the most items in progress at once, item by
  item (it sees the partitions of one job side by side, which the answers cannot);
* the **daemon's own count** (``GetStatus`` in progress, sampled every 0.25 s): a claim, but a
  count past the limit is its own admission.

Any of them past the limit fails. The daemon's CPU over the saturating flow (its cores busy at
the peak, from the usage readings) is quoted beside them: where one proof keeps every core busy
(a parallel prover on few cores) it cannot count items, and it is never the judge alone.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from proofdiff.model.jobs import FlowRecord, JobSpec
from proofdiff.model.status import Outcome
from proofdiff.runtime.daemon_status import max_concurrent_from_log

from proofdiff.oracles.evidence import Evidence, Recorder
from proofdiff.oracles.log_events import fitted, logged_items, max_overlap
from proofdiff.oracles.observed_overlap import observed_floor

__all__ = ["check", "items_at_once", "limit_of", "peak_cores", "saturating"]

LOG_LINES = 100_000
INFLIGHT_KEYS = ("config.pipeline.max_parallel_synthesis", "job_ids", "concurrency")


def limit_of(ev: Evidence, name: str) -> tuple[int, str]:
    """``(limit, its source)``; 0 when neither the profile nor the daemon gives one."""
    cfg = ev.profiles[name].effective_config()
    limit = int(cfg.get("pipeline", {}).get("max_parallel_synthesis") or 0)
    if limit:
        return limit, "pipeline.max_parallel_synthesis"
    facts = ev.facts(name)
    reported = ((facts.status if facts and facts.status else {}).get("synthesis") or {}).get(
        "max_concurrent")
    if reported:
        return int(reported), "the daemon's /status synthesis.max_concurrent"
    logged = max_concurrent_from_log(ev.daemon_log(name, LOG_LINES))
    if logged:
        return logged, "the daemon's start log (max_concurrent=)"
    return 0, ""


def items_at_once(flow: FlowRecord, items_per_job: int) -> int:
    """Work items a flow offers at once: the jobs it sends together times each one's items."""
    real = [j for j in flow.jobs if not j.await_only]
    return min(max(1, flow.concurrency), len(real)) * items_per_job


def saturating(flows: Sequence[FlowRecord], limit: int, items_per_job: int) -> list[str]:
    """The flows that offered more items at once than ``limit`` (their names)."""
    return [f"{f.name}{' ' + f.label if f.label else ''}" for f in flows
            if items_at_once(f, items_per_job) > limit]


def peak_cores(flows: Sequence[FlowRecord]) -> float | None:
    """The daemon's most cores busy between two consecutive usage readings of ``flows``."""
    best: float | None = None
    for f in flows:
        for a, b in zip(f.usage, f.usage[1:]):
            if b.t_ms > a.t_ms:
                cores = (b.cpu_s - a.cpu_s) / ((b.t_ms - a.t_ms) / 1000.0)
                best = cores if best is None else max(best, cores)
    return best


def _peak(flows: Sequence[FlowRecord]) -> tuple[int, str, int, int]:
    """(most items in progress by the daemon's count, where, samples, most running jobs)."""
    best, where, running, n = 0, "", 0, 0
    for f in flows:
        for s in f.samples:
            n += 1
            running = max(running, s.running_jobs or 0)
            if s.in_progress > best:
                best, where = s.in_progress, (f"{f.name}{' ' + f.label if f.label else ''} at "
                                              f"{s.t_ms / 1000:.1f} s")
    return best, where, n, running


def _saturate(ev: Evidence, name: str, workload: str, limit: int, per_job: int) -> FlowRecord:
    jobs = ev.workload(workload).jobs
    n = math.ceil((limit + 1) / per_job)
    specs = [JobSpec(index=i, job=jobs[i % len(jobs)].name) for i in range(n)]
    return ev.send(name, workload, specs, name="admission", concurrency=n)


def check(ev: Evidence, rec: Recorder, name: str, workload: str) -> None:
    """Record ``in-flight`` for ``name`` (module docstring)."""
    wl = ev.workload(workload)
    p = ev.profiles[name]
    pipeline = bool(p.effective_config().get("pipeline", {}).get("enabled"))
    per_job = wl.partitions if pipeline else 1
    limit, source = limit_of(ev, name)
    flows = ev.flows(name, workload)
    sat = saturating(flows, limit, per_job) if limit else []
    if limit and not sat:
        flows = [*flows, _saturate(ev, name, workload, limit, per_job)]
        sat = saturating(flows[-1:], limit, per_job)
    seen, where, n, running = _peak(flows)
    cpu_prover = p.gpus is None  # the floor bounds a limit on whole proofs
    obs = observed_floor(flows, lambda job: str(wl.job(job).shape.proof_kind))
    items, misfit = fitted(logged_items(ev.daemon_log(name, LOG_LINES)),
                           [j for f in flows for j in f.jobs])
    logged, log_at, log_ids = max_overlap(items)
    cores = peak_cores([f for f in flows if f"{f.name}{' ' + f.label if f.label else ''}" in sat])
    ev_: dict[str, Any] = {
        "limit": limit, "limit_source": source, "saturating_flows": sat,
        "observed_max_in_progress": seen, "where": where, "samples": n,
        "max_running_jobs": running, "flows": len(flows), "observed_floor": obs.jobs,
        "observed_where": obs.where, "observed_ids": list(obs.ids),
        "observed_intervals": obs.intervals, "floor_judged": cpu_prover,
        "log_items": len(items), "log_items_misfit": misfit, "log_max_at_once": logged,
        "log_ids": list(log_ids[:8]), "peak_cores_saturating": cores}
    head = f"in-flight work on profile {name!r} ({workload}, {len(flows)} flow(s), {n} samples)"
    floor = (f"the answers' own proving intervals show at most {obs.jobs} job(s) proving at once"
             + (f" ({obs.where})" if obs.jobs else "") + f" over {obs.intervals} answer(s)"
             + ("" if cpu_prover else " (not a bound on a GPU daemon's synthesis limit)"))
    in_log = (f"the log's work-item events show at most {logged} item(s) in progress at once "
              f"({len(items)} item(s) within their requests' times"
              + (f", {misfit} outside them, left out" if misfit else "") + ")")
    cpu = ("" if cores is None else f"; the daemon's CPU peaked at {cores:.2f} cores in the "
           "saturating flow(s)")
    judged = cpu_prover and obs.intervals > 0
    if n == 0 and not judged and not items:
        rec("in-flight", name, Outcome.ERROR, f"{head}: nothing to judge: no GetStatus sample, "
            "no proving interval and no logged work item", evidence=ev_)
    elif seen == 0 and running == 0 and not judged and not items:
        rec("in-flight", name, Outcome.ERROR, f"{head}: nothing to judge: no sample showed any "
            "work in progress (GetStatus queues, cuzk_running_jobs) while jobs were out, so the "
            "daemon does not report what it proves at once", evidence=ev_)
    elif not limit:
        rec("in-flight", name, Outcome.SKIPPED, f"{head}: no limit to judge against: the profile "
            "sets no pipeline.max_parallel_synthesis and the daemon reports none (/status "
            "synthesis.max_concurrent, start log max_concurrent=); seen: at most "
            f"{seen} work item(s) in progress, cuzk_running_jobs at most {running}; {floor}; "
            f"{in_log}; set the limit in the profile's config to check it", evidence=ev_)
    elif logged > limit:
        rec("in-flight", name, Outcome.FAIL, f"{head}: {in_log}: {', '.join(log_ids[:6])} at "
            f"{log_at:.3f}, but {source} = {limit}; the daemon's own count reached {seen}; "
            f"{floor}{cpu}. The daemon admits more than its configured limit", evidence=ev_,
            names=INFLIGHT_KEYS)
    elif seen > limit:
        rec("in-flight", name, Outcome.FAIL, f"{head}: {seen} work items in progress ({where}) "
            f"but {source} = {limit}; cuzk_running_jobs reached {running}; {floor}; {in_log}"
            f"{cpu}. The daemon admits more than its configured limit (curio a3bb5641: "
            "MaxPending 15, 44 claimed)", evidence=ev_, names=INFLIGHT_KEYS)
    elif judged and obs.jobs > limit:
        rec("in-flight", name, Outcome.FAIL, f"{head}: {floor}: "
            f"{', '.join(obs.ids[:6])} at once, each holding at least one work item, but {source} "
            f"= {limit}; the daemon's own count never went past {seen}: it admits more than its "
            f"limit and its accounting does not see it{cpu}", evidence=ev_, names=INFLIGHT_KEYS)
    else:
        rec("in-flight", name, Outcome.PASS, f"{head}: offered more than the limit at once in "
            f"{', '.join(sat)}; at most {seen} work item(s) in progress by the daemon's count; "
            f"{floor}; {in_log}{cpu}; within {source} = {limit}", evidence=ev_)
