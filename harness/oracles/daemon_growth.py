"""Memory and handles across repeated work: what the idle daemon holds must not grow with the
jobs it has served.

Property (every correct cuzk-compatible daemon): once a job is answered, the daemon keeps
nothing of it but what the interface needs (a result not yet claimed by ``AwaitProof``, its
id): its partitions' witnesses, inputs and buffers are freed, its threads and descriptors
returned. So the memory, file descriptors and threads of the daemon at rest stay level however
many jobs it has proved; a daemon whose memory climbs job after job is OOM-killed after days in
production (cuzk frees its per-partition memory on every path and calls ``malloc_trim`` after
each partition's GPU proof so that it is given back: curio ``extern/cuzk/cuzk-core/src/engine.rs``;
its memory design, ``extern/cuzk/cuzk-memory-manager.md``, budgets every allocation against the
daemon's total).

Observed, not claimed: the process's resident memory, open descriptors and threads as the
operating system counts them (:mod:`proofdiff.runtime.process_probe`), read before each flow and
every 0.25 s during it. Each flow after the warm-up (the workload flow: its first job loads the
SRS, and it is the first time every worker proves) gives its **floor**: the least the process
held during the flow (its reading before the first request, or a moment between jobs), against
the jobs the daemon had served when the flow began. Memory that a job leaves behind is in every
later reading, so it raises every later floor; memory an allocator keeps for reuse comes and
goes with the work, and is bounded by what the process had in use.

The bound is derived from the same daemon's work. An allocator keeps freed memory for reuse, but
never more than the process had in use: the warm-up ran at the profile's own concurrency, so the
most the process held during it (its high-water mark) bounds what a correct daemon's floor can
rise to afterwards. The bound is that high-water mark above the lowest floor after the warm-up.
Where a later flow has more work items in progress at once than the warm-up could (the items its
jobs offer together, capped by the workers and the in-flight limit), the bound grows in that
proportion. It fails when the floors grew over the window by more than the bound: Theil-Sen's
slope over the floors (robust to one flow's allocator ups and downs) times the jobs served in
the window, and the last floor ends above the lowest by more than the bound too (the slope over
a few floors can overshoot a rise that stopped at the high-water mark: memory an allocator keeps
never takes the floor past what the process had in use), both by at least
:data:`MIN_GROWTH_BYTES`, the floor's own noise. What the warm-up's own jobs left behind
is in its high-water mark and in every floor alike, so it cancels; what the window's jobs leave
raises the floors only: a leak shows once the window's jobs left more than the warm-up worked
with.

Descriptors and threads (their floors too): a handle kept per job, per partition or per request
adds at least one per job served; pools and connections come and go. They fail when the floor
grew by more than half the jobs served in the window, and by at least :data:`HANDLES_FLOOR`.

Too little repeated work to judge (fewer than :data:`MIN_POINTS` flows after the warm-up, or
fewer than :data:`MIN_JOBS` jobs between the first and the last: a run of one suite) is
SKIPPED, with the reason; a default run has enough.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from proofdiff.model.jobs import FlowRecord
from proofdiff.model.status import Outcome

from proofdiff.oracles.evidence import Evidence, Recorder
from proofdiff.oracles.in_flight import items_at_once
from proofdiff.oracles.lone_parallel import promised

__all__ = ["HANDLES_FLOOR", "Floor", "MIN_GROWTH_BYTES", "MIN_JOBS", "MIN_POINTS",
           "allocator_bound", "check", "floors", "judge_growth"]

#: Flows after the warm-up the window needs at least.
MIN_POINTS = 3
#: Jobs served between the window's first flow and its last, at least: fewer cannot tell a
#: leak from an allocator's reuse.
MIN_JOBS = 6
#: Memory growth over the window below which nothing fails, whatever the bound: an idle daemon's
#: floor moves by a few MiB with no job kept (its gRPC server's per-stream buffers, allocator
#: arenas of threads that served a burst), and a warm-up whose high-water mark the readings
#: caught barely above the floor would otherwise set a bound under that noise. A leak that
#: kills a daemon in production keeps far more per job.
MIN_GROWTH_BYTES = 8 * 2 ** 20
#: Handles the floor must grow by, at least, to fail (one descriptor or thread that comes and
#: goes with a connection or a pooled thread is no leak).
HANDLES_FLOOR = 2
#: Config keys of the memory a daemon keeps, for the suspects of a failure.
GROWTH_KEYS = ("config.pipeline.enabled", "config.memory", "config.synthesis.partition_workers",
               "job_ids")


@dataclass(frozen=True)
class Floor:
    """One flow's floor: ``where`` (the flow), ``served`` (jobs the daemon had answered when it
    began), the least ``rss_bytes``, ``fds`` (``None``: not readable) and ``threads`` read
    during it."""

    where: str
    served: int
    rss_bytes: int
    fds: int | None
    threads: int


def _name(f: FlowRecord) -> str:
    return f"{f.name}{' ' + f.label if f.label else ''}"


def _served(flow: FlowRecord) -> int:
    return sum(1 for j in flow.jobs if not j.await_only and j.wall_ms > 0)


def floors(flows: Sequence[FlowRecord]) -> list[Floor]:
    """The floor of every flow after the warm-up (the first) that was read (module docstring)."""
    out, served = [], 0
    for n, f in enumerate(flows):
        if n > 0 and f.usage:
            fds = [u.fds for u in f.usage]
            out.append(Floor(_name(f), served, min(u.rss_bytes for u in f.usage),
                             None if any(x is None for x in fds) else min(x for x in fds
                                                                           if x is not None),
                             min(u.threads for u in f.usage)))
        served += _served(f)
    return out


def allocator_bound(flows: Sequence[FlowRecord], points: Sequence[Floor],
                    items: Callable[[FlowRecord], int] = lambda _f: 1) -> tuple[int, float]:
    """``(bytes, scale)``: what an allocator may keep above the lowest floor after the warm-up:
    the warm-up's (the first flow's) high-water mark less that floor, times ``scale``, the most
    work items a later flow had in progress at once over the warm-up's (``items(flow)``; at
    least 1). 0 bytes when the warm-up was not read or nothing after it was (module
    docstring)."""
    if not flows or not flows[0].usage or not points:
        return 0, 1.0
    scale = max(1.0, max((items(f) for f in flows[1:]), default=1) / max(1, items(flows[0])))
    held = max(u.rss_bytes for u in flows[0].usage) - min(p.rss_bytes for p in points)
    return int(max(0, held) * scale), scale


def _slope(xs: Sequence[int], ys: Sequence[float]) -> float:
    """Theil-Sen's slope of ``ys`` over ``xs`` (0 when every x is the same)."""
    from scipy.stats import theilslopes  # type: ignore[import-untyped]

    return float(theilslopes(ys, xs).slope) if len(set(xs)) > 1 else 0.0


def _mib(n: float) -> str:
    return f"{n / 2 ** 20:.1f} MiB"


def judge_growth(points: Sequence[Floor], bound_bytes: int,
                 where: str) -> tuple[Outcome, str, dict[str, Any]]:
    """Judge the floors ``points`` (module docstring) against what an allocator may keep,
    ``bound_bytes`` (:func:`allocator_bound`). Returns ``(outcome, message, evidence)``: SKIPPED
    when the window has fewer than :data:`MIN_POINTS` floors or :data:`MIN_JOBS` jobs, ERROR
    when the warm-up's high-water mark is unknown."""
    jobs = points[-1].served - points[0].served if points else 0
    ev: dict[str, Any] = {"floors": [{"where": p.where, "served": p.served, "rss_mib":
                                      round(p.rss_bytes / 2 ** 20, 2), "fds": p.fds,
                                      "threads": p.threads} for p in points],
                          "window_jobs": jobs, "bound_mib": round(bound_bytes / 2 ** 20, 2)}
    head = f"memory and handles of the daemon at rest, profile {where}"
    if len(points) < MIN_POINTS or jobs < MIN_JOBS:
        return Outcome.SKIPPED, (f"{head}: too little repeated work to judge: {len(points)} "
                                 f"flow(s) after the warm-up over {jobs} job(s) (at least "
                                 f"{MIN_POINTS} over {MIN_JOBS} needed; the default suites send "
                                 "enough)"), ev
    xs = [p.served for p in points]
    slope = _slope(xs, [float(p.rss_bytes) for p in points])
    growth = slope * jobs
    # the trend must also be in the readings: the last floor above the lowest by more than the
    # bound (a slope over few floors can overshoot a rise that stopped at the high-water mark)
    reached = points[-1].rss_bytes - min(p.rss_bytes for p in points)
    ev.update(rss_slope_kib_per_job=round(slope / 1024, 1),
              rss_growth_mib=round(growth / 2 ** 20, 2),
              rss_reached_mib=round(reached / 2 ** 20, 2))
    problems = []
    limit = max(bound_bytes, MIN_GROWTH_BYTES)
    if bound_bytes > 0 and growth > limit and reached > limit:
        problems.append(
            f"its floor grew {_mib(slope)} per job, {_mib(growth)} over the {jobs} jobs, and "
            f"ended {_mib(reached)} above its lowest: more than the {_mib(bound_bytes)} the "
            "warm-up held at its busiest above it, which is all an allocator keeps for reuse, "
            f"and more than the floor's own noise ({_mib(MIN_GROWTH_BYTES)}): the daemon keeps "
            "something of every job")
    for name in ("fds", "threads"):
        counts = [getattr(p, name) for p in points]
        if any(c is None for c in counts):
            ev[f"{name}_note"] = "not readable (another user's process)"
            continue
        h_growth = _slope(xs, [float(c) for c in counts]) * jobs
        ev[f"{name}_growth"] = round(h_growth, 2)
        if h_growth > max(HANDLES_FLOOR, jobs / 2):
            problems.append(f"its open {'file descriptors' if name == 'fds' else 'threads'} "
                            f"at rest grew from {counts[0]} to {counts[-1]} over {jobs} jobs: "
                            "a handle kept per job")
    figs = (f"{len(points)} flows after the warm-up over {jobs} jobs: floor "
            f"{_mib(points[0].rss_bytes)} -> {_mib(points[-1].rss_bytes)} (growth "
            f"{_mib(growth)}, bound {_mib(bound_bytes)}: the warm-up's high-water mark above the "
            f"lowest floor), descriptors "
            f"{points[0].fds} -> {points[-1].fds}, threads {points[0].threads} -> "
            f"{points[-1].threads}")
    if bound_bytes <= 0:
        return Outcome.ERROR, (f"{head}: nothing to judge the memory by: the warm-up's readings "
                               f"give no high-water mark above the floors; {figs}"), ev
    if problems:
        return Outcome.FAIL, f"{head}: {'; '.join(problems)}\n  {figs}", ev
    return Outcome.PASS, f"{head}: level: {figs}", ev


def check(ev: Evidence, rec: Recorder, name: str, workload: str) -> None:
    """Record ``growth`` for ``name`` over every flow sent to its daemon so far (module
    docstring); SKIPPED where the process cannot be read or the work was too short."""
    flows = ev.flows(name, workload)
    if not any(f.usage for f in flows):
        rec("growth", name, Outcome.SKIPPED, f"memory and handles of profile {name!r}: its "
            "daemon's process cannot be read here (an attached daemon, or a container whose "
            "process is not on this host): nothing observed to judge")
        return
    points = floors(flows)
    cap = promised(ev.profiles[name])
    per_job = ev.workload(workload).partitions if cap > 1 else 1
    bound, scale = allocator_bound(flows, points,
                                   lambda f: min(items_at_once(f, per_job), cap))
    outcome, message, evidence = judge_growth(points, bound, f"{name!r} ({workload})")
    evidence["bound_scale"] = round(scale, 2)
    now = ev.look(name)
    if now is not None:  # quoted: the process after every flow of the run
        evidence["now"] = {"rss_mib": round(now.rss_bytes / 2 ** 20, 2), "fds": now.fds,
                           "threads": now.threads, "cpu_s": now.cpu_s}
    rec("growth", name, outcome, message, evidence=evidence,
        names=GROWTH_KEYS if outcome is Outcome.FAIL else ())
