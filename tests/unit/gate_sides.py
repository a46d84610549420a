"""Two fake sides of a gate's timing arm for the unit tier: batches whose walls are seeded
lognormal times, the candidate ``ratio`` x the baseline, with failures and invalid proofs on
demand (the shapes :func:`proofdiff.gate.timing_rounds.measure_profile` sends and reads)."""

from __future__ import annotations

import time

import numpy as np

from proofdiff.gate.gate_result import ProfileTiming
from proofdiff.gate.timing_rounds import BUDGET_PAIRS, measure_profile
from proofdiff.model.jobs import DaemonTimings, FlowRecord, JobRecord, JobSpec, ProofVerdict
from proofdiff.model.status import JobStatus

__all__ = ["FakeSides", "gate_flow", "measure"]


def gate_flow(walls: list[float], label: str, status: JobStatus = JobStatus.COMPLETED,
              valid: bool = True) -> FlowRecord:
    """One batch of the timing arm: a job per wall (ms), each with a proof the verifier
    passes (``valid``) or, when not COMPLETED, none."""
    t0 = time.time()
    verdict = ProofVerdict(valid=valid, partitions=(valid,)) if status is JobStatus.COMPLETED \
        else None
    jobs = tuple(JobRecord(index=i, job=f"wpost-{i}", request_id=f"{label}-{i}", status=status,
                           wall_ms=w, timings=DaemonTimings(queue_wait_ms=0, srs_load_ms=0,
                                                            synthesis_ms=0, gpu_compute_ms=0,
                                                            total_ms=int(w)),
                           started_unix_s=t0, proof=b"p" * 192, verdict=verdict)
                 for i, w in enumerate(walls))
    return FlowRecord(name="gate", label=label, jobs=jobs, concurrency=len(jobs),
                      wall_ms=max(walls))


class FakeSides:
    """Two fake sides whose batches take seeded lognormal times, the candidate ``ratio`` x."""

    def __init__(self, ratio: float, cv: float = 0.02, broken_after: int | None = None,
                 lone_ratio: float = 1.0, invalid_after: int | None = None) -> None:
        self.rng = np.random.default_rng(7)
        self.ratio, self.cv, self.broken_after = ratio, cv, broken_after
        self.lone_ratio = lone_ratio  # the candidate's extra time on a request sent alone
        self.invalid_after = invalid_after
        self.calls: list[str] = []

    def send(self, side: str, specs: list[JobSpec], label: str) -> FlowRecord:
        self.calls.append(label)
        scale = self.ratio if side.endswith("candidate") else 1.0
        if side.endswith("candidate") and len(specs) == 1:
            scale *= self.lone_ratio
        if self.broken_after is not None and len(self.calls) > self.broken_after:
            return gate_flow([1.0] * len(specs), label, JobStatus.FAILED)
        walls = [3500.0 * scale * float(self.rng.lognormal(0, self.cv)) for _ in specs]
        late = self.invalid_after is not None and len(self.calls) > self.invalid_after
        return gate_flow(walls, label, valid=not (late and side.endswith("candidate")))


def measure(d: FakeSides, concurrency: int = 1, deadline_s: float = 60.0,
            rounds: int = BUDGET_PAIRS) -> ProfileTiming:
    """The gate's own timing arm of bench over ``d``'s two sides, within ``deadline_s`` and
    ``rounds`` rounds."""
    return measure_profile(d.send, profile="bench", workload="wpost-2k", jobs=["a", "b"],
                           sides=("bench-baseline", "bench-candidate"), concurrency=concurrency,
                           deadline=time.monotonic() + deadline_s, floors={},
                           budget_pairs=rounds)
