"""The power of the gate, measured: real default gates, end to end.

    python benchmarks/gate_power.py [--aa 20] [--slow 10] [--factor 1.05] [--profile NAME]...
                                    [--report-dir DIR] [--host-bins DIR [--cpus 0-3]]
                                    [--jsonl FILE]
    python benchmarks/gate_power.py --merge FILE...

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

``--host-bins DIR`` gates host binaries instead, with no Docker (``proofdiff gate
--candidate-bin-dir``, the process runtime): A/A is DIR against itself, and the slow candidate
is a folder beside it whose daemon program is a two-line wrapper that adds
``slow-prove=<factor>`` to ``REFPROVER_FAULTS`` and runs DIR's program (its own digest; every
other program linked). ``--cpus`` pins the benchmark, and so every daemon and tool it starts,
to those cores (``os.sched_setaffinity``, which proofdiff's side-by-side placement also reads),
so that several benchmarks can share a large host on disjoint cores. ``--jsonl`` appends one
line per gate as it ends (a run cut short keeps what it finished), and ``--merge`` prints the
table over such files.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import statistics
import sys
import time
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec
from rich.console import Console
from rich.table import Table

from proofdiff.core.plan import new_run_id, pin_artifacts
from proofdiff.gate import GateResult, run_gate
from proofdiff.model.choices import Runtime
from proofdiff.model.profile import DEFAULT_BINARY
from proofdiff.model.run_options import RunOptions
from record import Value, write_record

if TYPE_CHECKING:
    import docker


def derive(client: docker.DockerClient, base: str, faults: str) -> str:
    """The reference image with ``ENV REFPROVER_FAULTS=faults`` (its own digest)."""
    slug = "".join(c if c.isalnum() else "-" for c in faults)
    tag = f"proofdiff/refprover:power-{slug}-{base.rsplit('-', 1)[-1]}"
    client.images.build(fileobj=io.BytesIO(f"FROM {base}\nENV REFPROVER_FAULTS={faults}\n"
                                           .encode()), tag=tag, rm=True, pull=False,
                        labels={"proofdiff.test": "gate-power"})
    return tag


def derive_host(bins: Path, faults: str, into: Path) -> Path:
    """A copy of the build in ``bins`` whose daemon program runs with ``faults`` added to
    ``REFPROVER_FAULTS`` (a shell wrapper, so its own digest); the other programs linked."""
    into.mkdir(parents=True, exist_ok=True)
    for f in bins.iterdir():
        dst = into / f.name
        if dst.exists() or dst.is_symlink():
            dst.unlink()
        if f.name == DEFAULT_BINARY:
            dst.write_text(f'#!/bin/sh\nREFPROVER_FAULTS="${{REFPROVER_FAULTS:+$REFPROVER_FAULTS,}}'
                           f'{faults}" exec {f.resolve()} "$@"\n')
            dst.chmod(0o755)
        else:
            dst.symlink_to(f.resolve())
    return into


def row(name: str, res: GateResult) -> dict[str, Any]:
    """One gate as the table needs it (a ``--jsonl`` line)."""
    profiles = sorted({t.profile for t in res.timing})
    slower = bool(profiles) and all(
        any(m.regression for t in res.timing if t.profile == p for m in t.metrics)
        for p in profiles)
    return {"condition": name, "decision": res.decision.value, "wall_s": res.wall_s,
            "slower_on_every_profile": slower, "line": res.decision_line,
            "rounds": {t.profile: t.rounds for t in res.timing}}


def gates(name: str, candidate: str, baseline: str, n: int, opts: RunOptions,
          con: Console, *, runtime: Runtime, jsonl: Path | None) -> list[dict[str, Any]]:
    """``n`` gates of ``candidate`` against ``baseline``, one after the other."""
    out = []
    for i in range(n):
        rid = f"power-{name.replace('=', '-').replace('/', '')}-{i + 1}-{new_run_id()}"
        res = run_gate(candidate, baseline, msgspec.structs.replace(opts, run_id=rid),
                       runtime=runtime, log=lambda line: print(
                           f"  {time.strftime('%H:%M:%S')} {line}", file=sys.stderr, flush=True))
        out.append(row(name, res))
        if jsonl is not None:
            with jsonl.open("a", encoding="utf-8") as f:
                f.write(json.dumps(out[-1]) + "\n")
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
    ap.add_argument("--host-bins", type=Path, metavar="DIR",
                    help="gate this folder of host binaries (process runtime, no Docker)")
    ap.add_argument("--cpus", default="", help="pin to these cores, e.g. 0-3 or 0,2,4")
    ap.add_argument("--jsonl", type=Path, help="append one JSON line per gate to FILE")
    ap.add_argument("--merge", type=Path, nargs="+", metavar="FILE",
                    help="print the table over these --jsonl files; run nothing")
    a = ap.parse_args()
    con = Console(width=200)
    if a.merge:
        rows = [json.loads(ln) for f in a.merge for ln in f.read_text().splitlines() if ln]
        by: dict[str, list[dict[str, Any]]] = {}
        for r in rows:
            by.setdefault(r["condition"], []).append(r)
        con.print(table(by, f"merged from {len(a.merge)} file(s)"))
        return 0
    if a.cpus:
        os.sched_setaffinity(0, cpu_list(a.cpus))
    t0 = time.monotonic()
    slow = f"slow-prove={a.factor:g}"
    results: dict[str, list[dict[str, Any]]] = {}
    if a.host_bins:
        opts = RunOptions.from_env(report_dir=str(a.report_dir), select=tuple(a.profile),
                                   bin_dir=str(a.host_bins.resolve()))
        bins = str(a.host_bins.resolve())
        rt = Runtime.PROCESS
        results["A/A"] = gates("A/A", bins, bins, a.aa, opts, con, runtime=rt, jsonl=a.jsonl)
        if a.slow:
            cand = derive_host(a.host_bins, slow, a.report_dir / f"bins-{slow}")
            results[slow] = gates(slow, str(cand), bins, a.slow, opts, con, runtime=rt,
                                   jsonl=a.jsonl)
    else:
        import docker

        opts, reference = pin_artifacts(RunOptions.from_env(report_dir=str(a.report_dir),
                                                            select=tuple(a.profile)),
                                        ["wpost-2k"], reference=True, log=lambda _l: None)
        if reference is None:
            print("no reference image: run `make image` first", file=sys.stderr)
            return 3
        ref = reference.tag
        client = docker.from_env()
        made: list[str] = []
        rt = Runtime.DOCKER
        try:
            results["A/A"] = gates("A/A", ref, ref, a.aa, opts, con, runtime=rt, jsonl=a.jsonl)
            if a.slow:
                made.append(derive(client, ref, slow))
                results[slow] = gates(slow, made[-1], ref, a.slow, opts, con, runtime=rt,
                                       jsonl=a.jsonl)
        finally:
            for tag in made:
                client.images.remove(tag, force=True)
    cores = len(os.sched_getaffinity(0))
    con.print(table(results, f"{time.strftime('%Y-%m-%d')}, {cores} cores, "
                             f"{time.monotonic() - t0:.0f} s in all"))
    write_record("gate-power", f"whole default gates of the reference image: A/A and "
                 f"{slow} ({'host binaries' if a.host_bins else 'images'}, {cores} cores)",
                 power_figures(results))
    return 0


def power_figures(results: dict[str, list[dict[str, Any]]]) -> dict[str, tuple[Value, str]]:
    """The record's figures of :func:`table`'s rows: per condition, the gates and each
    decision's count, the DIFFERENT-slower count and the median and largest wall."""
    out: dict[str, tuple[Value, str]] = {}
    for name, got in results.items():
        if not got:
            continue
        c = Counter(r["decision"] for r in got)
        walls = [r["wall_s"] for r in got]
        out[f"{name} gates"] = (len(got), "")
        out.update({f"{name} {d}": (c[d], "gates") for d in ("pass", "fail", "inconclusive",
                                                                "error")})
        out[f"{name} DIFFERENT slower on every profile"] = (
            sum(r["slower_on_every_profile"] for r in got), "gates")
        out[f"{name} wall median"] = (round(statistics.median(walls)), "s")
        out[f"{name} wall max"] = (round(max(walls)), "s")
    return out


def cpu_list(text: str) -> set[int]:
    """``0-3,8`` -> {0, 1, 2, 3, 8}."""
    out: set[int] = set()
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        out.update(range(int(lo), int(hi or lo) + 1))
    return out


def table(results: dict[str, list[dict[str, Any]]], title: str) -> Table:
    """The power table over the gates' rows, one row per condition."""
    table = Table(title=f"proofdiff gate, default profiles, wpost-2k ({title})")
    for col in ("condition", "gates", "PASS", "FAIL", "INCONCLUSIVE", "ERROR",
                "DIFFERENT slower on every profile", "median / max wall s", "median rounds"):
        table.add_column(col, justify="right")
    for name, got in results.items():
        if not got:
            continue
        n = len(got)
        c = Counter(r["decision"] for r in got)
        profiles = sorted({p for r in got for p in r["rounds"]})
        both = sum(r["slower_on_every_profile"] for r in got)
        rounds = ", ".join(
            f"{p} {statistics.median(r['rounds'][p] for r in got if p in r['rounds']):.0f}"
            for p in profiles)
        walls = [r["wall_s"] for r in got]
        table.add_row(name, str(n), *(f"{c[d]}/{n}" for d in ("pass", "fail", "inconclusive",
                                                               "error")),
                      f"{both}/{n}", f"{statistics.median(walls):.0f} / {max(walls):.0f}", rounds)
    return table


if __name__ == "__main__":
    sys.exit(main())
