"""The timing arm's noise on the real daemon: what ``proofdiff.stats.power``'s model is read from.

    python benchmarks/gate_noise.py [--profile prod] [--rounds 12] [--report-dir DIR]

Runs the gate's timing rounds (the reference image against itself, two warm daemons of one
profile, one batch of ``concurrency`` proofs per side per round in alternating order, every
proof verified) for a fixed number of rounds, without the sequential test, and prints per
metric of :data:`proofdiff.gate.timing_rounds.METRICS` the standard deviation of the per-round
log-ratios (plain, and the gate's: 10 %-trimmed, on the trimmed mean's scale; the warmup
round left out), and for the model: one proof's
median wall, the per-job and per-batch spread, the share of jobs more than 10 % above their
batch's median (spikes), the mean queue wait per job ahead in the batch, in proofs (stagger),
and the seconds per round.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from pathlib import Path

import msgspec

from proofdiff.core.plan import new_run_id, pin_artifacts
from proofdiff.gate.round_units import open_pair, pair_profiles
from proofdiff.gate.timing_rounds import METRICS, SideRound, draw_round, metrics_of
from proofdiff.model.jobs import FlowRecord, JobSpec
from proofdiff.model.profile_file import load_profiles
from proofdiff.model.run_options import RunOptions
from proofdiff.stats.paired import trimmed


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--profile", default="prod", help="refprover profile. Default: prod")
    ap.add_argument("--rounds", type=int, default=12, help="rounds, warmup included. Default: 12")
    ap.add_argument("--report-dir", type=Path, default=Path("/tmp/proofdiff-noise"))
    ap.add_argument("--record", type=Path, metavar="DIR",
                    help="write a JSON record (benchmarks/results' shape) of each metric's "
                         "per-pair noise, the seconds per round and the load average")
    ap.add_argument("--label", default="", help="what was measured (the record's title)")
    ap.add_argument("--tag", default="a-a", help="a short word for the record's file name")
    ap.add_argument("--samples", type=Path, metavar="FILE",
                    help="write every round's samples per metric (baseline, candidate, in "
                         "drawing order, the warmup round first) and the seconds per round as "
                         "JSON to FILE")
    a = ap.parse_args()
    opts, reference = pin_artifacts(RunOptions.from_env(report_dir=str(a.report_dir)),
                                    ["wpost-2k"], reference=True, log=lambda _l: None)
    if reference is None:
        print("no reference image: run `make image` first", file=sys.stderr)
        return 3
    p = load_profiles("refprover")[a.profile]
    pair = pair_profiles(a.profile, p, (reference.tag, reference.tag))
    wl = p.workload
    session = open_pair(pair, wl, msgspec.structs.replace(opts, run_id=f"noise-{new_run_id()}"))
    sides = (pair[0].name, pair[1].name)
    rounds: list[tuple[SideRound, SideRound]] = []
    secs: list[float] = []
    try:
        jobs = [j.name for j in session.workload(wl).jobs]
        for side in sides:
            session.run(side, wl)

        def send(side: str, specs: list[JobSpec], label: str) -> FlowRecord:
            return session.send(side, wl, specs, name="noise", label=label,
                                concurrency=len(specs))
        for k in range(a.rounds):
            t0 = time.monotonic()
            got = draw_round(send, k, jobs=jobs, sides=sides, concurrency=p.concurrency)
            if got.pair is None:
                print(got.stopped, file=sys.stderr)
                return 1
            rounds.append(got.pair)
            secs.append(time.monotonic() - t0)
            print(f"round {k}: {secs[-1]:.1f} s; walls " + " | ".join(
                " ".join(f"{j.wall_ms:.0f}" for j in side.batch.jobs)
                + f" lone {side.lone.jobs[0].wall_ms:.0f}" for side in got.pair), flush=True)
    finally:
        session.close()
    tested = rounds[1:]
    print(f"\n{a.profile} (concurrency {p.concurrency}), {len(tested)} tested rounds, "
          f"{statistics.median(secs[1:]):.1f} s per round (median)")
    for metric in metrics_of(p.concurrency):
        sample, which = METRICS[metric][2], METRICS[metric][3]
        d = [math.log(sample(c.flow(which)) / sample(b.flow(which))) for b, c in tested]
        print(f"  {metric}: log-ratio sd {statistics.stdev(d):.4f}, the gate's noise (10 %-"
              f"trimmed, on the trimmed mean's scale) {trimmed(d, 0.1)[3]:.4f}, mean "
              f"{statistics.fmean(d):+.4f}")
    if a.record:
        write_record(a.record, a.profile, a.label, {
            m: [math.log(METRICS[m][2](c.flow(METRICS[m][3]))
                         / METRICS[m][2](b.flow(METRICS[m][3]))) for b, c in tested]
            for m in metrics_of(p.concurrency)}, secs[1:], tag=a.tag)
    if a.samples:
        a.samples.write_text(json.dumps({
            "profile": a.profile, "concurrency": p.concurrency, "round_s": secs,
            "metrics": {m: {"left_samples": [METRICS[m][2](b.flow(METRICS[m][3]))
                                             for b, _ in rounds],
                            "right_samples": [METRICS[m][2](c.flow(METRICS[m][3]))
                                              for _, c in rounds]}
                        for m in metrics_of(p.concurrency)}}, indent=1))
    flows = [r.batch for b, c in tested for r in (b, c)]
    walls = [j.wall_ms for f in flows for j in f.jobs]
    meds = [statistics.median(j.wall_ms for j in f.jobs) for f in flows]
    spread = [math.log(j.wall_ms / statistics.median(x.wall_ms for x in f.jobs))
              for f in flows for j in f.jobs]
    spikes = sum(s > math.log(1.1) for s in spread) / len(spread)
    waits = sorted(j.timings.queue_wait_ms for f in flows for j in f.jobs)
    lones = [r.lone.jobs[0].wall_ms for b, c in tested for r in (b, c)]
    print(f"  model: proof_ms {statistics.median(walls):.0f}, batch spread (sd of log batch "
          f"median) {statistics.stdev(math.log(m) for m in meds):.4f}, job spread within a "
          f"batch {statistics.stdev(spread):.4f}, spikes {spikes:.3f}, queue waits (ms) "
          f"{waits[::max(1, len(waits) // 8)]}, lone_ms {statistics.median(lones):.0f}, "
          f"batch overhead (ms, median) "
          f"{statistics.median(f.wall_ms - max(j.wall_ms for j in f.jobs) for f in flows):.0f}")
    return 0


def write_record(into: Path, profile: str, label: str, d: dict[str, list[float]],
                 secs: list[float], tag: str = "a-a") -> Path:
    """One record (benchmarks/results' shape) of each metric's per-pair noise (plain, and the
    gate's: 10 %-trimmed on the trimmed mean's scale), the seconds per round and the host's
    load average when it ended."""
    import os
    import platform
    import subprocess

    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    figures: dict[str, dict[str, object]] = {
        "seconds per round": {"value": round(statistics.median(secs), 1), "unit": "s"},
        "rounds": {"value": len(secs), "unit": "tested rounds"},
        "load average (1, 5, 15 min)": {"value": " ".join(f"{x:.2f}" for x in os.getloadavg()),
                                        "unit": ""}}
    for m, xs in d.items():
        figures[f"{m} noise sd"] = {"value": round(statistics.stdev(xs), 5),
                                    "unit": "sd of a pair's log-ratio"}
        figures[f"{m} gate noise"] = {"value": round(trimmed(xs, 0.1)[3], 5),
                                      "unit": "10 %-trimmed, on the trimmed mean's scale"}
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True, cwd=Path(__file__).parents[1]).stdout.strip()
    doc = {"schema": 1, "topic": "gate-noise",
           "what": f"per-pair noise of the gate's timing rounds, {profile}, A/A"
                   + (f": {label}" if label else ""),
           "benchmark": "benchmarks/gate_noise.py " + " ".join(sys.argv[1:]), "date": now,
           "machine": f"{platform.node()}, {os.cpu_count()} cores, {platform.platform()}",
           "commit": commit, "figures": figures}
    into.mkdir(parents=True, exist_ok=True)
    path = into / f"gate-noise-{profile}-{tag}-{now[:10]}.json"
    path.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    return path


if __name__ == "__main__":
    sys.exit(main())
