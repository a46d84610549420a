"""Scale-out over real SSH hosts: the main job's units (the differential, bench against prod) on
1, 2, 3 ... hosts, with the shipping time per host (cold, then warm) and a bisection's wall on
the fewest and the most hosts.

    python benchmarks/fleet_ssh_scaleout.py [--hosts 1 2 3] [--units 6] [--gpu-bound-ms 3000]
                                            [--cpus-per-host CORES] [--no-bisect] [--keep DIR]

Each unit is the differential of the default profiles (bench against prod) judged by the
``validity`` suite (every proof verified per partition), on the build's wpost-2k cut to its
first two jobs of one partition each (tests/conftest.py ``smaller_workload``), so that a unit
is seconds of proving, not minutes, on 2 cores.

Each host is a container of the SSH host image (tests/e2e/ssh_hosts.py: Debian's Python with
this checkout's proofdiff, an sshd on 127.0.0.1, no Docker, nothing of refprover), started fresh
for each host count, so the first shipment is cold. The daemons run there as processes.

Proofs are CPU-bound on a machine without a GPU, so every daemon runs with refprover's
``gpu-bound-ms=<N>`` fault: each partition waits N ms idle after its proof, standing in for GPU
time while the host's cores are free (as on a GPU host, where the cores wait on the GPU).

Hosts of a fleet have cores of their own; these share this machine's. Without
``--cpus-per-host`` every host competes for all of them, so units that prove at the same moment
on three hosts slow each other (the machine's contention, not the fleet's). With it, each host
gets a CPU quota of its own (Docker's ``--cpus``, CFS), the same at every host count, so one
host alone proves no faster than one of three: the efficiency then measures what the fleet
adds (placement, shipping, the scheduler, results coming back), as on real hosts. The quotas
should leave a part of a core to the caller (3 x 0.6 of 2 cores).

Figures (units of the default differential, each with its own run id):
- throughput(N) = units / wall of the ``map`` over N hosts, units per minute;
- efficiency(N) = throughput(N) / (N x throughput(1)); the target is >= 0.9 at 3 hosts;
- shipping per host: each host's shipment, cold (fresh host) and warm (the same artifacts
  again: nothing sent), seconds;
- the bisection of ``param-path-default`` (``proofdiff bisect --hosts``, oracle
  preflight/params) on the fewest and the most hosts, wall seconds.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # tests.e2e.ssh_hosts starts the hosts

import msgspec  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from proofdiff.fleet.differential import differential_unit  # noqa: E402
from proofdiff.fleet.executor import open_executor  # noqa: E402
from proofdiff.model.run_options import RunOptions  # noqa: E402
from proofdiff.model.status import Verdict  # noqa: E402
from record import Value, write_record  # noqa: E402
from tests.conftest import smaller_workload  # noqa: E402
from tests.e2e.ssh_hosts import start_ssh_hosts  # noqa: E402

#: What each unit judges.
SUITES = ("validity",)


def _workload(tmp: Path) -> str:
    """``wpost-2k=PATH``: the build's wpost-2k, its first two jobs of one partition each."""
    from proofdiff.core.plan import pin_artifacts

    opts, _ref = pin_artifacts(RunOptions.from_env(), ["wpost-2k"], docker=False,
                               log=lambda _l: None)
    path = smaller_workload(Path(opts.workload_files["wpost-2k"]), tmp, jobs=2, partitions=1)
    return f"wpost-2k={path}"


def _bisect_wall(hosts_file: Path, report_dir: Path, faults: str) -> tuple[float, str, int]:
    """Wall of ``proofdiff bisect --hosts`` of param-path-default; (seconds, status, probes)."""
    t0 = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "proofdiff", "bisect", "--hosts", str(hosts_file), "--set",
         f"*.env.REFPROVER_FAULTS=param-path-default,{faults}", "--oracle", "preflight/params",
         "--report-dir", str(report_dir), "--run-id", "bisect"],
        cwd=REPO, capture_output=True, text=True, timeout=1800)
    wall = time.monotonic() - t0
    summary = report_dir / "bisect" / "summary.json"
    if not summary.is_file():
        raise SystemExit(f"the bisection wrote no report:\n{proc.stdout}{proc.stderr}")
    doc = json.loads(summary.read_text())
    if doc.get("status") != "found":
        print(f"  the bisection ended {doc.get('status')}: {doc.get('line') or doc}"[:2000])
    return wall, str(doc.get("status")), len(doc.get("probes", []))


def one_count(n: int, units: int, faults: str, workload: str, tmp: Path, bisect: bool,
              console: Console, keep: bool = False, cpus: float | None = None) -> dict[str, Any]:
    """Start ``n`` fresh hosts, ship cold and warm, run ``units`` differentials over them;
    ``keep``: write every unit's report under ``tmp/r<n>`` (else only those not SAME)."""
    names = tuple(f"host-{i}" for i in range(1, n + 1))
    (tmp / f"hosts-{n}").mkdir(exist_ok=True)
    gen = start_ssh_hosts(tmp / f"hosts-{n}", names, cpus=cpus)
    hosts = next(gen)
    try:
        name, path = workload.split("=", 1)
        opts = RunOptions.from_env(hosts=str(hosts.hosts_file), report_dir=str(tmp / f"r{n}"),
                                   overrides=(f"*.env.REFPROVER_FAULTS={faults}",),
                                   suites=SUITES, workload_files={name: path})
        with open_executor(opts, log=lambda line: console.print(f"  {line}",
                                                                 highlight=False)) as ex:
            unit = ex.ship(msgspec.structs.replace(opts, cluster="", hosts=""))
            cold = {r.worker: r.seconds for r in ex.shipped}
            ex.shipped.clear()
            ex.ship(msgspec.structs.replace(opts, cluster="", hosts=""))
            warm = {r.worker: r.seconds for r in ex.shipped}
            items = [msgspec.structs.replace(unit, run_id=f"u{i}") for i in range(units)]
            t0 = time.monotonic()
            got = ex.map_placed(differential_unit, items, name="differential")
            wall = time.monotonic() - t0
        verdicts = sorted({r.verdict.value for _w, r in got})
        per_host = {h: sum(1 for w, _r in got if w == h) for h in names}
        row: dict[str, Any] = {
            "hosts": n, "units": units, "wall_s": round(wall, 1),
            "throughput_per_min": round(units / wall * 60, 2), "verdicts": verdicts,
            "units_per_host": per_host,
            "ship_cold_s": statistics.median(cold.values()) if cold else None,
            "ship_warm_s": statistics.median(warm.values()) if warm else None,
            "unit_wall_s": round(statistics.median(r.wall_s for _w, r in got), 1)}
        for where, r in got:
            if keep or r.verdict is not Verdict.SAME:
                from proofdiff.report.writer import write_report

                rdir = write_report(r, tmp / f"r{n}")
            if r.verdict is not Verdict.SAME:
                console.print(f"  [red]a unit on {where}: {r.verdict_line} ({rdir})[/red]",
                              highlight=False)
        if bisect:
            row["bisect_wall_s"], row["bisect_status"], row["bisect_probes"] = (
                lambda w, s, p: (round(w, 1), s, p))(*_bisect_wall(hosts.hosts_file,
                                                                    tmp / f"b{n}", faults))
        return row
    finally:
        gen.close()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hosts", type=int, nargs="+", default=[1, 2, 3],
                    help="host counts to try. Default: 1 2 3")
    ap.add_argument("--units", type=int, default=6,
                    help="differentials per host count (a multiple of each count). Default: 6")
    ap.add_argument("--gpu-bound-ms", type=int, default=3000,
                    help="refprover's idle wait per partition (GPU time stand-in). Default: 3000")
    ap.add_argument("--cpus-per-host", type=float, metavar="CORES",
                    help="give each host a CPU quota of its own (Docker's --cpus), the same for "
                    "every count, as hosts of a fleet have cores of their own. Default: none, "
                    "every host shares all of this machine's cores")
    ap.add_argument("--no-bisect", action="store_true", help="skip the bisection walls")
    ap.add_argument("--json", type=Path, help="also write the rows here")
    ap.add_argument("--keep", type=Path, help="keep the hosts files and reports in this folder "
                    "(default: a temporary one, removed)")
    args = ap.parse_args()
    console = Console()
    faults = f"gpu-bound-ms={args.gpu_bound_ms}"
    console.print(f"every daemon runs with REFPROVER_FAULTS={faults}: each partition waits "
                  f"{args.gpu_bound_ms} ms idle, standing in for GPU time (no GPU here)")
    quota = (f"each host a quota of {args.cpus_per_host} core(s)" if args.cpus_per_host
             else "the hosts share this machine's cores")
    console.print(quota)
    rows = []
    if args.keep:
        args.keep.mkdir(parents=True, exist_ok=True)
    with (contextlib.nullcontext(str(args.keep)) if args.keep
          else tempfile.TemporaryDirectory(prefix="fleet-scaleout-")) as tmp:
        workload = _workload(Path(tmp))
        counts = sorted(set(args.hosts))
        for n in counts:
            console.print(f"[bold]{n} host(s)[/bold]")
            rows.append(one_count(n, args.units, faults, workload, Path(tmp),
                                  bisect=not args.no_bisect and n in (counts[0], counts[-1]),
                                  console=console, keep=args.keep is not None,
                                  cpus=args.cpus_per_host))
    base = rows[0]["throughput_per_min"] / rows[0]["hosts"]
    table = Table(title=f"{args.units} differentials (bench vs prod, validity, 2 jobs of 1 "
                        f"partition, {faults}) over SSH hosts, {quota}")
    for col in ("hosts", "wall", "throughput", "efficiency", "units per host",
                "ship cold / warm per host", "bisection wall"):
        table.add_column(col, justify="right")
    for r in rows:
        r["efficiency"] = round(r["throughput_per_min"] / (r["hosts"] * base), 2)
        table.add_row(str(r["hosts"]), f"{r['wall_s']} s", f"{r['throughput_per_min']}/min",
                      f"{r['efficiency']:.2f}",
                      ", ".join(str(v) for v in r["units_per_host"].values()),
                      f"{r['ship_cold_s']:.1f} / {r['ship_warm_s']:.1f} s",
                      f"{r['bisect_wall_s']} s ({r['bisect_probes']} probes, "
                      f"{r['bisect_status']})" if "bisect_wall_s" in r else "")
    console.print(table)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))
    figures: dict[str, tuple[Value, str]] = {}
    for r in rows:
        n = r["hosts"]
        figures.update({f"{n} hosts wall": (r["wall_s"], "s"),
                        f"{n} hosts throughput": (r["throughput_per_min"], "units/min"),
                        f"{n} hosts efficiency": (r["efficiency"], ""),
                        f"{n} hosts shipping cold": (round(r["ship_cold_s"] or 0.0, 1), "s"),
                        f"{n} hosts shipping warm": (round(r["ship_warm_s"] or 0.0, 1), "s")})
        if "bisect_wall_s" in r:
            figures[f"{n} hosts bisection wall"] = (r["bisect_wall_s"], "s")
    write_record("fleet-scaleout", f"{args.units} differentials over 1 to {rows[-1]['hosts']} "
                 f"SSH hosts ({faults}; {quota})", figures)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
