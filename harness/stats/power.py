"""The gate's timing decision, simulated from measured samples: how often an unchanged build
passes, a slower one fails and a faster one never does, with the gate's own decision code.

``python -m proofdiff.stats.power --samples FILE... [--condition aa|measured|negated|F]
[--trials N] [--max-slowdown 0.05] [--rounds 61] [--budget-s 900] [--seed S]``

A sample file is a gate's ``summary.json`` (every timing metric carries its paired samples) or
``benchmarks/gate_noise.py --samples`` output; each gives its profiles' measured rounds: per
round and metric, the pair's log-ratio ``d`` (candidate over baseline), the warm-up round left
out. A simulated round draws one measured round of the profile (with replacement; all metrics
of the round together, so that their correlation is kept; a metric measured on fewer rounds
draws from its own at random), transformed by the condition:

* ``aa``: each drawn round's signs flipped at random: two exchangeable sides, the A/A null
  (any WORSE is a false alarm; a measured bias between the sides is not carried over);
* ``measured``: as measured (a measured slower candidate: its real effect and noise);
* ``negated``: every sign flipped (a measured slower candidate turned into a faster one);
* a factor ``F`` (``1.05``): the ``aa`` rounds with ``log F`` added to every duration metric
  (``in-progress`` unchanged: a slower prover overlaps as many jobs).

Each simulated gate runs every profile's arm in the files' order through
:func:`proofdiff.gate.arm_judge.run_arm` and :class:`~proofdiff.gate.arm_judge.ArmJudge` (the
looks, caps, undecidable noise, the family's first WORSE ending the timing) on a simulated clock
that advances by the profile's measured seconds per round, then
:func:`proofdiff.gate.decision.decide`. Printed per condition: PASS / FAIL / INCONCLUSIVE with
95 % Wilson intervals, the median rounds per profile and the median timing wall (the
candidate's differential, the cross-check and the warm-ups not included).
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy import stats  # type: ignore[import-untyped]

__all__ = ["Pool", "SimGate", "Tally", "load_pools", "main", "simulate_gate", "tally"]

#: Durations' metrics: a slower build shifts them (``in-progress`` is a count of jobs).
DURATIONS = ("latency", "throughput", "lone-latency")


@dataclass(frozen=True)
class Pool:
    """One profile's measured rounds: ``d[metric]`` the per-round log-ratios (candidate over
    baseline, the warm-up left out), its ``concurrency`` and seconds per round (both sides)."""

    profile: str
    concurrency: int
    round_s: float
    d: Mapping[str, np.ndarray]
    source: str

    @property
    def rounds(self) -> int:
        """Rounds of the metric measured longest."""
        return max(len(v) for v in self.d.values())

    def noise(self) -> dict[str, float]:
        """Each metric's per-pair noise (the standard deviation of its log-ratios)."""
        return {m: float(np.std(v, ddof=1)) for m, v in self.d.items() if len(v) > 1}


def _ratios(left: Sequence[float], right: Sequence[float]) -> np.ndarray:
    return np.asarray(np.log(np.asarray(right[1:], dtype=float)
                             / np.asarray(left[1:], dtype=float)))


def load_pools(path: Path) -> list[Pool]:
    """The profiles' measured rounds in a sample file (module docstring).

    Raises:
        ValueError: the file is neither shape, or a metric has fewer than 3 tested rounds.
    """
    doc = json.loads(path.read_text(encoding="utf-8"))
    out = []
    if "timing" in doc:  # a gate's summary.json
        for t in doc["timing"]:
            d = {m["metric"]: _ratios(m["left_samples"], m["right_samples"])
                 for m in t["metrics"]}
            secs = t["wall_s"] / max(1, t["rounds"])
            out.append(Pool(t["profile"], t["concurrency"], secs, d, path.name))
    elif "metrics" in doc:  # benchmarks/gate_noise.py --samples
        d = {m: _ratios(v["left_samples"], v["right_samples"]) for m, v in doc["metrics"].items()}
        secs = statistics.median(doc["round_s"][1:]) if len(doc["round_s"]) > 1 else 0.0
        out.append(Pool(doc["profile"], doc["concurrency"], secs, d, path.name))
    else:
        raise ValueError(f"{path}: neither a gate's summary.json nor gate_noise.py samples")
    for p in out:
        short = [m for m, v in p.d.items() if len(v) < 3]
        if short:
            raise ValueError(f"{path}: {p.profile} has fewer than 3 tested rounds of {short}")
    return out


def _draw(rng: np.random.Generator, pool: Pool, condition: str) -> dict[str, float]:
    """One simulated round's log-ratios per metric (module docstring's conditions)."""
    i = int(rng.integers(pool.rounds))
    out = {m: float(v[i] if i < len(v) else v[rng.integers(len(v))]) for m, v in pool.d.items()}
    if condition == "measured":
        return out
    if condition == "negated":
        return {m: -x for m, x in out.items()}
    sign = -1.0 if rng.uniform() < 0.5 else 1.0
    shift = 0.0 if condition == "aa" else math.log(float(condition))
    return {m: sign * x + (shift if m in DURATIONS else 0.0) for m, x in out.items()}


@dataclass(frozen=True)
class SimGate:
    """One simulated gate: its decision, rounds per profile, timing wall (s), and each metric's
    verdict word by ``profile/metric``."""

    decision: str
    rounds: Mapping[str, int]
    wall_s: float
    verdicts: Mapping[str, str]


def simulate_gate(rng: np.random.Generator, pools: Sequence[Pool], condition: str, *,
                  max_slowdown: float = 0.05, rounds: int = 61,
                  budget_s: float = 900.0) -> SimGate:
    """One gate's timing over ``pools`` under ``condition`` (module docstring)."""
    from proofdiff.gate.arm_judge import ArmJudge, Family, run_arm
    from proofdiff.gate.decision import decide, timing_findings
    from proofdiff.gate.gate_result import ProfileTiming
    from proofdiff.gate.timing_rounds import specs_of
    from proofdiff.gate.gating import GATE_ALPHA

    fam = Family(alpha=GATE_ALPHA, size=sum(len(p.d) for p in pools))
    clock = [0.0]
    timing: list[ProfileTiming] = []
    for pool in pools:
        specs = {m: s for m, s in specs_of(pool.concurrency, {}, max_slowdown=max_slowdown,
                                           alpha=fam.share(), max_pairs=rounds - 1).items()
                 if m in pool.d}
        judge = ArmJudge(pool.profile, "sim", specs)
        drawn: list[dict[str, float]] = []

        def wave(k: int, pool: Pool = pool, drawn: list[dict[str, float]] = drawn
                 ) -> tuple[int, str]:
            drawn.append({m: 0.0 for m in pool.d} if k == 0 else _draw(rng, pool, condition))
            clock[0] += pool.round_s
            return len(drawn), ""

        def samples(drawn: list[dict[str, float]] = drawn, names: Sequence[str] = tuple(specs)
                    ) -> dict[str, tuple[list[float], list[float]]]:
            return {m: ([1000.0] * len(drawn), [1000.0 * math.exp(r[m]) for r in drawn])
                    for m in names}

        if fam.failed:
            timing.append(ProfileTiming(profile=pool.profile, workload="sim",
                                        concurrency=pool.concurrency, stopped="not timed"))
            continue
        n, stopped = run_arm(judge, fam, wave, samples, budget_pairs=rounds,
                             deadline=budget_s, clock=lambda: clock[0])
        timing.append(ProfileTiming(profile=pool.profile, workload="sim",
                                    concurrency=pool.concurrency, rounds=n, stopped=stopped,
                                    metrics=judge.verdicts(stopped)))
    decision, _line, _why = decide(timing_findings(timing), [], timing, aa=condition == "aa")
    return SimGate(decision=decision.value, rounds={t.profile: t.rounds for t in timing},
                   wall_s=clock[0], verdicts={f"{t.profile}/{m.metric}": m.verdict.value
                                              for t in timing for m in t.metrics})


def _pct(k: int, n: int) -> str:
    """``k`` of ``n`` in %, with its 95 % Wilson interval."""
    lo, hi = stats.binomtest(k, n).proportion_ci(0.95, method="wilson")
    return f"{k}/{n} {100.0 * k / n:.1f} % [{100 * lo:.1f}, {100 * hi:.1f}]"


@dataclass(frozen=True)
class Tally:
    """Simulated gates counted: decisions, the median rounds per profile and timing wall (s),
    and how often each ``profile/metric`` was left INCONCLUSIVE."""

    gates: int
    passed: int
    failed: int
    inconclusive: int
    rounds: Mapping[str, float]
    wall_s: float
    undecided: Mapping[str, int]

    def line(self) -> str:
        """``PASS 97/100 97.0 % [91.5, 99.0]; FAIL ...; median rounds ...``."""
        n = self.gates
        return (f"PASS {_pct(self.passed, n)}; FAIL {_pct(self.failed, n)}; INCONCLUSIVE "
                f"{_pct(self.inconclusive, n)}; median rounds {dict(self.rounds)}; median "
                f"timing wall {self.wall_s:.0f} s; undecided {dict(self.undecided)}")


def tally(gates: Sequence[SimGate]) -> Tally:
    """Counts and medians of simulated gates (:class:`Tally`)."""
    undecided: dict[str, int] = {}
    for g in gates:
        for k, v in g.verdicts.items():
            if v == "INCONCLUSIVE":
                undecided[k] = undecided.get(k, 0) + 1
    return Tally(gates=len(gates), passed=sum(g.decision == "pass" for g in gates),
                 failed=sum(g.decision == "fail" for g in gates),
                 inconclusive=sum(g.decision == "inconclusive" for g in gates),
                 rounds={p: float(statistics.median(g.rounds.get(p, 0) for g in gates))
                         for p in (gates[0].rounds if gates else {})},
                 wall_s=float(statistics.median(g.wall_s for g in gates)) if gates else 0.0,
                 undecided=undecided)


def main(argv: Sequence[str] | None = None) -> int:
    """Print the table; returns 0. See the module docstring for the options."""
    ap = argparse.ArgumentParser(prog="python -m proofdiff.stats.power", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--samples", type=Path, nargs="+", required=True, metavar="FILE",
                    help="gate summary.json or gate_noise.py --samples files")
    ap.add_argument("--condition", nargs="+", default=["aa", "1.05"],
                    help="aa, measured, negated or a factor such as 1.05 (default: aa 1.05)")
    ap.add_argument("--trials", type=int, default=1000, help="gates per condition (1000)")
    ap.add_argument("--seed", type=int, default=20261207, help="random seed")
    ap.add_argument("--max-slowdown", type=float, default=0.05, help="tolerance (0.05)")
    ap.add_argument("--rounds", type=int, default=61, help="--rounds of the gate (61)")
    ap.add_argument("--budget-s", type=float, default=900.0, help="--budget-s of the gate")
    args = ap.parse_args(argv)
    pools = [p for f in args.samples for p in load_pools(f)]
    t0 = time.monotonic()
    rng = np.random.default_rng(args.seed)
    print(f"Simulated gates (proofdiff.stats.power) from {', '.join(f.name for f in args.samples)}"
          f"; {args.trials} per condition; max slowdown {args.max_slowdown:.1%}, --rounds "
          f"{args.rounds}, --budget-s {args.budget_s:g}")
    for p in pools:
        print(f"  {p.profile} ({p.source}, {p.rounds} rounds, {p.round_s:.1f} s each): noise "
              + ", ".join(f"{m} {s:.2%}" for m, s in p.noise().items()))
    for cond in args.condition:
        gates = [simulate_gate(rng, pools, cond, max_slowdown=args.max_slowdown,
                               rounds=args.rounds, budget_s=args.budget_s)
                 for _ in range(args.trials)]
        print(f"  {cond}: {tally(gates).line()}")
    print(f"({time.monotonic() - t0:.1f} s, seed {args.seed})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
