"""Behaviour, per profile: what the daemon really does, against what the profile asked for.

Read from what proofdiff observes (when each request was sent and answered, the proving
intervals its answers give, ``docker stats``) and from the daemon's own figures, which are
claims to cross-check (``GetStatus`` work items pending and in progress and
``cuzk_running_jobs``, sampled by the hang guard during every flow; its ``GET /status``), so a
silently changed proving path shows up in the default run:

* ``priority``: cuzk schedules by priority, then FIFO (WinningPoSt CRITICAL, WindowPoSt HIGH,
  PoRep and Snap NORMAL; a WinningPoSt that waits behind queued work loses the block:
  bellperson #291, lotus #9727). With NORMAL jobs queued beyond what the daemon proves at once,
  a HIGH job submitted last must start before every NORMAL job still queued when it arrived,
  and complete within :data:`PRIORITY_BOUND` x its solo latency: the median latency of the
  ``lone-request`` check's requests, each alone on the idle daemon (no request of its own).
* ``mode``: the proving mode and worker count the daemon reports, and the work items it was
  seen proving at once, match the profile's ``pipeline.enabled``, ``synthesis.partition_workers``,
  ``pipeline.max_parallel_synthesis`` and concurrency (a profile that asks for 4 partition
  workers and pipeline mode but is seen proving one partition at a time fails).
* ``in-flight``: the work items in progress never exceed the limit the config sets
  (``pipeline.max_parallel_synthesis``) or the daemon reports, over every flow so far and a
  flow that offers more than the limit at once (:mod:`proofdiff.oracles.in_flight`).
* ``lone-request``: one request alone on the idle daemon is answered within a bound derived
  from the same profile's proofs (:mod:`proofdiff.oracles.lone_request`: a delay that hits only
  a lone request, such as a batch waiting to fill, is what a WinningPoSt meets).
* ``parallel`` (profiles whose config promises partitions side by side): a lone
  multi-partition job has them in progress side by side (:mod:`proofdiff.oracles.lone_parallel`).
* ``timings``: every answer's figures add up, against each other, the client's wall and the
  daemon's log (:mod:`proofdiff.oracles.reported_timings`).
* ``control-plane``: status polls answered promptly while the daemon proves
  (:mod:`proofdiff.oracles.control_plane`).
* ``growth``: the idle daemon's memory, descriptors and threads do not grow with the jobs it
  served (:mod:`proofdiff.oracles.daemon_growth`).
* ``resources`` (profiles with ``mem_limit`` or ``cpus``): the peak memory and CPU under the
  limits; an OOM kill fails with the limit and the peak, a peak above 90 % of the memory limit
  is a warning; skipped, with the reason, when nothing was sampled (no sample, or samples
  without a figure).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from typing import Any

from proofdiff.drivers.protocol import Mode
from proofdiff.model.jobs import FlowRecord, JobRecord, JobSpec
from proofdiff.model.oracle_records import OracleRecord
from proofdiff.model.profile import Profile
from proofdiff.model.status import Outcome

from proofdiff.oracles.evidence import Evidence, Recorder
from proofdiff.oracles import (control_plane, daemon_growth, in_flight, lone_parallel,
                               lone_request, reported_timings)
from proofdiff.oracles.suite_table import SUITES, applies

__all__ = ["ORACLES", "PRIORITY_BOUND", "evaluate", "requested"]

#: The oracles of this suite, stated once in the suite table.
ORACLES = SUITES["behaviour"].oracles
#: A high-priority job's latency under queued lower-priority work, over its solo latency, that
#: a correct non-preemptive scheduler stays within: it waits at most for the items already being
#: proved, sharing the CPU with them. The bound is half again the largest ratio a clean
#: image reaches on a shared 2-core machine beside another Docker-heavy job (record
#: oracle-bounds, docs/measurements.md); a FIFO scheduler can stay under it, and its start
#: order is what fails it.
PRIORITY_BOUND = 6.0
#: Clock slack when comparing start times (daemon-reported queue waits are whole ms), seconds.
SLACK_S = 0.05
#: Lines of the daemon's log read for its start line (a run logs a few lines per job).
LOG_LINES = 100_000
MODE_KEYS = ("config.pipeline.enabled", "config.synthesis.partition_workers",
             "config.pipeline.max_parallel_synthesis", "concurrency", "env")


def _limit(profile: Profile) -> int:
    return int(profile.effective_config().get("pipeline", {}).get("max_parallel_synthesis") or 0)


def requested(profile: Profile, partitions: int) -> dict[str, Any]:
    """What the profile asks of the daemon: mode, workers, in-flight limit (0 = none),
    concurrency, and the most work items that gives at once (``expected``)."""
    cfg = profile.effective_config()
    pipeline = bool(cfg.get("pipeline", {}).get("enabled"))
    workers = int(cfg.get("synthesis", {}).get("partition_workers") or 1)
    limit = _limit(profile)
    expected = min(workers, limit or workers,
                   profile.concurrency * (partitions if pipeline else 1))
    return {"pipeline": pipeline, "workers": workers, "limit": limit,
            "concurrency": profile.concurrency, "expected": expected}


def _peak(flows: Sequence[FlowRecord]) -> tuple[int, str, int, int]:
    """(most items in progress, where, samples, most cuzk_running_jobs) over ``flows``."""
    best: tuple[int, str] = (0, "")
    running, n = 0, 0
    for f in flows:
        for s in f.samples:
            n += 1
            running = max(running, s.running_jobs or 0)
            if s.in_progress > best[0]:
                best = (s.in_progress, f"{f.name}{' ' + f.label if f.label else ''} at "
                                       f"{s.t_ms / 1000:.1f} s")
    return best[0], best[1], n, running


def _start_s(j: JobRecord) -> float:
    return j.started_unix_s + j.timings.queue_wait_ms / 1000.0


def _priority(ev: Evidence, rec: Recorder, name: str, workload: str,
              solo: Sequence[JobRecord]) -> None:
    p, driver = ev.profiles[name], ev.driver(name)
    if not driver.chooses_ids or Mode.SUBMIT_AWAIT not in driver.modes:
        rec("priority", name, Outcome.SKIPPED, f"the {driver.name} driver sends no priority "
            "(cuzk-bench sends UNSPECIFIED) and cannot queue jobs first; run the profile with "
            "driver 'grpc' to check priority")
        return
    jobs = ev.workload(workload).jobs
    wl_flow = ev.run(name, workload).workload_flow
    cap = max(1, _peak([wl_flow] if wl_flow else [])[0])
    req = requested(p, ev.workload(workload).partitions)
    per_job = ev.workload(workload).partitions if req["pipeline"] else 1
    # NORMAL work up to the profile's concurrency, and at least one job beyond what the
    # daemon proves at once, so some is still queued when the HIGH job arrives
    n_low = max(p.concurrency, math.ceil(cap / per_job) + 1)
    specs = [JobSpec(index=i, job=jobs[i % len(jobs)].name, priority="NORMAL")
             for i in range(n_low)]
    specs.append(JobSpec(index=n_low, job=jobs[n_low % len(jobs)].name, priority="HIGH"))
    flow = ev.send(name, workload, specs, name="priority", mode=Mode.SUBMIT_AWAIT,
                   concurrency=len(specs))
    high = next(j for j in flow.jobs if j.index == n_low)
    lows = [j for j in flow.jobs if j.index < n_low]
    head = (f"priority on profile {name!r} ({workload}): {n_low} NORMAL job(s) queued behind "
            f"{cap} work item(s) in progress, then one HIGH job")
    base: dict[str, Any] = {"n_low": n_low, "capacity": cap, "high": high.request_id}
    solos = [j.wall_ms for j in solo if j.completed]
    if not high.completed or not solos:
        why = (f"the HIGH job came back {high.status.value}: {high.error or '(no text)'}"
               if not high.completed else "no lone request came back with a proof, so there is "
               "no solo latency to bound it by")
        rec("priority", name, Outcome.ERROR, f"{head}: nothing to judge: {why}", evidence=base)
        return
    solo_ms = float(statistics.median(solos))
    arrived, started = high.started_unix_s, _start_s(high)
    queued = [j for j in lows if j.completed and _start_s(j) > arrived + SLACK_S]
    jumped = [j for j in queued if _start_s(j) < started - SLACK_S]
    ratio = high.wall_ms / max(1.0, solo_ms)
    ev_ = {**base, "solo_ms": round(solo_ms, 1), "solo_requests": len(solos),
           "high_ms": high.wall_ms, "ratio": round(ratio, 3), "bound": PRIORITY_BOUND,
           "queued_at_arrival": len(queued), "started_before_high": [j.request_id for j in jumped]}
    figs = (f"the HIGH job started {started - arrived:.2f} s after it arrived and took "
            f"{high.wall_ms:.0f} ms, {ratio:.2f}x the solo {solo_ms:.0f} ms (median lone request) "
            f"(bound {PRIORITY_BOUND}x)")
    if not queued:
        rec("priority", name, Outcome.ERROR, f"{head}: nothing to judge: no NORMAL job was still "
            f"queued when the HIGH one arrived (the daemon took all {n_low} at once); {figs}",
            evidence=ev_)
    elif jumped:
        rec("priority", name, Outcome.FAIL, f"{head}: {len(jumped)} of the {len(queued)} NORMAL "
            f"job(s) still queued when the HIGH job arrived started before it ("
            + ", ".join(f"{j.request_id} at +{_start_s(j) - arrived:.2f} s" for j in jumped[:4])
            + f"); {figs}; the daemon schedules FIFO, not by priority: a WinningPoSt would miss "
            "its deadline", evidence=ev_, names=MODE_KEYS[:1])
    elif ratio > PRIORITY_BOUND:
        rec("priority", name, Outcome.FAIL, f"{head}: {figs}: beyond the bound; it waited for "
            "more than the work already in progress", evidence=ev_, names=MODE_KEYS[:1])
    else:
        rec("priority", name, Outcome.PASS, f"{head}: it started before all {len(queued)} "
            f"NORMAL job(s) still queued; {figs}", evidence=ev_)


def _pointed_at(profile: Profile, word: str, key: str) -> list[str]:
    """The items a reported setting that differs from ``key``'s value points at: the
    profile's env vars whose name mentions ``word`` (an env value read another way overrides
    the config), then the key itself (ignored or renamed)."""
    env = [f"env.{k}" for k in profile.env if word in k.lower()]
    return [*env, key]


def _mode(ev: Evidence, rec: Recorder, name: str, workload: str) -> None:
    req = requested(ev.profiles[name], ev.workload(workload).partitions)
    wl_flow = ev.run(name, workload).workload_flow
    seen, where, n, running = _peak([wl_flow] if wl_flow else [])
    facts = ev.facts(name)
    status = facts.status if facts and facts.status else {}
    rep_pipeline, rep_workers = status.get("pipeline_enabled"), status.get("partition_workers")
    ev_ = {"requested": req, "observed_max_in_progress": seen, "samples": n,
           "max_running_jobs": running, "reported_pipeline": rep_pipeline,
           "reported_workers": rep_workers, "srs_loaded": list(facts.srs_loaded) if facts else []}
    asked = (f"asked for pipeline.enabled={req['pipeline']}, {req['workers']} partition worker(s)"
             + (f", at most {req['limit']} in flight" if req["limit"] else "")
             + f", concurrency {req['concurrency']}: up to {req['expected']} work item(s) at once")
    head = f"mode of profile {name!r} on {workload}: {asked}"
    if n == 0:
        rec("mode", name, Outcome.ERROR, f"{head}; nothing to judge: no GetStatus sample during "
            "the workload run", evidence=ev_)
        return
    if seen == 0 and running == 0 and rep_pipeline is None and rep_workers is None:
        rec("mode", name, Outcome.ERROR, f"{head}; nothing to judge: in {n} samples the daemon "
            "reported no work in progress (GetStatus queues, cuzk_running_jobs) and its /status "
            "gives no mode or worker count", evidence=ev_)
        return
    problems, pointed = [], []
    if rep_pipeline is not None and bool(rep_pipeline) != req["pipeline"]:
        problems.append(f"the daemon reports pipeline_enabled={rep_pipeline}")
        pointed += _pointed_at(ev.profiles[name], "pipeline", "config.pipeline.enabled")
    if rep_workers is not None and int(rep_workers) != req["workers"]:
        problems.append(f"the daemon reports {rep_workers} partition worker(s)")
        pointed += _pointed_at(ev.profiles[name], "worker", "config.synthesis.partition_workers")
    if req["expected"] >= 2 and seen <= 1:
        problems.append(f"it was seen proving one work item at a time ({n} samples)")
    elif seen > req["expected"]:
        problems.append(f"it was seen proving {seen} work items at once ({where})")
    seen_line = f"observed: at most {seen} work item(s) in progress ({n} samples)"
    if problems:
        rec("mode", name, Outcome.FAIL, f"{head}; but {'; '.join(problems)}\n  requested: "
            f"{req}\n  {seen_line}, daemon reports pipeline_enabled={rep_pipeline}, "
            f"partition_workers={rep_workers}; a key or env value the daemon reads differently "
            "changed the proving path", evidence=ev_,
            names=tuple(dict.fromkeys([*pointed, *MODE_KEYS])))
    else:
        rec("mode", name, Outcome.PASS, f"{head}; {seen_line}, as asked", evidence=ev_)


def _mib(n: int | float | None) -> str:
    return f"{(n or 0) / 2 ** 20:.0f} MiB"


def _resources(ev: Evidence, rec: Recorder, name: str, workload: str) -> None:
    facts = ev.facts(name) or ev.run(name, workload).daemon
    use = facts.resources if facts else None
    p = ev.profiles[name]
    head = f"resources of profile {name!r} (mem_limit={p.mem_limit}, cpus={p.cpus})"
    if facts is not None and facts.state.get("OOMKilled") and (use is None or use.samples == 0):
        rec("resources", name, Outcome.FAIL, f"{head}: OOM-killed before any memory sample: the "
            "daemon sizes its work beyond the container's limit (does it read the host's memory "
            "instead of the cgroup's?)", names=("mem_limit", "config.memory"))
        return
    if facts is None or use is None or use.samples == 0 or not (use.peak_mem_bytes
                                                                or use.peak_cpu_cores):
        got = ("the daemon never started" if facts is None else
               "no memory or CPU sample of the daemon was taken" if use is None
               or use.samples == 0 else
               f"{use.samples} sample(s), each with no memory or CPU figure")
        rec("resources", name, Outcome.SKIPPED, f"{head}: nothing was sampled to judge: {got}; "
            "the runtime's stats (docker stats, the process's cgroup or /proc) gave nothing")
        return
    ev_: dict[str, Any] = {"peak_mem_bytes": use.peak_mem_bytes, "mem_limit_bytes":
                           use.mem_limit_bytes, "peak_cpu_cores": use.peak_cpu_cores,
                           "cpus": use.cpus, "samples": use.samples}
    figs = (f"peak memory {_mib(use.peak_mem_bytes)} of {_mib(use.mem_limit_bytes)}, peak CPU "
            f"{use.peak_cpu_cores:.2f} of {use.cpus or 'unlimited'} core(s), {use.samples} samples")
    if facts.state.get("OOMKilled"):
        rec("resources", name, Outcome.FAIL, f"{head}: OOM-killed; {figs} before the kill: the "
            "daemon sizes its work beyond the container's limit (does it read the host's memory "
            "instead of the cgroup's?)", evidence=ev_, names=("mem_limit", "config.memory"))
        return
    if use.mem_limit_bytes and use.peak_mem_bytes > 0.9 * use.mem_limit_bytes:
        ev_["warning"] = f"peak memory {_mib(use.peak_mem_bytes)} is above 90 % of the limit"
        rec("resources", name, Outcome.PASS, f"{head}: WARNING: {ev_['warning']}; {figs}",
            evidence=ev_)
        return
    rec("resources", name, Outcome.PASS, f"{head}: {figs}", evidence=ev_)


def evaluate(ev: Evidence, workload: str) -> list[OracleRecord]:
    """The behaviour records of every profile on ``workload`` (``resources`` only where the
    profile sets ``mem_limit`` or ``cpus``); a blocked profile is skipped with the reason."""
    rec = Recorder(ev, "behaviour", workload)
    for name, p in ev.profiles.items():
        limited = p.mem_limit is not None or p.cpus is not None
        why = ev.blocked(name, workload)
        if why is not None:
            if limited:  # a daemon that died under its limit is what this oracle explains
                _resources(ev, rec, name, workload)
            rec.skip_all([o for o in ORACLES if o != "resources" and applies(
                "behaviour", o, profile=p, baseline=False)], name, why)
            continue
        lones = lone_request.check(ev, rec, name, workload, "lone-request")  # on the idle daemon
        if applies("behaviour", "parallel", profile=p, baseline=False):
            lone_parallel.check(ev, rec, name, workload)  # the same lone requests
        _priority(ev, rec, name, workload, lones)
        _mode(ev, rec, name, workload)
        in_flight.check(ev, rec, name, workload)
        reported_timings.check(ev, rec, name, workload)
        control_plane.check(ev, rec, name, workload)
        daemon_growth.check(ev, rec, name, workload)  # last: after every flow of the run
        if limited:
            _resources(ev, rec, name, workload)
    return rec.records
