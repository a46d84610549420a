"""The gate's error rates and power, simulated from measured samples, as records.

    python benchmarks/gate_sim.py --samples FILE... [--condition aa measured negated 1.05 1.10]
                                  [--trials 1000] [--rounds 61] [--record DIR] [--label TEXT]

Runs :func:`proofdiff.stats.power.simulate_gate` (the gate's own arm loop and decision on the
measured rounds of ``--samples``: gate summary.json files or ``benchmarks/gate_noise.py
--samples`` files; module docstring of :mod:`proofdiff.stats.power` for the conditions) and
prints, per condition, PASS / FAIL / INCONCLUSIVE with 95 % Wilson intervals, the median rounds
per profile and timing wall, and the metrics left undecided. ``--record DIR`` writes one JSON
record (benchmarks/results' shape) with every figure and each profile's measured per-pair
noise.
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from scipy import stats  # type: ignore[import-untyped]

from proofdiff.stats.power import load_pools, simulate_gate, tally

REPO = Path(__file__).resolve().parents[1]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--samples", type=Path, nargs="+", required=True)
    ap.add_argument("--condition", nargs="+", default=["aa", "measured", "negated"])
    ap.add_argument("--trials", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=61)
    ap.add_argument("--budget-s", type=float, default=900.0)
    ap.add_argument("--max-slowdown", type=float, default=0.05)
    ap.add_argument("--seed", type=int, default=20261207)
    ap.add_argument("--record", type=Path, metavar="DIR")
    ap.add_argument("--label", default="", help="what the samples are (the record's title)")
    a = ap.parse_args()
    pools = [p for f in a.samples for p in load_pools(f)]
    rng = np.random.default_rng(a.seed)
    t0 = time.monotonic()
    figures: dict[str, dict[str, object]] = {}
    for p in pools:
        for m, sd in p.noise().items():
            figures[f"measured noise {p.profile}/{m}"] = {"value": round(sd, 5),
                                                          "unit": "sd of a pair's log-ratio"}
        figures[f"measured seconds per round {p.profile}"] = {"value": round(p.round_s, 2),
                                                              "unit": "s"}
    for cond in a.condition:
        t = tally([simulate_gate(rng, pools, cond, max_slowdown=a.max_slowdown,
                                 rounds=a.rounds, budget_s=a.budget_s)
                   for _ in range(a.trials)])
        print(f"{cond}: {t.line()}")
        for name, k in (("pass", t.passed), ("fail", t.failed),
                        ("inconclusive", t.inconclusive)):
            lo, hi = stats.binomtest(k, t.gates).proportion_ci(0.95, method="wilson")
            figures[f"{cond} {name}"] = {"value": k / t.gates, "unit": "share of gates"}
            figures[f"{cond} {name} 95 % low"] = {"value": round(lo, 4), "unit": "share of gates"}
            figures[f"{cond} {name} 95 % high"] = {"value": round(hi, 4),
                                                   "unit": "share of gates"}
        for prof, r in t.rounds.items():
            figures[f"{cond} median rounds {prof}"] = {"value": r, "unit": "rounds"}
        figures[f"{cond} median timing wall"] = {"value": round(t.wall_s, 1), "unit": "s"}
    print(f"({time.monotonic() - t0:.0f} s)")
    if a.record:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO,
                                capture_output=True, text=True).stdout.strip()
        now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        slug = "".join(c if c.isalnum() else "-" for c in (a.label or "samples")).lower()
        rec = {"schema": 1, "topic": "gate-power",
               "what": f"simulated gates from measured samples: {a.label or 'samples'} "
                       f"({a.trials} per condition)",
               "benchmark": "benchmarks/gate_sim.py " + " ".join(sys.argv[1:]), "date": now,
               "machine": f"{platform.node()}: simulation; samples measured on the machine "
                          "their files name",
               "commit": commit, "figures": figures,
               "notes": "sources: " + ", ".join(f.name for f in a.samples)}
        a.record.mkdir(parents=True, exist_ok=True)
        path = a.record / f"gate-power-sim-{slug}-{now[:10]}.json"
        path.write_text(json.dumps(rec, indent=1) + "\n", encoding="utf-8")
        print(f"record: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
