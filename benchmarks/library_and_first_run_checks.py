"""What the library and first-run-artifact checks cost per run, and their catch-matrix rows, as records.

    python benchmarks/library_and_first_run_checks.py cost [--runs N]   # N runs of preflight + warmup
    python benchmarks/library_and_first_run_checks.py matrix REPORT_DIR  # a catch-matrix report's rows

``cost``: ``proofdiff run --suite preflight --suite warmup`` N times (default 2) on the
reference image; each record's time is read from its report (``started_unix_s`` to
``stopped_unix_s``: a record is timed from the previous record of its suite, so
``preflight/libraries`` includes its look, one short container per profile, and
``warmup/first-run-artifacts`` its look beside the daemon). ``matrix``: the verdict and wall
time of each row of a ``proofdiff catch-matrix`` report (its ``summary.json``).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

from record import REPO, write_record

CHECKS = (("preflight", "libraries"), ("warmup", "first-run-artifacts"))


def cost(runs: int) -> None:
    took: dict[str, list[float]] = {f"{s}/{o}": [] for s, o in CHECKS}
    with tempfile.TemporaryDirectory() as out:
        for i in range(runs):
            rid = f"checks-cost-{uuid.uuid4().hex[:6]}"
            subprocess.run([sys.executable, "-m", "proofdiff", "run", "--suite", "preflight",
                            "--suite", "warmup", "--report-dir", out, "--run-id", rid],
                           cwd=REPO, capture_output=True, timeout=900, check=False)
            doc = json.loads((Path(out) / rid / "summary.json").read_text(encoding="utf-8"))
            for r in doc["records"]:
                key = f"{r['suite']}/{r['oracle']}"
                if key in took and r["outcome"] == "pass":
                    took[key].append(r["stopped_unix_s"] - r["started_unix_s"])
    figures = {f"{k} median": (round(statistics.median(v), 3), "s") for k, v in took.items() if v}
    figures |= {f"{k} max": (round(max(v), 3), "s") for k, v in took.items() if v}
    figures |= {f"{k} records": (len(v), "") for k, v in took.items()}
    write_record("check-cost", "preflight/libraries and warmup/first-run-artifacts per profile "
                 "and run (bench and prod of the refprover set, wpost-2k)", figures,
                 notes=f"{runs} runs of --suite preflight --suite warmup; a record's time runs "
                 "from the previous record of its suite to its own")


def matrix(report: Path) -> None:
    doc = json.loads((report / "summary.json").read_text(encoding="utf-8"))
    rows = doc["extra"]["catch_matrix"]["cases"]
    figures: dict[str, tuple[str | float, str]] = {}
    for r in rows:
        figures[r["fault"]] = (r["verdict"], "")
        figures[f"{r['fault']} wall"] = (r["wall_s"], "s")
    write_record("catch-matrix", "the library and first-run faults with their own suites, the clean row "
                 "through every suite", figures,
                 benchmark="proofdiff catch-matrix --targeted --fault missing-library --fault "
                 "no-first-run-artifact", notes=f"report {report.name}; faults on prod only")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="what", required=True)
    sub.add_parser("cost").add_argument("--runs", type=int, default=2)
    sub.add_parser("matrix").add_argument("report", type=Path)
    a = ap.parse_args()
    cost(a.runs) if a.what == "cost" else matrix(a.report)
