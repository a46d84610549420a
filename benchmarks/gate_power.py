"""The power of the gate's timing verdict, measured on the real daemon.

    python benchmarks/gate_power.py [--profile bench] [--aa-reps 20] [--reps 10]
                                    [--factor 1.05 --factor 1.10 --factor 1.25]

Runs the gate's timing arm (:func:`proofdiff.gate.timing_rounds.measure_profile`, the paired sequential
verdict of :mod:`proofdiff.stats.paired`) on the reference image against itself (A/A, every
difference found is a false alarm) and against candidates with ``slow-prove=<factor>`` (every
proof takes ``factor`` x as long, by real work: a true slowdown of ``factor - 1``). Candidates
are images derived locally (``FROM`` the reference image, one ``ENV`` line), removed at the end.

Each repetition is one independent timing arm on the same two warm daemons: fresh rounds,
its own warmup pair, its own sequential test. Printed per condition and metric: the rates of
DIFFERENT (slower) / SAME / INCONCLUSIVE, the median pairs the verdict used (warmup included)
and the median wall of one arm; and the gate's decision over its metrics (FAIL if any metric is
a regression, PASS if all are SAME, else INCONCLUSIVE). The caches must be warm (``make image``).
"""

from __future__ import annotations

import argparse
import io
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

import docker
import msgspec
from rich.console import Console
from rich.table import Table

from proofdiff.core.plan import new_run_id, pin_artifacts, plan_runs
from proofdiff.core.session import Session
from proofdiff.gate.gate_result import ProfileTiming
from proofdiff.gate.timing_rounds import measure_profile
from proofdiff.model.jobs import JobSpec
from proofdiff.model.profile_file import load_profiles
from proofdiff.model.run_options import RunOptions


def derive(client: docker.DockerClient, base: str, faults: str) -> str:
    """The reference image with ``ENV REFPROVER_FAULTS=faults`` (its own digest)."""
    tag = f"proofdiff/refprover:power-{faults.replace('=', '-').replace('.', '')}"
    client.images.build(fileobj=io.BytesIO(f"FROM {base}\nENV REFPROVER_FAULTS={faults}\n"
                                           .encode()), tag=tag, rm=True, pull=False,
                        labels={"proofdiff.test": "gate-power"})
    return tag


def condition(name: str, baseline: str, candidate: str, *, profile: str, reps: int,
              opts: RunOptions, log: Console) -> list[ProfileTiming]:
    """``reps`` timing arms of ``profile``, ``baseline`` vs ``candidate``, on one session."""
    p = load_profiles("refprover")[profile]
    pair = {f"{profile}-baseline": msgspec.structs.replace(p, name=f"{profile}-baseline",
                                                           image=baseline),
            f"{profile}-candidate": msgspec.structs.replace(p, name=f"{profile}-candidate",
                                                            image=candidate)}
    wl = p.workload
    plan = plan_runs(pair, msgspec.structs.replace(
        opts, workloads=(wl,), suites=("validity",), run_id=f"power-{new_run_id()}"),
        log=lambda _l: None)[0]
    session = Session(plan, log=lambda _l: None)
    out: list[ProfileTiming] = []
    try:
        jobs = [j.name for j in session.workload(wl).jobs]

        def send(side: str, specs: list[JobSpec], label: str):  # type: ignore[no-untyped-def]
            return session.send(side, wl, specs, name="power", label=label,
                                concurrency=len(specs))

        for i in range(reps):
            t = measure_profile(send, profile=profile, workload=wl, jobs=jobs,
                                sides=tuple(pair), concurrency=p.concurrency,  # type: ignore[arg-type]
                                deadline=time.monotonic() + 900, floors=p.timing_floor)
            out.append(t)
            log.print(f"{name} rep {i + 1}/{reps}: " + ", ".join(
                f"{m.metric} {m.verdict}{'/' + m.direction if m.direction else ''} "
                f"({m.n_pairs}+{m.warmup_pairs} pairs, ratio {m.ratio or float('nan'):.3f})"
                for m in t.metrics) + f"; {t.wall_s:.0f} s" + (f"; {t.stopped}" if t.stopped else ""))
    finally:
        session.close()
    return out


def decision(t: ProfileTiming) -> str:
    """The gate's decision over one arm's metrics (proofdiff.gate.gating.decide, timing only)."""
    if any(m.regression for m in t.metrics):
        return "FAIL"
    if t.metrics and all(m.verdict == "SAME" for m in t.metrics):
        return "PASS"
    return "INCONCLUSIVE"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--profile", default="bench", help="refprover profile. Default: bench")
    ap.add_argument("--aa-reps", type=int, default=20, help="A/A repetitions. Default: 20")
    ap.add_argument("--reps", type=int, default=10, help="repetitions per factor. Default: 10")
    ap.add_argument("--factor", type=float, action="append", help="slow-prove factor, "
                    "repeatable. Default: 1.05, 1.10, 1.25")
    ap.add_argument("--report-dir", type=Path, default=Path("/tmp/proofdiff-power"))
    a = ap.parse_args()
    con = Console()
    opts, reference = pin_artifacts(RunOptions.from_env(report_dir=str(a.report_dir)),
                                    ["wpost-2k"], reference=True, log=lambda _l: None)
    assert reference is not None, "no reference image: run `make image` first"
    ref = reference.tag
    client = docker.from_env()
    made: list[str] = []
    results: dict[str, tuple[float, list[ProfileTiming]]] = {}
    t0 = time.monotonic()
    try:
        results["A/A"] = (0.0, condition("A/A", ref, ref, profile=a.profile, reps=a.aa_reps,
                                         opts=opts, log=con))
        for f in a.factor or [1.05, 1.10, 1.25]:
            tag = derive(client, ref, f"slow-prove={f:g}")
            made.append(tag)
            results[f"slow-prove={f:g}"] = (f - 1.0, condition(
                f"slow-prove={f:g}", ref, tag, profile=a.profile, reps=a.reps, opts=opts,
                log=con))
    finally:
        for tag in made:
            client.images.remove(tag, force=True)
    table = Table(title=f"gate timing power, profile {a.profile}, wpost-2k "
                        f"({time.strftime('%Y-%m-%d')}, {time.monotonic() - t0:.0f} s in all)")
    for col in ("condition", "metric", "reps", "DIFFERENT | FAIL", "SAME | PASS", "INCONCLUSIVE",
                "median pairs", "median arm wall s"):
        table.add_column(col, justify="right")
    for name, (_effect, arms) in results.items():
        metrics = list(dict.fromkeys(m.metric for t in arms for m in t.metrics))
        for metric in [*metrics, "gate decision"]:
            if metric == "gate decision":
                c = Counter(decision(t) for t in arms)
                cells = (c["FAIL"], c["PASS"], c["INCONCLUSIVE"])
                pairs = [t.rounds for t in arms]
            else:
                ms = [m for t in arms for m in t.metrics if m.metric == metric]
                c = Counter(m.verdict for m in ms)
                cells = (c["DIFFERENT"], c["SAME"], c["INCONCLUSIVE"])
                pairs = [m.n_pairs + m.warmup_pairs for m in ms]
            n = len(arms)
            table.add_row(name, metric, str(n), *(f"{k}/{n} ({100 * k / n:.0f} %)" for k in cells),
                          f"{statistics.median(pairs):.0f}" if pairs else "-",
                          f"{statistics.median(t.wall_s for t in arms):.0f}")
    con.print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
