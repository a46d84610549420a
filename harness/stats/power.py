"""The gate's timing decision, simulated: how often an unchanged image passes and a slower one
fails, with the procedure the gate really runs.

``python -m proofdiff.stats.power [--trials N] [--seed S] [--ratios 1 1.05] [--budget 21]``
runs, per trial, the timing arm of every profile of the default gate (``bench`` at concurrency
1, ``prod`` at 4) through the gate's own code: :func:`proofdiff.gate.timing_rounds.measure_profile`
(alternating order, every metric, the looks, the round cap, the time budget on a simulated
clock, Holm's share over the gate's family of ``metric x profile``) fed by simulated daemons,
then :func:`proofdiff.gate.gating.decide`. It prints per true ratio (candidate / baseline,
every proof alike): PASS / FAIL / INCONCLUSIVE gates, how often each profile had a
DIFFERENT-slower metric, the mean rounds per profile and the mean simulated wall of the timing
arm; with 95 % (Wilson) intervals.

Noise model of one job's wall time (ms), side ``s``, round ``k``, job ``i``:
``proof_ms * ratio_s * exp(drift_k + b_{k,s} + e_{k,s,i}) * spike_{k,s,i}`` with

* ``e ~ N(0, job_cv)``: the job's own noise; ``b ~ N(0, batch_cv)``: shared by one batch's jobs
  (what that moment of the machine did to all of them);
* ``drift``: a random walk of ``walk`` per batch plus a wave of +/-``wave`` over 20 rounds,
  nearly shared by the two batches of a round (what pairing cancels);
* ``spike = 1 + U(0.1, 0.3)`` with probability ``spikes`` (a neighbour, a cache miss), else 1;
* ``in-progress``: a daemon that proves ``slots`` jobs at once (prod: ``max_parallel_synthesis
  = 3``) starts job ``i >= slots`` when job ``i - slots`` ends (its queue wait), and the job
  proves for its own time after that; the batch's wall is its slowest job's plus
  ``overhead_ms``;
* ``lone-latency``: a request sent alone to the idle daemon after a batch (``concurrency > 1``)
  takes ``lone_ms * ratio_s * exp(drift_k + N(0, lone_cv)) * spike``.

:data:`MEASURED` holds the parameters read from the measurements on the 2-core host (README,
"Gate an image push": the 2026-12-01 power table of the timing arm on bench, the default A/A
gate's verdicts on prod, and the timing arms sampled for this model); each can be overridden
(``--bench-spikes 0.05`` ...). The budget is the gate's default (``--budget-s 900``); the
round cap is the schedule's (1 warmup + 20 tested pairs).
"""

from __future__ import annotations

import argparse
import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields, replace

import numpy as np
from scipy import stats  # type: ignore[import-untyped]

from proofdiff.gate.gate_result import ProfileTiming
from proofdiff.model.jobs import DaemonTimings, FlowRecord, JobRecord, JobSpec, ProofVerdict
from proofdiff.model.status import JobStatus

__all__ = ["MEASURED", "Noise", "SimulatedSides", "main", "simulate_gate"]


@dataclass(frozen=True)
class Noise:
    """One profile's timing noise (module docstring): ``proof_ms`` one job's wall in a batch, its
    ``concurrency``, ``job_cv``, ``batch_cv``, ``walk`` and ``wave`` (log scale), ``spikes``
    (chance per job), ``slots`` (jobs proved at once), ``overhead_ms`` per batch (client,
    verification), ``lone_ms`` and ``lone_cv`` of a request alone on the idle daemon."""

    proof_ms: float
    concurrency: int
    job_cv: float
    batch_cv: float
    walk: float
    wave: float
    spikes: float
    slots: int
    overhead_ms: float
    lone_ms: float
    lone_cv: float


#: The noise on the 2-core host, per default profile (module docstring; README "Gate an image
#: push" gives the measurements they are read from).
MEASURED: dict[str, Noise] = {
    "bench": Noise(proof_ms=2100.0, concurrency=1, job_cv=0.010, batch_cv=0.0, walk=0.003,
                   wave=0.05, spikes=0.02, slots=1, overhead_ms=150.0, lone_ms=2100.0,
                   lone_cv=0.010),
    "prod": Noise(proof_ms=3500.0, concurrency=4, job_cv=0.02, batch_cv=0.01, walk=0.003,
                  wave=0.05, spikes=0.02, slots=3, overhead_ms=1000.0, lone_ms=2100.0,
                  lone_cv=0.010),
}


class SimulatedSides:
    """Two simulated daemons of one profile (``<profile>-baseline``, ``<profile>-candidate``)
    behind the gate's :data:`~proofdiff.gate.timing_rounds.Sender`; each batch advances the
    simulated clock by its wall time."""

    def __init__(self, rng: np.random.Generator, noise: Noise, ratio: float,
                 phase: float) -> None:
        self.rng, self.noise, self.ratio = rng, noise, ratio
        self.now_s = 0.0
        self.level = 0.0
        self.batches = 0
        self.phase = phase

    def clock(self) -> float:
        """The simulated time, seconds."""
        return self.now_s

    def send(self, side: str, specs: list[JobSpec], label: str) -> FlowRecord:
        """One batch of ``specs`` on ``side`` (module docstring's model)."""
        n, r = self.noise, self.rng
        self.batches += 1
        self.level += r.normal(0.0, n.walk)
        wave = n.wave * math.sin(2 * math.pi * (self.batches / 40.0 + self.phase))
        lone = n.concurrency > 1 and len(specs) == 1
        scale = (n.lone_ms if lone else n.proof_ms) * (
            self.ratio if side.endswith("candidate") else 1.0) * math.exp(
            self.level + wave + (0.0 if lone or not n.batch_cv else r.normal(0.0, n.batch_cv)))
        jobs: list[JobRecord] = []
        for s in specs:
            prove = scale * math.exp(r.normal(0.0, n.lone_cv if lone else n.job_cv))
            if r.uniform() < n.spikes:
                prove *= 1.0 + r.uniform(0.1, 0.3)
            k = len(jobs)
            wait = jobs[k - n.slots].wall_ms if k >= n.slots else 0.0  # a slot frees up
            jobs.append(JobRecord(
                index=s.index, job=s.job, request_id=f"{label}-{s.index}",
                status=JobStatus.COMPLETED, wall_ms=wait + prove, started_unix_s=self.now_s,
                proof=b"\0" * 192, verdict=ProofVerdict(valid=True, partitions=(True,)),
                timings=DaemonTimings(queue_wait_ms=int(wait), srs_load_ms=0, synthesis_ms=0,
                                      gpu_compute_ms=0, total_ms=int(wait + prove))))
        wall_ms = max(j.wall_ms for j in jobs) + n.overhead_ms
        self.now_s += wall_ms / 1000.0
        return FlowRecord(name="gate", label=label, jobs=tuple(jobs), concurrency=len(specs),
                          wall_ms=wall_ms)


@dataclass(frozen=True)
class GateOutcome:
    """One simulated gate: its decision, which profiles had a DIFFERENT-slower metric, the
    rounds per profile and the timing arm's simulated wall (s)."""

    decision: str
    timing: tuple[ProfileTiming, ...]
    slower: frozenset[str]
    rounds: Mapping[str, int]
    wall_s: float


def simulate_gate(rng: np.random.Generator, noises: Mapping[str, Noise], ratio: float, *,
                  budget_pairs: int | None = None, budget_s: float = 900.0) -> GateOutcome:
    """One gate's timing arm on every profile of ``noises`` and its decision (module docstring).
    The candidate is ``ratio`` times the baseline on every proof."""
    from proofdiff.gate.gating import GATE_ALPHA, decide, timing_findings
    from proofdiff.gate.timing_rounds import BUDGET_PAIRS, Family, measure_profile, metrics_of

    fam = Family(alpha=GATE_ALPHA, size=sum(len(metrics_of(n.concurrency))
                                            for n in noises.values()))
    spent, timing = 0.0, []
    for name, noise in noises.items():
        sides = SimulatedSides(rng, noise, ratio, float(rng.uniform()))
        sides.now_s = spent
        t = measure_profile(sides.send, profile=name, workload="wpost-2k",
                            jobs=["wpost-0", "wpost-1", "wpost-2", "wpost-3"],
                            sides=(f"{name}-baseline", f"{name}-candidate"),
                            concurrency=noise.concurrency, deadline=budget_s, floors={},
                            family=fam, budget_pairs=budget_pairs or BUDGET_PAIRS,
                            clock=sides.clock)
        spent = sides.now_s
        timing.append(t)
    decision, _line, _why = decide(timing_findings(timing), [], timing, aa=ratio == 1.0)
    return GateOutcome(decision=decision.value, timing=tuple(timing),
                       slower=frozenset(t.profile for t in timing
                                        for m in t.metrics if m.regression),
                       rounds={t.profile: t.rounds for t in timing}, wall_s=spent)


def _pct(k: int, n: int) -> str:
    """``k`` of ``n`` in %, with its 95 % Wilson interval."""
    lo, hi = stats.binomtest(k, n).proportion_ci(0.95, method="wilson")
    return f"{k}/{n} {100.0 * k / n:.1f} % [{100 * lo:.1f}, {100 * hi:.1f}]"


def table(outcomes: Mapping[float, Sequence[GateOutcome]], profiles: Sequence[str]) -> list[str]:
    """The printed rows: one per true ratio (module docstring)."""
    rows = []
    for ratio, got in outcomes.items():
        n = len(got)
        cells = [f"ratio {ratio:.2f}", f"{n} gates"]
        for d in ("pass", "fail", "inconclusive"):
            cells.append(f"{d.upper()} {_pct(sum(o.decision == d for o in got), n)}")
        cells.append(f"DIFFERENT slower on every profile "
                     f"{_pct(sum(o.slower == frozenset(profiles) for o in got), n)}")
        cells += [f"{p} rounds {np.mean([o.rounds[p] for o in got]):.1f}" for p in profiles]
        cells.append(f"timing wall {np.mean([o.wall_s for o in got]):.0f} s "
                     f"(max {max(o.wall_s for o in got):.0f} s)")
        rows.append("; ".join(cells))
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    """Print the table; returns 0. See the module docstring for the options."""
    ap = argparse.ArgumentParser(prog="python -m proofdiff.stats.power", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--trials", type=int, default=1000, help="gates per ratio (default 1000)")
    ap.add_argument("--seed", type=int, default=20261202, help="random seed")
    ap.add_argument("--ratios", type=float, nargs="+", default=[1.0, 1.05],
                    help="true candidate/baseline ratios (default 1.00 1.05)")
    ap.add_argument("--budget", type=int, default=None,
                    help="round cap per profile, warmup included (default the gate's, 21)")
    ap.add_argument("--budget-s", type=float, default=900.0,
                    help="the timing arm's time budget, s (default the gate's, 900)")
    for name, noise in MEASURED.items():
        for f in fields(noise):
            ap.add_argument(f"--{name}-{f.name.replace('_', '-')}", type=type(getattr(noise, f.name)),
                            default=getattr(noise, f.name), help=f"{name}'s {f.name} "
                            f"(default {getattr(noise, f.name)}, measured)")
    args = ap.parse_args(argv)
    noises = {name: replace(noise, **{f.name: getattr(args, f"{name}_{f.name}")
                                      for f in fields(noise)})
              for name, noise in MEASURED.items()}
    t0 = time.monotonic()
    rng = np.random.default_rng(args.seed)
    outcomes = {r: [simulate_gate(rng, noises, r, budget_pairs=args.budget,
                                  budget_s=args.budget_s) for _ in range(args.trials)]
                for r in args.ratios}
    print("Simulated gates (proofdiff.stats.power): the gate's timing arm and decision on "
          f"{', '.join(noises)}; {args.trials} gates per ratio")
    for row in table(outcomes, list(noises)):
        print("  " + row)
    print(f"({time.monotonic() - t0:.1f} s, seed {args.seed}; noise: "
          + "; ".join(f"{k}: {v}" for k, v in noises.items()) + ")")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
