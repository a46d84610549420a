"""The nightly's timing decision, simulated from measured runs: false NEW nights among clean
ones, and how often a step is NEW on its first night.

    python benchmarks/nightly_sim.py [--runs FILE] [--sequences 200] [--nights 30]
                                     [--step-after 3 5 10] [--record DIR]

The runs are real ``proofdiff run`` summaries (default tests/data/history/runs.jsonl.gz: 15
clean runs of the reference image and 5 of a ``slow-prove=1.10`` image on a quiet 2-core
machine, PROVENANCE.md beside it), stored in a real SQLite history and read back as the
nightly reads them (:func:`proofdiff.history.query.load_series`): per run, each timing series'
value (median latency, throughput). A simulated night is one measured run drawn at random
(with replacement), all its series together: the spread between simulated nights is the
measured spread between real runs.

* **Clean nights**: ``--sequences`` sequences of ``--nights`` judged nights (after the
  :data:`~proofdiff.history.tonight.MIN_NIGHTS` nights that cannot be judged), each night
  tested by :func:`~proofdiff.history.tonight.tonight_test` against the nights before it (the
  nightly's own test and share of :data:`~proofdiff.history.tonight.NIGHT_ALPHA`): the false
  NEW nights per sequence (their mean, and how many sequences had more than one).
* **A step**: ``k`` clean nights (each ``--step-after``), then one night drawn from the slow
  runs (the measured ``slow-prove=1.10`` step), and one from the clean runs times 1.10 (a step
  of exactly 10 %): how often it is NEW on that first night.

``--record DIR`` writes one JSON record (benchmarks/results' shape) with the figures.
"""

from __future__ import annotations

import argparse
import gzip
import json
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import msgspec
import numpy as np

from proofdiff.history.database import history_url, open_history
from proofdiff.history.query import Point, Series, load_series
from proofdiff.history.store import store_result
from proofdiff.history.tonight import MIN_NIGHTS, NIGHT_ALPHA, tonight_test
from proofdiff.model import serde
from proofdiff.model.result import DifferentialResult

REPO = Path(__file__).resolve().parents[1]
RUNS = REPO / "tests" / "data" / "history" / "runs.jsonl.gz"
METRICS = ("latency", "throughput")


def measured(path: Path) -> tuple[list[Series], list[str]]:
    """Each timing series of the runs in ``path`` (one point per run, in file order), read
    back from a real SQLite history; and each run's kind (``clean`` / ``slow`` / ``warm``)."""
    with gzip.open(path, "rt", encoding="utf-8") as f:
        runs = [serde.decode(line, DifferentialResult, where=str(path)) for line in f]
    with tempfile.TemporaryDirectory() as tmp:
        db = open_history(history_url(str(Path(tmp) / "h.sqlite"), Path(tmp)))
        try:
            for i, r in enumerate(runs):
                store_result(db, msgspec.structs.replace(r, created_unix_s=1.7e9 + 86400 * i),
                             command="nightly", commit={"id": "recorded"})
            series = [s for m in METRICS for s in load_series(db, m) if s.valued]
        finally:
            db.close()
    kinds = ["clean" if "-clean-" in r.run_id else "slow" if "-slow-" in r.run_id else "warm"
             for r in runs]
    return series, kinds


def _night(series: list[Series], i: int, scale: float, k: int) -> list[Point]:
    """Run ``i``'s point of each series as night ``k`` (its value times ``scale`` where the
    worse direction is higher, divided where lower)."""
    out = []
    for s in series:
        p = s.points[i]
        v = None if p.value is None else (p.value * scale if s.metric.worse == "higher"
                                          else p.value / scale)
        out.append(replace(p, run_id=f"night-{k:03d}", value=v))
    return out


def _judge(series: list[Series], nights: list[list[Point]]) -> bool | None:
    """Whether the last of ``nights`` is NEW on any series (the series share the nightly's
    rate); ``None`` when no series could be judged."""
    alpha = NIGHT_ALPHA / len(series)
    got = [tonight_test(replace(s, points=tuple(n[j] for n in nights)), alpha)
           for j, s in enumerate(series)]
    judged = [t for t in got if t is not None and not t.undecided]
    return any(t.new for t in judged) if judged else None


def simulate(series: list[Series], kinds: list[str], rng: np.random.Generator, *,
             sequences: int, nights: int, step_after: list[int]) -> dict[str, float]:
    """The figures of the module docstring."""
    clean = [i for i, k in enumerate(kinds) if k == "clean"]
    slow = [i for i, k in enumerate(kinds) if k == "slow"]

    def shuffled(n: int) -> list[int]:
        out: list[int] = []
        while len(out) < n:
            out += [int(i) for i in rng.permutation(clean)]
        return out[:n]

    false_new: list[int] = []
    for _ in range(sequences):
        seq: list[list[Point]] = []
        count = 0
        for k, i in enumerate(shuffled(nights + MIN_NIGHTS)):
            seq.append(_night(series, i, 1.0, k))
            if k >= MIN_NIGHTS and _judge(series, seq):
                count += 1
        false_new.append(count)
    out: dict[str, float] = {
        "false_new_per_sequence_mean": statistics.fmean(false_new),
        "sequences_with_more_than_one_false_new": float(sum(c > 1 for c in false_new)),
        "sequences": float(sequences), "nights_per_sequence": float(nights)}
    for k in step_after:
        for name, pick, scale in (("measured-slow", slow, 1.0), ("clean-x1.10", clean, 1.10)):
            hits = 0
            for _ in range(sequences):
                seq = [_night(series, i, 1.0, j) for j, i in enumerate(shuffled(k))]
                seq.append(_night(series, int(rng.choice(pick)), scale, k))
                hits += bool(_judge(series, seq))
            out[f"new_on_first_night_{name}_after_{k}"] = hits / sequences
    return out


def spread(series: list[Series], kinds: list[str]) -> dict[str, float]:
    """Each series' night-to-night spread (sd of log values) over the clean runs, and the
    slow runs' mean over the clean runs'."""
    out = {}
    for s in series:
        clean = [p.value for p, k in zip(s.points, kinds) if k == "clean" and p.value]
        slow = [p.value for p, k in zip(s.points, kinds) if k == "slow" and p.value]
        out[f"{s.metric.name}_{s.profile}_spread"] = float(np.std(np.log(clean), ddof=1))
        out[f"{s.metric.name}_{s.profile}_slow_over_clean"] = statistics.fmean(slow) / \
            statistics.fmean(clean)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=Path, default=RUNS)
    ap.add_argument("--sequences", type=int, default=200)
    ap.add_argument("--nights", type=int, default=30)
    ap.add_argument("--step-after", type=int, nargs="+", default=[3, 5, 10])
    ap.add_argument("--seed", type=int, default=20261207)
    ap.add_argument("--record", type=Path, metavar="DIR")
    a = ap.parse_args()
    t0 = time.monotonic()
    series, kinds = measured(a.runs)
    figs = spread(series, kinds)
    figs.update(simulate(series, kinds, np.random.default_rng(a.seed), sequences=a.sequences,
                         nights=a.nights, step_after=a.step_after))
    for k, v in figs.items():
        print(f"{k}: {v:.4g}")
    print(f"({time.monotonic() - t0:.0f} s)")
    if a.record:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO,
                                capture_output=True, text=True).stdout.strip()
        now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        rec = {"schema": 1, "topic": "nightly-power",
               "what": "false NEW nights and first-night detection of a step, simulated from "
                       f"measured runs ({a.runs.name})",
               "benchmark": "benchmarks/nightly_sim.py " + " ".join(sys.argv[1:]),
               "date": now, "machine": f"{platform.node()} (simulation; runs recorded on the "
                                       "machine PROVENANCE.md names)",
               "commit": commit,
               "figures": {k: {"value": v, "unit": ""} for k, v in figs.items()},
               "notes": f"night alpha {NIGHT_ALPHA:.4g} shared by {len(series)} series"}
        a.record.mkdir(parents=True, exist_ok=True)
        path = a.record / f"nightly-power-sim-{now[:10]}.json"
        path.write_text(json.dumps(rec, indent=1) + "\n", encoding="utf-8")
        print(f"record: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
