"""What the run history costs: the write time of one run and the query time of
``proofdiff history`` over 1,000 stored runs.

    python benchmarks/history_bench.py [--runs 1000] [--history sqlite:///PATH | postgresql://...]
                                       [--template reports/RUN/summary.json]

The runs are copies of a real one (``--template``: a run's summary.json; default the first run
of tests/data/history/runs.jsonl.gz), with its oracle records and every job's samples, each with its own run id and time and its job latencies scaled by a seeded
random factor (a step of +10 % after two thirds of the runs, so the query also finds a change
point). Printed: the write time per run (median, p95, max; :func:`proofdiff.history.store.
store_result`, one transaction each, the database growing from empty), the database's size, and
the time of the query (:func:`proofdiff.history.query.load_series`) and of the change points
(:func:`proofdiff.history.view.analyse`) of the latency series, each the median of 5.
"""

from __future__ import annotations

import argparse
import gzip
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

import msgspec

from proofdiff.history.database import history_url, open_history
from proofdiff.history.query import load_series
from proofdiff.history.store import commit_info, store_result
from proofdiff.history.view import analyse
from proofdiff.model import serde
from proofdiff.model.result import DifferentialResult
from record import Value, write_record

REPO = Path(__file__).resolve().parents[1]
FIXTURE = REPO / "tests/data/history/runs.jsonl.gz"


def _scaled(base: DifferentialResult, i: int, factor: float) -> DifferentialResult:
    runs = tuple(msgspec.structs.replace(r, flows=tuple(msgspec.structs.replace(
        f, wall_ms=f.wall_ms * factor, jobs=tuple(msgspec.structs.replace(
            j, wall_ms=j.wall_ms * factor) for j in f.jobs)) for f in r.flows)) for r in base.runs)
    return msgspec.structs.replace(base, run_id=f"bench-{i:05d}", runs=runs,
                                   created_unix_s=base.created_unix_s + 86400.0 * i)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=1000)
    ap.add_argument("--history", default="")
    ap.add_argument("--template", type=Path, default=None)
    args = ap.parse_args()
    if args.template:
        base = serde.read(args.template, DifferentialResult)
    else:
        with gzip.open(FIXTURE, "rt", encoding="utf-8") as f:
            base = serde.decode(f.readline(), DifferentialResult, where=str(FIXTURE))
    tmp = Path(tempfile.mkdtemp(prefix="proofdiff-history-bench-"))
    url = history_url(args.history, tmp) if args.history else f"sqlite:///{tmp / 'history.sqlite'}"
    rng = random.Random(1)
    commit = commit_info()
    h = open_history(url)
    writes = []
    for i in range(args.runs):
        factor = rng.gauss(1.0, 0.03) * (1.10 if i >= 2 * args.runs // 3 else 1.0)
        res = _scaled(base, i, factor)
        t0 = time.perf_counter()
        store_result(h, res, command="bench", commit=commit)
        writes.append(time.perf_counter() - t0)
    samples = sum(1 for r in base.runs for f in r.flows for _ in f.jobs)
    print(f"{args.runs} runs stored in {h.url} ({samples} jobs and {len(base.records)} oracle "
          f"records per run, copies of {base.run_id})")
    w = sorted(writes)
    print(f"write per run: median {statistics.median(w) * 1000:.1f} ms, p95 "
          f"{w[int(0.95 * len(w))] * 1000:.1f} ms, max {w[-1] * 1000:.1f} ms")
    figures: dict[str, tuple[Value, str]] = {
        "runs stored": (args.runs, ""), "jobs per run": (samples, ""),
        "write per run median": (round(statistics.median(w) * 1000, 1), "ms"),
        "write per run p95": (round(w[int(0.95 * len(w))] * 1000, 1), "ms"),
        "write per run max": (round(w[-1] * 1000, 1), "ms")}
    if url.startswith("sqlite:///"):
        size_mib = Path(url[len('sqlite:///'):]).stat().st_size / 2**20
        print(f"database size: {size_mib:.1f} MiB")
        figures["database size"] = (round(size_mib, 1), "MiB")
    q, c = [], []
    for _ in range(5):
        t0 = time.perf_counter()
        series = load_series(h, "latency")
        t1 = time.perf_counter()
        views = analyse(series, max_pvalue=0.001, min_magnitude=0.0)
        c.append(time.perf_counter() - t1)
        q.append(t1 - t0)
    print(f"query (latency, {sum(len(s.points) for s in series)} points): median "
          f"{statistics.median(q) * 1000:.0f} ms; change points: median "
          f"{statistics.median(c) * 1000:.0f} ms; found at runs "
          f"{[ch.run_id for v in views for ch in v.changes]}")
    h.close()
    figures.update({"query median": (round(statistics.median(q) * 1000), "ms"),
                    "change points median": (round(statistics.median(c) * 1000), "ms"),
                    "change points found": (len([1 for v in views for _ in v.changes]), "")})
    write_record("history", f"run history: write time per run and query time over "
                 f"{args.runs} stored runs ({h.url.split(':', 1)[0]})", figures)
    return 0


if __name__ == "__main__":
    sys.exit(main())
