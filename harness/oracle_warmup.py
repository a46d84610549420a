"""The warmup oracle: the first proof after start completes, verifies and took plausibly long.

The first job of a profile's workload run (submission index 0) is its warmup: the session runs
the workload before any other proving on a fresh daemon, so that job pays the SRS (params) load.
It is judged apart from steady state:

* it must be COMPLETED (a FAILED warmup is an error carrying the daemon's error text and the
  daemon's warning/error log lines, never a pass);
* its proof must verify (per partition, independently);
* its time must be plausible: not faster than its own reported SRS load, and not faster than
  a floor = max(``floor_ms``, ``floor_rel`` x the steady-state median). A warmup that is
  faster than half a steady-state proof did not do the work a proof needs (a cached or canned
  answer), whatever it says.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .records import JobResult, JobStatus, RunResult
from .timing import Summary, summarize

__all__ = ["DEFAULT_FLOOR_MS", "DEFAULT_FLOOR_REL", "WarmupOutcome", "steady_jobs", "warmup"]

#: No real Groth16 proof, SRS load included, takes less than this (ms).
DEFAULT_FLOOR_MS = 250.0
#: A warmup faster than this fraction of the steady-state median is implausible.
DEFAULT_FLOOR_REL = 0.5
LOG_LINES = 12


@dataclass(frozen=True)
class WarmupOutcome:
    """The warmup verdict of one run: ``problems`` (empty = ok), the warmup job's figures
    (``warmup``: name, request id, status, wall/total/srs/prove ms, verified) and the
    steady-state summary it was judged against (ms, ``n = 0`` when none)."""

    profile: str
    workload: str
    problems: tuple[str, ...]
    warmup: dict[str, Any]
    steady: Summary
    floor_ms: float

    @property
    def ok(self) -> bool:
        """No problem found."""
        return not self.problems

    def explain(self) -> str:
        """Headline, figures and one line per problem."""
        w = self.warmup
        head = (f"warmup of profile {self.profile!r} on {self.workload}: "
                + ("ok" if self.ok else "ERROR"))
        fig = (f"  first proof {w.get('name')} (id={w.get('request_id')}): {w.get('status')}, "
               f"wall {w.get('wall_ms', 0):.0f} ms, SRS load {w.get('srs_load_ms', 0)} ms, "
               f"verified={w.get('verified')}; steady state "
               + (self.steady.render() if self.steady.n else "not measured")
               + f"; plausibility floor {self.floor_ms:.0f} ms")
        return "\n".join([head, fig] + [f"  {p}" for p in self.problems])

    def to_json(self) -> dict[str, Any]:
        """JSON-ready dict."""
        return {"profile": self.profile, "workload": self.workload, "ok": self.ok,
                "problems": list(self.problems), "warmup": self.warmup,
                "steady": self.steady.to_json(), "floor_ms": self.floor_ms}


def steady_jobs(run: RunResult, concurrency: int) -> list[JobResult]:
    """COMPLETED jobs after the first wave (index >= ``concurrency``): steady state."""
    return [j for j in run.jobs if j.index >= max(1, concurrency)
            and j.status is JobStatus.COMPLETED]


def _log_evidence(log_tail: str) -> str:
    lines = [x for x in log_tail.splitlines() if " WARN " in x or " ERROR " in x
             or "error" in x.lower()]
    return "\n".join(lines[-LOG_LINES:])


def warmup(run: RunResult, steady_ms: Sequence[float] = (), *,
           floor_ms: float = DEFAULT_FLOOR_MS, floor_rel: float = DEFAULT_FLOOR_REL) -> WarmupOutcome:
    """Judge the first job of ``run`` (module docstring).

    Args:
        run: the workload run (its first job is the warmup; verdicts attached).
        steady_ms: steady-state durations (ms) to derive the relative floor from (may be empty).
        floor_ms: absolute floor, ms (default 250). floor_rel: fraction of the steady median
            (default 0.5).
    """
    steady = summarize(list(steady_ms))
    floor = max(floor_ms, floor_rel * steady.median_ms if steady.n else 0.0)
    first = next((j for j in run.jobs if j.index == 0), None)
    if first is None:
        why = "; ".join(run.errors) or "the run has no jobs"
        return WarmupOutcome(run.profile, run.workload, (f"no warmup proof: {why}",),
                             {}, steady, floor)
    v = run.verdicts.get(first.key)
    fig = {"name": first.name, "request_id": first.request_id, "status": first.status.value,
           "wall_ms": round(first.wall_ms, 3), "total_ms": first.total_ms,
           "srs_load_ms": first.srs_load_ms, "gpu_compute_ms": first.gpu_compute_ms,
           "queue_wait_ms": first.queue_wait_ms,
           "verified": None if v is None else v.valid}
    problems = []
    if first.status is not JobStatus.COMPLETED:
        ev = _log_evidence(run.log_tail)
        problems.append(f"the warmup proof came back {first.status.value}: "
                        f"{first.error or '(no error text)'}"
                        + ("\n  daemon log:\n    " + ev.replace("\n", "\n    ") if ev else ""))
    elif v is None:
        problems.append("the warmup proof was not verified (no verdict): "
                        + ("; ".join(run.errors) or "the verifier gave none"))
    elif not v.valid:
        problems.append(f"the warmup proof does not verify: bad partitions "
                        f"{v.bad_partitions()} ({v.error or 'no verifier text'})")
    if first.status is JobStatus.COMPLETED:
        if first.srs_load_ms and first.wall_ms < first.srs_load_ms:
            problems.append(f"implausible: the warmup took {first.wall_ms:.0f} ms on the client "
                            f"but reports an SRS load of {first.srs_load_ms} ms")
        if first.wall_ms < floor:
            problems.append(f"implausibly fast warmup: {first.wall_ms:.0f} ms < floor "
                            f"{floor:.0f} ms (max of {floor_ms:.0f} ms and {floor_rel} x steady "
                            f"median); a first proof loads its SRS and proves, so a cached or "
                            f"canned answer is suspected")
    return WarmupOutcome(run.profile, run.workload, tuple(problems), fig, steady, floor)
