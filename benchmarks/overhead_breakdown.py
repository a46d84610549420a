"""Where one run's time goes: the main job, phase by phase.

    python benchmarks/overhead_breakdown.py [--repeat N] [-- PROOFDIFF RUN ARGS...]

Each repeat starts a fresh interpreter that imports proofdiff, then runs ``proofdiff run`` (the
defaults: the refprover set, wpost-2k, the default suites, plus any extra arguments) with a
timer around each phase. Proving is the wall-clock union of every flow, whichever thread sent
it (the isolation flows run concurrently); every other row is its phase's own time on the main
thread, its nested phases (a daemon started lazily by an oracle) and any time a flow was in
flight cut out, so the rows add up to the run's wall.

Rows, in seconds (median over the repeats):

* interpreter: from the process start to the first line of this script's child, and from its
  last line to the exit (``proofdiff.cli.finish``, as the program exits);
* imports: ``import proofdiff.cli`` and what it pulls in;
* daemon start / daemon stop: ``start_daemon`` (create, start, first GetStatus answer) and
  ``Daemon.remove``;
* proving: ``prove_many``, while any flow is in flight (first submit to last answer);
* verification: the independent verifier (``ServedVerifier.verify``: one ``verify --serve``
  per profile for processes; ``ToolVerifier.verify``: a container per flow for docker);
* oracle <suite>: each suite's own judgement (preflight's probes included), less the phases
  above that it triggered;
* plan and build check: ``plan_runs`` (profiles resolved, the cached build found);
* machine facts: the host's CPUs, memory and GPUs for the record; assemble result: verdict,
  divergences, config deltas;
* report: rendering and writing the report (``write_view``);
* other: the rest of ``main`` (profile loading, the console, the session's bookkeeping).

Overhead = wall - proving. The caches must be warm (``make demo`` once first).
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

HERE = Path(__file__).resolve().parents[1]

# The child: times each phase with an exclusive per-thread stack, then prints one JSON line.
CHILD = r"""
import json, sys, threading, time
sys.path.insert(0, 'benchmarks')
from spans import union
t_start = time.perf_counter()
import proofdiff.cli
t_imported = time.perf_counter()
from proofdiff.core import differential as DF, plan as P, session as S
from proofdiff.runtime import daemon as D
from proofdiff.verify import served_verifier as SV, tool_verifier as V
from proofdiff.report import writer as W
from proofdiff.oracles import suite_table as T

events, local, MAIN = [], threading.local(), threading.get_ident()

def timed(name, fn):
    def wrapper(*a, **k):
        depth = getattr(local, "depth", 0)
        local.depth = depth + 1
        t0 = time.perf_counter()
        try:
            return fn(*a, **k)
        finally:
            local.depth = depth
            events.append((name, t0, time.perf_counter(), depth, threading.get_ident()))
    return wrapper

S.start_daemon = timed("daemon start", S.start_daemon)
D.Daemon.remove = timed("daemon stop", D.Daemon.remove)
S.prove_many = timed("proving", S.prove_many)
V.ToolVerifier.verify = timed("verification", V.ToolVerifier.verify)
SV.ServedVerifier.verify = timed("verification", SV.ServedVerifier.verify)
P.plan_runs = timed("plan and build check", P.plan_runs)
DF.machine_facts = timed("machine facts", DF.machine_facts)
DF.assemble = timed("assemble result", DF.assemble)
W.write_view = timed("report", W.write_view)
for name, suite in list(T.SUITES.items()):
    object.__setattr__(suite, "evaluate", timed(f"oracle {name}", suite.evaluate))
main = timed("other", proofdiff.cli.main)
try:
    rc = main(sys.argv[1:])
except SystemExit as exc:
    rc = exc.code
t_end = time.perf_counter()

def minus(spans, cut):
    # the parts of disjoint ``spans`` outside the disjoint, sorted ``cut``
    out = []
    for a, b in spans:
        for c, d in cut:
            if d <= a or c >= b:
                continue
            if c > a:
                out.append([a, c])
            a = max(a, d)
        if a < b:
            out.append([a, b])
    return out

# proving: the wall-clock union of every flow, whichever thread sent it; every other phase:
# its own time on the main thread (its nested phases cut out) outside that union
proving = union([(t0, t1) for n, t0, t1, _, _ in events if n == "proving"])
totals = {"proving": sum(b - a for a, b in proving)}
mine = [e for e in events if e[4] == MAIN and e[0] != "proving"]
for name, t0, t1, depth, _ in mine:
    kids = union([(c0, c1) for _, c0, c1, cd, _ in mine
                  if cd == depth + 1 and c0 >= t0 and c1 <= t1])
    own = minus(minus([[t0, t1]], kids), proving)
    totals[name] = totals.get(name, 0.0) + sum(b - a for a, b in own)
totals["imports"] = t_imported - t_start
print("BREAKDOWN " + json.dumps({"rc": rc, "child_s": t_end - t_start, "phases": totals}))
proofdiff.cli.finish(int(rc or 0))  # as the program ends
"""

ORDER = ("interpreter", "imports", "daemon start", "proving", "verification", "oracle preflight",
         "oracle validity", "oracle warmup", "oracle isolation", "oracle behaviour",
         "oracle timing", "plan and build check", "machine facts", "assemble result", "report",
         "daemon stop", "other")


def one_run(python: str, args: list[str], tmp: str, rid: str) -> dict[str, float]:
    """One ``proofdiff run`` in a fresh interpreter; its phases in s (``ORDER`` keys, ``wall``
    and ``rc``). Raises RuntimeError when the child printed no breakdown."""
    t0 = time.monotonic()
    proc = subprocess.run([python, "-c", CHILD, "run", "--report-dir", tmp, "--run-id", rid,
                           *args], cwd=HERE, capture_output=True, text=True, timeout=3600)
    wall = time.monotonic() - t0
    line = next((x for x in proc.stdout.splitlines() if x.startswith("BREAKDOWN ")), None)
    if line is None:
        raise RuntimeError(f"run {rid} printed no breakdown (exit {proc.returncode}):\n"
                           f"{proc.stderr[-2000:]}")
    doc = json.loads(line.removeprefix("BREAKDOWN "))
    return {"wall": wall, "rc": float(doc["rc"] or 0), "interpreter": wall - doc["child_s"],
            **doc["phases"]}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--python", default=sys.executable, help="interpreter. Default: this one")
    p.add_argument("--repeat", type=int, default=3, help="runs. Default: 3")
    p.add_argument("--json", type=Path, help="also write the per-run figures here")
    p.add_argument("args", nargs="*", help="extra `proofdiff run` arguments (after --)")
    a = p.parse_args()
    runs = []
    with tempfile.TemporaryDirectory(prefix="proofdiff-breakdown-") as tmp:
        for i in range(a.repeat):
            runs.append(one_run(a.python, a.args, tmp, f"breakdown-{i}"))
    if a.json:
        a.json.write_text(json.dumps(runs, indent=1))
    med = {k: statistics.median(r.get(k, 0.0) for r in runs) for k in (*ORDER, "wall")}
    table = Table(title=f"where a run's time goes (median of {len(runs)}; "
                        f"exit codes {sorted({int(r['rc']) for r in runs})})")
    for col in ("phase", "s", "% of wall"):
        table.add_column(col, justify="right" if col != "phase" else "left")
    for k in ORDER:
        table.add_row(k, f"{med[k]:.2f}", f"{100 * med[k] / med['wall']:.1f}")
    table.add_row("wall", f"{med['wall']:.2f}", "100.0")
    over = med["wall"] - med["proving"]
    Console().print(table)
    Console().print(f"overhead (wall - proving): {over:.2f} s = {100 * over / med['wall']:.1f} % "
                    f"of wall")
    write_record("run-overhead", f"where one proofdiff run's time goes, phase by phase (median "
                 f"of {len(runs)})", {**{k: (round(med[k], 2), "s") for k in (*ORDER, "wall")},
                                      "overhead": (round(over, 2), "s"),
                                      "overhead share": (round(100 * over / med["wall"], 1), "%")})
    return 0


if __name__ == "__main__":
    sys.exit(main())
