"""The power of the gate, measured: real default gates, end to end.

    python benchmarks/gate_power.py [--aa 20] [--slow 10] [--factor 1.05] [--profile NAME]...
                                    [--report-dir DIR]

Runs ``--aa`` gates of the reference image against itself (A/A: any FAIL is a false alarm, and
the gate must PASS) and ``--slow`` gates of a candidate with ``slow-prove=<factor>`` baked in
(every proof takes ``factor`` x as long, by real work: docs/fault-catalog.md) against the
reference image. Each is the whole :func:`proofdiff.gate.run_gate` as ``proofdiff gate`` runs it
(the candidate's differential, the verifier cross-check, the timing arm of every profile, the
decision), on the default profiles unless ``--profile`` is given. The candidate image is
derived locally the way tests/e2e/test_gate.py derives its candidates (``FROM`` the reference
image, one ``ENV REFPROVER_FAULTS=...`` line: its own digest, nothing pulled) and removed at
the end. The caches must be warm (``make image``).

Printed: per condition, the gates' decisions (PASS / FAIL / INCONCLUSIVE / ERROR), how many had
a DIFFERENT-slower timing metric on every profile, the median and largest gate wall time, the
median rounds per profile, and every gate's one line. The full table (20 + 10 gates, about
two hours on the 2-core host) is what the README's power table reports; ``--aa 1 --slow 1``
checks that the script works.
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

from proofdiff.core.plan import new_run_id, pin_artifacts
from proofdiff.gate import GateResult, run_gate
from proofdiff.model.run_options import RunOptions


def derive(client: docker.DockerClient, base: str, faults: str) -> str:
    """The reference image with ``ENV REFPROVER_FAULTS=faults`` (its own digest)."""
    slug = "".join(c if c.isalnum() else "-" for c in faults)
    tag = f"proofdiff/refprover:power-{slug}-{base.rsplit('-', 1)[-1]}"
    client.images.build(fileobj=io.BytesIO(f"FROM {base}\nENV REFPROVER_FAULTS={faults}\n"
                                           .encode()), tag=tag, rm=True, pull=False,
                        labels={"proofdiff.test": "gate-power"})
    return tag


def gates(name: str, candidate: str, baseline: str, n: int, opts: RunOptions,
          con: Console) -> list[GateResult]:
    """``n`` gates of ``candidate`` against ``baseline``, one after the other."""
    out = []
    for i in range(n):
        rid = f"power-{name.replace('=', '-').replace('/', '')}-{i + 1}-{new_run_id()}"
        res = run_gate(candidate, baseline, msgspec.structs.replace(opts, run_id=rid))
        out.append(res)
        con.print(f"{name} gate {i + 1}/{n}: exit {res.exit_code} in {res.wall_s:.0f} s: "
                  f"{res.decision_line}", markup=False, highlight=False)
        for t in res.timing:
            con.print("    " + f"{t.profile}: {t.rounds} rounds; " + ", ".join(
                f"{m.metric} {m.line()}" for m in t.metrics), markup=False, highlight=False)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--aa", type=int, default=20, help="A/A gates. Default: 20")
    ap.add_argument("--slow", type=int, default=10, help="slow-prove gates. Default: 10")
    ap.add_argument("--factor", type=float, default=1.05, help="slow-prove factor. Default: 1.05")
    ap.add_argument("--profile", action="append", default=[],
                    help="profile to gate (repeatable). Default: every default profile")
    ap.add_argument("--report-dir", type=Path, default=Path("/tmp/proofdiff-power"),
                    help="report root. Default: /tmp/proofdiff-power")
    a = ap.parse_args()
    con = Console(width=200)
    opts, reference = pin_artifacts(RunOptions.from_env(report_dir=str(a.report_dir),
                                                        select=tuple(a.profile)),
                                    ["wpost-2k"], reference=True, log=lambda _l: None)
    if reference is None:
        print("no reference image: run `make image` first", file=sys.stderr)
        return 3
    ref = reference.tag
    client = docker.from_env()
    t0 = time.monotonic()
    slow = f"slow-prove={a.factor:g}"
    made: list[str] = []
    results: dict[str, list[GateResult]] = {}
    try:
        results["A/A"] = gates("A/A", ref, ref, a.aa, opts, con)
        if a.slow:
            made.append(derive(client, ref, slow))
            results[slow] = gates(slow, made[-1], ref, a.slow, opts, con)
    finally:
        for tag in made:
            client.images.remove(tag, force=True)
    table = Table(title=f"proofdiff gate, default profiles, wpost-2k "
                        f"({time.strftime('%Y-%m-%d')}, {time.monotonic() - t0:.0f} s in all)")
    for col in ("condition", "gates", "PASS", "FAIL", "INCONCLUSIVE", "ERROR",
                "DIFFERENT slower on every profile", "median / max wall s", "median rounds"):
        table.add_column(col, justify="right")
    for name, got in results.items():
        if not got:
            continue
        n = len(got)
        c = Counter(r.decision.value for r in got)
        profiles = sorted({t.profile for r in got for t in r.timing})
        both = sum(all(any(m.regression for t in r.timing if t.profile == p for m in t.metrics)
                       for p in profiles) and bool(profiles) for r in got)
        rounds = ", ".join(f"{p} {statistics.median(t.rounds for r in got for t in r.timing if t.profile == p):.0f}"
                           for p in profiles)
        walls = [r.wall_s for r in got]
        table.add_row(name, str(n), *(f"{c[d]}/{n}" for d in ("pass", "fail", "inconclusive",
                                                               "error")),
                      f"{both}/{n}", f"{statistics.median(walls):.0f} / {max(walls):.0f}", rounds)
    con.print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
