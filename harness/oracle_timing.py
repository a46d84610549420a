"""Timing arms over interleaved samples (DESIGN.md section 5) and what each verdict means.

Sides (see :func:`sides_for`): the baseline profile twice (``<base>:A1``, ``<base>:A2``: one
proof per batch, at its own concurrency) around each other profile (a batch of ``concurrency``
proofs at its concurrency), every round in that order, so both see the same machine.

Arms, each a :class:`~harness.timing.TimingVerdict`:

* ``aa``: baseline A1 vs A2 per-proof cost. DIFFERENT here is a false alarm of the method
  (the arm fails); SAME or INCONCLUSIVE pass.
* ``throughput``: per-proof cost (batch wall / proofs = 1 / throughput) of the other profile
  at its concurrency vs the baseline's. DIFFERENT with the other profile costlier per proof
  fails: its throughput collapsed under concurrency. The ratio is also reported against
  ``bench x workers`` (``scaling_efficiency``): on a CPU-bound host where one job already
  fills every core (2 cores here) the ideal is 1 x, on a multi-GPU host it is the worker count.
* ``concurrency``: how many jobs the daemon was really proving at once per job (from its
  reported ``queue_wait_ms``/``total_ms``, :func:`~harness.timing_sampler.in_progress`), the
  other profile vs the baseline. A profile offered concurrency > 1 must run jobs side by side:
  the arm expects DIFFERENT (ratio >= 1 + floor); SAME means the daemon proves one job at a
  time whatever it is offered (a serialized pipeline: throughput cannot scale with hardware),
  and fails. On this 2-core host that is the only observable of such a lock: both profiles
  saturate the CPU, so throughput alone cannot show it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .profiles import Profile
from .records import JobStatus, RunResult
from .timing import DIFFERENT, INCONCLUSIVE, SAME, TimingVerdict, compare
from .timing_sampler import Sampling, Side, in_progress

__all__ = ["ArmJudgement", "arms", "judge", "run_concurrency", "sides_for"]

#: Rounds first, and the most rounds (budget) the adaptive sampling may take.
INITIAL_ROUNDS, MAX_ROUNDS = 4, 6
#: Per-proof cost floor: throughput within +/-25 % is "the same".
COST_FLOOR = 0.25
#: Concurrency floor: at least 1.25 jobs in progress on average counts as "side by side".
CONCURRENCY_FLOOR = 0.25


def sides_for(base: str, others: Sequence[str], profiles: Mapping[str, Profile],
              addresses: Mapping[str, str]) -> list[Side]:
    """Batch plan of one round: base A1, each other profile, base A2."""
    b = profiles[base]
    sides = [Side(f"{base}:A1", addresses[base], 1, 1, min(b.timeout_s, 600.0))]
    for o in others:
        p = profiles[o]
        sides.append(Side(o, addresses[o], p.concurrency, p.concurrency,
                          min(p.timeout_s, 600.0)))
    sides.append(Side(f"{base}:A2", addresses[base], 1, 1, min(b.timeout_s, 600.0)))
    return sides


def run_concurrency(run: RunResult | None) -> list[float]:
    """In-progress concurrency samples of a workload run's COMPLETED jobs."""
    if run is None:
        return []
    return in_progress([(j.started_unix_s, j.queue_wait_ms, j.total_ms) for j in run.jobs
                        if j.status is JobStatus.COMPLETED])


def arms(s: Sampling, base: str, others: Sequence[str], *,
         runs: Mapping[str, RunResult] | None = None, looks: int = 1) -> dict[str, TimingVerdict]:
    """Every arm's verdict on the samples so far: ``aa``, and per other profile
    ``throughput:<name>``, ``concurrency:<name>``."""
    runs = runs or {}
    a1, a2 = f"{base}:A1", f"{base}:A2"
    out = {"aa": compare(s.costs(a1), s.costs(a2), arm=f"A/A {base}", left=a1, right=a2,
                         metric="per-proof cost", floor_rel=COST_FLOOR, looks=looks)}
    base_cost = s.costs(a1) + s.costs(a2)
    base_conc = run_concurrency(runs.get(base)) + s.concurrency(a1) + s.concurrency(a2)
    for o in others:
        out[f"throughput:{o}"] = compare(
            base_cost, s.costs(o), arm=f"throughput {base} vs {o}", left=base, right=o,
            metric="per-proof cost (batch wall / proofs)", floor_rel=COST_FLOOR, looks=looks)
        out[f"concurrency:{o}"] = compare(
            base_conc, run_concurrency(runs.get(o)) + s.concurrency(o),
            arm=f"jobs in progress at once {base} vs {o}", left=base, right=o,
            metric="jobs in progress during each job", floor_rel=CONCURRENCY_FLOOR,
            looks=looks, unit="jobs")
    return out


@dataclass(frozen=True)
class ArmJudgement:
    """What a verdict means for the suite: ``outcome`` pass | fail | inconclusive, and the
    message (the verdict's evidence plus why it matters and what to do)."""

    outcome: str
    message: str
    data: dict[str, Any]


def judge(name: str, v: TimingVerdict, profile: Profile | None = None) -> ArmJudgement:
    """Turn one arm's verdict into pass/fail/inconclusive (see the module docstring)."""
    data = v.to_json()
    text = v.render()
    if v.verdict == INCONCLUSIVE:
        return ArmJudgement("inconclusive", f"{text}\nINCONCLUSIVE after {v.a.n}+{v.b.n} "
                            "samples: the machine is too noisy for the floor; rerun on a quieter "
                            "host or raise the sample budget", data)
    if name == "aa":
        if v.verdict == DIFFERENT:
            return ArmJudgement("fail", f"{text}\nA/A FALSE ALARM: the same profile on the same "
                                "daemon differs; timing verdicts of this run are not trustworthy "
                                "(noisy neighbours? CPU frequency scaling?)", data)
        return ArmJudgement("pass", text, data)
    other = name.split(":", 1)[1]
    if name.startswith("throughput:"):
        workers = max(1, profile.concurrency) if profile else 1
        data["scaling"] = round(1.0 / v.ratio, 3) if v.ratio == v.ratio else None
        data["scaling_efficiency_vs_bench_x_workers"] = (
            round(1.0 / v.ratio / workers, 3) if v.ratio == v.ratio else None)
        if v.verdict == DIFFERENT and v.ratio > 1.0:
            return ArmJudgement("fail", f"{text}\nthroughput of {other} at concurrency "
                                f"{workers} collapsed: each proof costs {v.ratio:.2f}x the "
                                f"baseline's ({1 / v.ratio:.2f}x the throughput, ideal "
                                f"{workers}x = bench x workers); look for a global lock or "
                                "queue in the daemon", data)
        return ArmJudgement("pass", text + f"\nscaling {1 / v.ratio:.2f}x of bench "
                            f"(bench x workers would be {workers}x)", data)
    conc = profile.concurrency if profile else 1
    if conc <= 1:
        return ArmJudgement("pass", text + f"\n{other} has concurrency 1: nothing to overlap",
                            data)
    if v.verdict == SAME or (v.verdict == DIFFERENT and v.ratio < 1.0):
        return ArmJudgement("fail", f"{text}\n{other} was offered {conc} jobs at once but the "
                            f"daemon proved about {v.b.median_ms:.2f} at a time (median): it "
                            "serializes jobs, so its throughput cannot grow with hardware; look "
                            "for a per-job lock in the pipeline", data)
    return ArmJudgement("pass", text, data)
