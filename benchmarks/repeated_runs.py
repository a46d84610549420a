"""Repeated default runs: their verdicts, what each of the behaviour suite's checks of
repeated work (:data:`CHECKS`) decided, and what each check cost.

    python benchmarks/repeated_runs.py --runs 5 [--expect behaviour/in-flight@prod] \\
        [--lock /tmp/proofdiff-heavy.lock] [--topic T] [-- PROOFDIFF RUN ARGS...]

Runs ``proofdiff run`` (the defaults: the refprover set, wpost-2k, the default suites, plus the
arguments after ``--``) ``--runs`` times, one after another, each under ``--lock`` (an flock,
taken per run, so other work on the machine runs between them). Per run it reads summary.json:

* the verdict (SAME is the clean build's only acceptable one);
* with ``--expect CHECK@PROFILE``, whether that check failed on that profile (a build with a
  planted fault: caught or missed);
* per check of :data:`CHECKS`, its outcome per profile and how long it took: an oracle record
  spans from the record before it to its own (``started_unix_s`` .. ``stopped_unix_s``), so a
  check that sends no flow costs its evaluation only; ``in-flight`` includes the ``admission``
  flow when it sent one (counted);
* the process readings the flows made (usage samples), and what one costs here (the median of
  200 reads of this process through :class:`proofdiff.runtime.process_probe.ProcessProbe`).

Writes one record (benchmarks/record.py): the verdicts or catches, and the median cost of each
check per profile, in seconds.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from record import write_record

HERE = Path(__file__).resolve().parents[1]
#: The checks of repeated work and load (suite/oracle): memory and handles across repeated
#: jobs, a lone job's parallelism, timings that add up, the control plane under load, admission.
CHECKS = ("behaviour/growth", "behaviour/parallel", "behaviour/timings",
          "behaviour/control-plane", "behaviour/in-flight")


def _probe_read_s() -> float:
    from proofdiff.runtime.process_probe import ProcessProbe

    probe = ProcessProbe(os.getpid(), "this process")
    times = []
    for _ in range(200):
        t0 = time.perf_counter()
        probe.read()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def _run(args: argparse.Namespace, rid: str, tmp: str) -> tuple[dict, float, int]:
    cmd = [args.python, "-m", "proofdiff", "run", "--report-dir", tmp, "--run-id", rid,
           *args.args]
    with open(args.lock, "a", encoding="utf-8") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            t0 = time.monotonic()
            proc = subprocess.run(cmd, cwd=args.repo, capture_output=True, text=True,
                                  timeout=args.timeout_s, check=False)
            wall = time.monotonic() - t0
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
    path = Path(tmp) / rid / "summary.json"
    summary = json.loads(path.read_text()) if path.is_file() else {}
    if not summary:
        print(proc.stdout[-2000:], proc.stderr[-2000:], file=sys.stderr)
    return summary, wall, proc.returncode


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--runs", type=int, default=5, help="runs. Default: 5")
    p.add_argument("--expect", metavar="CHECK@PROFILE", default="",
                   help="a check that must fail on a profile in every run (a planted fault). "
                        "Default: none (every run must be SAME)")
    p.add_argument("--lock", default="/tmp/proofdiff-heavy.lock",
                   help="the flock taken per run. Default: /tmp/proofdiff-heavy.lock")
    p.add_argument("--topic", default="", help="the record's topic. Default: clean-runs, or "
                   "catch-repeat with --expect")
    p.add_argument("--repo", type=Path, default=HERE, help="checkout to run. Default: this one")
    p.add_argument("--python", default=sys.executable, help="interpreter. Default: this one")
    p.add_argument("--timeout-s", type=float, default=3600.0,
                   help="one run's deadline, seconds. Default: 3600")
    p.add_argument("--keep", type=Path, default=None,
                   help="copy every run's report here. Default: none kept")
    p.add_argument("args", nargs="*", help="extra `proofdiff run` arguments (after --)")
    a = p.parse_args()
    want_check, _, want_profile = a.expect.partition("@")
    verdicts, walls, caught = [], [], 0
    cost: dict[str, list[float]] = defaultdict(list)
    outcomes: dict[str, list[str]] = defaultdict(list)
    usage_reads, admission = [], 0
    stamp = time.strftime("%Y%m%dT%H%M%S")
    with tempfile.TemporaryDirectory(prefix="proofdiff-repeat-") as tmp:
        for i in range(a.runs):
            rid = f"repeat-{stamp}-{i}"
            summary, wall, rc = _run(a, rid, tmp)
            verdict = summary.get("verdict", f"no summary (rc {rc})")
            verdicts.append(verdict)
            walls.append(wall)
            recs = summary.get("records", [])
            for r in recs:
                check = f"{r['suite']}/{r['oracle']}"
                if check in CHECKS:
                    key = f"{check}@{r['profile']}"
                    outcomes[key].append(r["outcome"])
                    cost[key].append(r["stopped_unix_s"] - r["started_unix_s"])
            if want_check and any(f"{r['suite']}/{r['oracle']}" == want_check
                                  and r["profile"] == want_profile
                                  and r["outcome"] in ("fail", "error") for r in recs):
                caught += 1
            flows = [f for run in summary.get("runs", []) for f in run.get("flows", [])]
            usage_reads.append(sum(len(f.get("usage", [])) for f in flows))
            admission += sum(f.get("name") == "admission" for f in flows)
            print(f"run {i}: {verdict} in {wall:.0f} s; {summary.get('verdict_line', '')[:300]}",
                  file=sys.stderr)
            if a.keep is not None:
                subprocess.run(["cp", "-r", str(Path(tmp) / rid), str(a.keep)], check=False)
    read_s = _probe_read_s()
    figures: dict[str, tuple[float | int | str | bool, str]] = {
        "runs": (a.runs, ""), "verdicts": (", ".join(verdicts), ""),
        "median run wall": (round(statistics.median(walls), 1), "s"),
        "process reads per run (median)": (statistics.median(usage_reads), ""),
        "one process read": (round(read_s * 1000, 3), "ms"),
        "admission flows sent": (admission, "")}
    if want_check:
        figures[f"{a.expect} caught"] = (f"{caught} of {a.runs}", "")
    else:
        figures["SAME"] = (f"{verdicts.count('SAME')} of {a.runs}", "")
    for key in sorted(cost):
        figures[f"{key} cost (median)"] = (round(statistics.median(cost[key]), 3), "s")
        figures[f"{key} outcomes"] = (", ".join(sorted(set(outcomes[key]))), "")
    what = (f"{a.runs} default runs with {a.expect} planted: caught" if want_check else
            f"{a.runs} default runs of the clean build: verdicts and what the over-time behaviour checks cost")
    write_record(a.topic or ("catch-repeat" if want_check else "clean-runs"), what, figures)
    ok = caught == a.runs if want_check else verdicts.count("SAME") == a.runs
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
