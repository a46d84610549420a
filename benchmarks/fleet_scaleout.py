"""Scale-out of a workflow's units over Dask workers: the same proofdiff command with 1, 2, 4 ...
workers, each worker pinned to its own share of this machine's cores (one "host" each: the
daemons its units start inherit the pinning), the wall per worker count.

    python benchmarks/fleet_scaleout.py [--workers 1 2 4] -- PROOFDIFF ARGS...

e.g. ``-- run --suite regressions --set '*.runtime=process' --bin-dir .bin`` (every regression
case, as pinned and with its fix, a unit each) or ``-- bisect ... --set '*.runtime=process'``
(the probes of one dd step side by side), or ``-- nightly --suite validity ...`` (the night's
matrix: one unit per worker), or ``-- gate --candidate-bin-dir C --baseline-bin-dir B ...``
(the candidate's differential, then the timing rounds in waves, one per worker). The command gets ``--cluster`` (a ``LocalCluster`` on
127.0.0.1, no dashboard; plain TCP on this machine's loopback, hence ``--insecure``) and
``--report-dir``; where each unit ran is read back from the
reports (``machine.fleet_host``, a bisection's ``probes[].host``, a gate's
``timing[].hosts``).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from record import Value, write_record


def _pin(share: dict[str, list[int]]) -> Any:
    def pin(dask_worker: Any) -> list[int]:
        cores = share[str(dask_worker.name)]
        for tid in os.listdir("/proc/self/task"):  # every thread: later ones inherit it
            os.sched_setaffinity(int(tid), cores)
        return cores
    return pin


def _hosts(report_dir: Path) -> Counter[str]:
    """Units per worker, from the summaries under ``report_dir``."""
    got: Counter[str] = Counter()
    for f in report_dir.rglob("summary.json"):
        doc = json.loads(f.read_text())
        for p in doc.get("probes", []):
            got[str(p.get("host", ""))] += 1
        for t in doc.get("timing", []):  # a gate's timing rounds, a unit each
            for h, k in (t.get("hosts") or {}).items():
                got[str(h)] += int(k)
        machine = doc.get("machine")
        host = machine.get("fleet_host") if isinstance(machine, dict) else None
        if host is not None and "probes" not in doc:
            got[str(host)] += 1
    return got


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4],
                    help="worker counts to try. Default: 1 2 4")
    ap.add_argument("--cores-each", type=int, default=0,
                    help="cores per worker, the same for every count (a host's size does not "
                    "change with the fleet's; the counts x this must fit). Default: an even "
                    "share of the cores")
    ap.add_argument("--json", type=Path, help="also write the rows here")
    ap.add_argument("rest", nargs=argparse.REMAINDER, help="-- then the proofdiff command")
    args = ap.parse_args()
    cmd = args.rest[1:] if args.rest[:1] == ["--"] else args.rest
    from distributed import Client, LocalCluster

    cores = sorted(os.sched_getaffinity(0))
    rows = []
    for n in args.workers:
        if args.cores_each and n * args.cores_each > len(cores):
            raise SystemExit(f"{n} workers x {args.cores_each} cores > the {len(cores)} here")
        share = ({str(i): cores[i * args.cores_each:(i + 1) * args.cores_each]
                  for i in range(n)} if args.cores_each else
                 {str(i): cores[i * len(cores) // n:(i + 1) * len(cores) // n] or cores
                  for i in range(n)})
        with tempfile.TemporaryDirectory(prefix="proofdiff-scaleout-") as tmp, \
                LocalCluster(n_workers=n, threads_per_worker=1, processes=True,
                             host="127.0.0.1", dashboard_address=None,
                             worker_dashboard_address=None) as lc, \
                Client(lc, set_as_default=False) as client:
            client.run(_pin(share))
            t0 = time.monotonic()
            proc = subprocess.run([sys.executable, "-m", "proofdiff", *cmd, "--cluster",
                                   str(lc.scheduler_address), "--insecure", "--report-dir", tmp],
                                  capture_output=True, text=True, timeout=3600)
            wall = time.monotonic() - t0
            per = _hosts(Path(tmp))
        rows.append({"workers": n, "cores_each": len(share["0"]), "wall_s": round(wall, 1),
                     "exit": proc.returncode, "units": dict(sorted(per.items()))})
        if proc.returncode != 0 or not per:  # what went wrong, whatever the exit code
            print((proc.stdout + proc.stderr)[-3000:], file=sys.stderr)
    base = rows[0]["wall_s"]
    # throughput: units per minute; efficiency: throughput(N) / (N x throughput(1 worker))
    per_worker = (sum(rows[0]["units"].values()) / rows[0]["wall_s"]) / rows[0]["workers"]
    table = Table(title=f"scale-out of `proofdiff {' '.join(cmd)}` on {len(cores)} cores")
    for col in ("workers", "cores each", "wall s", "speed-up", "units/min", "efficiency",
                "exit", "units per worker"):
        table.add_column(col)
    for r in rows:
        units = sum(r["units"].values())
        r["throughput_per_min"] = round(units / r["wall_s"] * 60, 2)
        r["efficiency"] = round(units / r["wall_s"] / (r["workers"] * per_worker), 2) \
            if per_worker else None
        table.add_row(str(r["workers"]), str(r["cores_each"]), f"{r['wall_s']:.1f}",
                      f"{base / r['wall_s']:.2f}x", f"{r['throughput_per_min']}",
                      f"{r['efficiency']}", str(r["exit"]),
                      ", ".join(f"{k}: {v}" for k, v in r["units"].items()))
    Console(width=140).print(table)
    figures: dict[str, tuple[Value, str]] = {}
    for r in rows:
        n = r["workers"]
        figures.update({f"{n} workers wall": (r["wall_s"], "s"),
                        f"{n} workers throughput": (r["throughput_per_min"], "units/min"),
                        f"{n} workers efficiency": (r["efficiency"] if r["efficiency"] is not None
                                                    else "n/a", ""),
                        f"{n} workers exit code": (r["exit"], "")})
    write_record("fleet-scaleout", f"scale-out of `proofdiff {' '.join(cmd)}` over Dask workers "
                 f"on {len(cores)} cores", figures)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
