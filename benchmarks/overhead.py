"""What proofdiff costs beyond the proving it drives: the main job's overhead.

    python benchmarks/overhead.py [--repo DIR] [--repeat N] [-- PROOFDIFF RUN ARGS...]

Runs the main job (``proofdiff run`` with the defaults: the refprover set, wpost-2k, the
default suites) ``--repeat`` times from ``--repo`` (default: this checkout) and prints, per run:

* wall: the whole ``proofdiff run`` process, start to exit (s);
* proving: the wall-clock union over every flow in summary.json of its span (its first job's
  send time to that plus the flow's wall time, first submit to last answer): the time some
  proof was in flight on a daemon. Concurrent flows (isolation, profiles side by side) overlap,
  so their sum would overstate it (down to a negative overhead);
* overhead = wall - proving, in s and as a share of wall: daemon starts, preflight, the
  independent verification, the behaviour sampling, report writing, interpreter start.

The caches must be warm (run ``make demo`` once first): a cold build is not the main job.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from record import write_record
from spans import covered, flow_span_s

HERE = Path(__file__).resolve().parents[1]


def proving_s(summary: dict) -> float | None:
    """The wall-clock union of every flow's span in a summary.json, in s (``None``: no flows
    recorded). A flow no job of which says when it was sent adds its own ``wall_ms``."""
    flows = [f for r in summary.get("runs", []) for f in r.get("flows", [])]
    if not flows:
        return None
    placed = [s for s in map(flow_span_s, flows) if s is not None]
    unplaced = sum(f.get("wall_ms") or 0.0 for f in flows if flow_span_s(f) is None) / 1000.0
    return covered(placed) + unplaced


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--repo", type=Path, default=HERE, help="checkout to run. Default: this one")
    p.add_argument("--python", default=sys.executable, help="interpreter. Default: this one")
    p.add_argument("--repeat", type=int, default=3, help="runs. Default: 3")
    p.add_argument("args", nargs="*", help="extra `proofdiff run` arguments (after --)")
    a = p.parse_args()
    table = Table(title=f"main job overhead ({a.repo})")
    for col in ("run", "rc", "wall s", "proving s", "overhead s", "overhead %"):
        table.add_column(col, justify="right")
    shares, walls = [], []
    with tempfile.TemporaryDirectory(prefix="proofdiff-overhead-") as tmp:
        for i in range(a.repeat):
            rid = f"overhead-{i}"
            t0 = time.monotonic()
            proc = subprocess.run([a.python, "-m", "proofdiff", "run", "--report-dir", tmp,
                                   "--run-id", rid, *a.args], cwd=a.repo, capture_output=True,
                                  text=True, timeout=3600)
            wall = time.monotonic() - t0
            summary_path = Path(tmp) / rid / "summary.json"
            summary = json.loads(summary_path.read_text()) if summary_path.is_file() else {}
            prov = proving_s(summary)
            if prov is None:
                table.add_row(str(i), str(proc.returncode), f"{wall:.1f}", "n/a", "n/a", "n/a")
                continue
            shares.append((wall - prov) / wall)
            walls.append(wall)
            table.add_row(str(i), str(proc.returncode), f"{wall:.1f}", f"{prov:.1f}",
                          f"{wall - prov:.1f}", f"{100 * (wall - prov) / wall:.1f}")
    console = Console()
    console.print(table)
    if shares:
        console.print(f"overhead: median {100 * statistics.median(shares):.1f} % of wall "
                      f"(min {100 * min(shares):.1f}, max {100 * max(shares):.1f}, n={len(shares)})")
        write_record("run-overhead", "the main job's overhead: proofdiff run's wall less the "
                     "union of its flows' proving spans", {
                         "overhead median": (round(100 * statistics.median(shares), 1), "%"),
                         "overhead min": (round(100 * min(shares), 1), "%"),
                         "overhead max": (round(100 * max(shares), 1), "%"),
                         "wall median": (round(statistics.median(walls), 1), "s"),
                         "runs": (len(shares), "")})
    return 0


if __name__ == "__main__":
    sys.exit(main())
