"""The power of the gate, measured: real default gates, end to end.

    python benchmarks/gate_power.py [--aa 20] [--slow 10] [--factor 1.05] [--fast 0]
                                    [--profile NAME]... [--report-dir DIR]
                                    [--host-bins DIR [--cpus 0-3]] [--jsonl FILE]
                                    [--record DIR] [--keep DIR] [--order aa,slow,fast]
    python benchmarks/gate_power.py --merge FILE... [--record DIR]

Runs ``--aa`` gates of the reference image against itself (A/A: any FAIL is a false alarm, and
the gate must PASS) and ``--slow`` gates of a candidate with ``slow-prove=<factor>`` baked in
(every proof takes ``factor`` x as long, by real work: docs/design/fault-catalog.md) against the
reference image, and ``--fast`` gates of the reference image against the slow one (a candidate
``1/factor`` as fast: faster never fails). Each is the whole :func:`proofdiff.gate.run_gate` as
``proofdiff gate`` runs it
(the candidate's differential, the verifier cross-check, the timing arm of every profile, the
decision), on the default profiles unless ``--profile`` is given. The candidate image is
derived locally the way tests/e2e/test_gate.py derives its candidates (``FROM`` the reference
image, one ``ENV REFPROVER_FAULTS=...`` line: its own digest, nothing pulled) and removed at
the end. The caches must be warm (``make image``).

Printed: per condition, the gates' decisions (PASS / FAIL / INCONCLUSIVE / ERROR), how many had
a DIFFERENT-slower timing metric on every profile, the median and largest gate wall time, the
median rounds per profile, and every gate's one line. The full table (20 + 10 gates, hours of
proving) is what the gate-power records of docs/measurements.md report; ``--aa 1 --slow 1``
checks that the script works.

``--host-bins DIR`` gates host binaries instead, with no Docker (``proofdiff gate
--candidate-bin-dir``, the process runtime): A/A is DIR against itself, and the slow candidate
is a folder beside it whose daemon program is a two-line wrapper that adds
``slow-prove=<factor>`` to ``REFPROVER_FAULTS`` and runs DIR's program (its own digest; every
other program linked). ``--cpus`` pins the benchmark, and so every daemon and tool it starts,
to those cores (``os.sched_setaffinity``, which proofdiff's side-by-side placement also reads),
so that several benchmarks can share a large host on disjoint cores. ``--jsonl`` appends one
line per gate as it ends (a run cut short keeps what it finished), and ``--merge`` prints the
table over such files. ``--record DIR`` writes one JSON record per gate (the shape of
benchmarks/results/: machine, commit, decision, wall, rounds and each metric's verdict, ratio,
per-pair noise and MDE) and, with ``--merge``, one record of the table; ``--keep DIR`` copies
each gate's summary.json there (its paired samples: ``python -m proofdiff.stats.power`` reads
them). ``--order`` runs the conditions interleaved (``aa,slow,aa,slow,...``) rather than in
blocks, so that a drift of the host over the run reaches every condition.
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
from proofdiff.runtime.host import machine_facts

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
    """One gate as the table needs it (a ``--jsonl`` line): its decision, wall, rounds per
    profile and each metric's verdict, ratio, per-pair noise and MDE."""
    profiles = sorted({t.profile for t in res.timing if t.metrics})
    slower = bool(profiles) and any(m.regression for t in res.timing for m in t.metrics)
    return {"condition": name, "decision": res.decision.value, "wall_s": res.wall_s,
            "slower_on_a_metric": slower, "line": res.decision_line, "run_id": res.run_id,
            "rounds": {t.profile: t.rounds for t in res.timing},
            "placement": {t.profile: t.placement for t in res.timing},
            "metrics": {f"{t.profile}/{m.metric}": {
                "verdict": m.verdict.value, "n_pairs": m.n_pairs, "ratio": m.ratio,
                "ratio_ci": list(m.ratio_ci), "noise_sd": m.log_ratio_sd, "mde": m.mde}
                for t in res.timing for m in t.metrics}}


def machine_line(facts: dict[str, Any]) -> str:
    """``Intel Xeon ..., 2 cores, 24 GiB, Linux-...`` (+ the GPUs) from a gate's machine."""
    cpu = ""
    try:
        cpu = next(ln.split(":", 1)[1].strip() for ln in Path("/proc/cpuinfo").read_text()
                   .splitlines() if ln.startswith("model name"))
    except (OSError, StopIteration):
        pass
    gpus = ", ".join(g.get("name", "") for g in facts.get("gpus") or [])
    return (f"{cpu or 'cpu'}, {facts.get('cpus_usable')} cores, "
            f"{(facts.get('mem_total_bytes') or 0) / 2 ** 30:.0f} GiB, {facts.get('os', '')}"
            + (f", {gpus}" if gpus else ""))


def commit_of() -> str:
    """This checkout's short commit ('' outside git)."""
    import subprocess

    got = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=Path(__file__).parents[1],
                         capture_output=True, text=True)
    return got.stdout.strip()


def record(into: Path, r: dict[str, Any], res: GateResult) -> Path:
    """One gate's JSON record in ``into`` (benchmarks/results' shape)."""
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    figures: dict[str, dict[str, Any]] = {
        "decision": {"value": r["decision"], "unit": ""},
        "wall": {"value": r["wall_s"], "unit": "s"},
        **{f"rounds {p}": {"value": n, "unit": "rounds"} for p, n in r["rounds"].items()}}
    for k, m in r["metrics"].items():
        figures[f"{k} verdict"] = {"value": m["verdict"], "unit": ""}
        figures[f"{k} pairs"] = {"value": m["n_pairs"], "unit": "pairs"}
        for name, key, unit in (("ratio", "ratio", ""), ("noise sd", "noise_sd",
                                                         "log-ratio per pair"),
                                ("mde", "mde", "fraction")):
            if m[key] is not None:  # a record's values are numbers, strings or booleans
                figures[f"{k} {name}"] = {"value": m[key], "unit": unit}
    slug = "".join(c if c.isalnum() else "-" for c in r["condition"]).strip("-").lower()
    doc = {"schema": 1, "topic": "gate-power",
           "what": f"one default gate, {r['condition']} ({', '.join(r['rounds'])})",
           "benchmark": "benchmarks/gate_power.py " + " ".join(sys.argv[1:]), "date": now,
           "machine": machine_line(res.machine), "commit": res.commit.get("id", "")[:7]
           or commit_of(), "figures": figures, "notes": r["line"][:300]}
    into.mkdir(parents=True, exist_ok=True)
    path = into / f"gate-power-{slug}-{now.replace(':', '')}-{r['run_id'][-6:]}.json"
    path.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    return path


def gates(name: str, candidate: str, baseline: str, n: int, opts: RunOptions,
          con: Console, *, runtime: Runtime, jsonl: Path | None, rec: Path | None = None,
          keep: Path | None = None) -> list[dict[str, Any]]:
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
        if rec is not None:
            record(rec, out[-1], res)
        if keep is not None:
            keep.mkdir(parents=True, exist_ok=True)
            src = opts.report_root / rid / "summary.json"
            if src.is_file():
                (keep / f"{rid}.summary.json").write_bytes(src.read_bytes())
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
    ap.add_argument("--fast", type=int, default=0,
                    help="gates of the reference against the slow candidate (faster). Default: 0")
    ap.add_argument("--factor", type=float, default=1.05, help="slow-prove factor. Default: 1.05")
    ap.add_argument("--profile", action="append", default=[],
                    help="profile to gate (repeatable). Default: every default profile")
    ap.add_argument("--report-dir", type=Path, default=Path("/tmp/proofdiff-power"),
                    help="report root. Default: /tmp/proofdiff-power")
    ap.add_argument("--host-bins", type=Path, metavar="DIR",
                    help="gate this folder of host binaries (process runtime, no Docker)")
    ap.add_argument("--cpus", default="", help="pin to these cores, e.g. 0-3 or 0,2,4")
    ap.add_argument("--jsonl", type=Path, help="append one JSON line per gate to FILE")
    ap.add_argument("--record", type=Path, metavar="DIR", help="one JSON record per gate here")
    ap.add_argument("--keep", type=Path, metavar="DIR", help="copy each summary.json here")
    ap.add_argument("--order", choices=("blocks", "interleaved"), default="blocks",
                    help="the conditions in blocks, or one gate of each in turn")
    ap.add_argument("--lock", type=Path, metavar="FILE",
                    help="hold this lock file (flock) for each gate only, not the whole run")
    ap.add_argument("--stop-after-s", type=float, default=0.0,
                    help="start no gate after this many seconds (0: no limit)")
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
        if a.record:
            table_record(a.record, by, [f.name for f in a.merge])
        return 0
    if a.cpus:
        os.sched_setaffinity(0, cpu_list(a.cpus))
    t0 = time.monotonic()
    slow = f"slow-prove={a.factor:g}"
    fast = f"faster (reference vs {slow})"
    made: list[str] = []
    client = None
    if a.host_bins:
        opts = RunOptions.from_env(report_dir=str(a.report_dir), select=tuple(a.profile),
                                   bin_dir=str(a.host_bins.resolve()))
        ref = str(a.host_bins.resolve())
        rt = Runtime.PROCESS
        cand = str(derive_host(a.host_bins, slow, a.report_dir / f"bins-{slow}")) \
            if a.slow or a.fast else ""
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
        rt = Runtime.DOCKER
        cand = ""
        if a.slow or a.fast:
            cand = derive(client, ref, slow)
            made.append(cand)
    plan = {"A/A": (ref, ref, a.aa), slow: (cand, ref, a.slow), fast: (ref, cand, a.fast)}
    todo = [k for k, (_, _, n) in plan.items() for _ in range(n)]
    if a.order == "interleaved":
        left = {k: n for k, (_, _, n) in plan.items()}
        todo = []
        while any(left.values()):
            for k in plan:
                if left[k]:
                    todo.append(k)
                    left[k] -= 1
    results: dict[str, list[dict[str, Any]]] = {k: [] for k in plan}
    try:
        for k in todo:
            if a.stop_after_s and time.monotonic() - t0 > a.stop_after_s:
                con.print(f"stopped: --stop-after-s {a.stop_after_s:g} reached; "
                          f"{len(todo) - sum(map(len, results.values()))} gate(s) not run")
                break
            c, b, _ = plan[k]
            with _locked(a.lock):
                results[k] += gates(k, c, b, 1, opts, con, runtime=rt, jsonl=a.jsonl,
                                    rec=a.record, keep=a.keep)
    finally:
        if client is not None:
            for tag in made:
                client.images.remove(tag, force=True)
    cores = len(os.sched_getaffinity(0))
    con.print(table({k: v for k, v in results.items() if v},
                    f"{time.strftime('%Y-%m-%d')}, {cores} cores, "
                    f"{time.monotonic() - t0:.0f} s in all"))
    return 0


def _locked(path: Path | None) -> Any:
    """A context holding ``flock`` on ``path`` (nothing when ``None``)."""
    import contextlib
    import fcntl

    @contextlib.contextmanager
    def held() -> Any:
        if path is None:
            yield
            return
        with path.open("a") as f:
            fcntl.flock(f, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(f, fcntl.LOCK_UN)
    return held()


def table_record(into: Path, results: dict[str, list[dict[str, Any]]],
                 sources: list[str]) -> Path:
    """One record of the merged table: per condition, the decisions' counts, the median and
    largest wall, the median rounds per profile and each metric's median per-pair noise."""
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    figures: dict[str, dict[str, Any]] = {}
    for name, got in results.items():
        n = len(got)
        for d in ("pass", "fail", "inconclusive", "error"):
            figures[f"{name} {d}"] = {"value": f"{sum(r['decision'] == d for r in got)}/{n}",
                                      "unit": "gates"}
        walls = [r["wall_s"] for r in got]
        figures[f"{name} median wall"] = {"value": statistics.median(walls), "unit": "s"}
        figures[f"{name} max wall"] = {"value": max(walls), "unit": "s"}
        for p in sorted({p for r in got for p in r["rounds"]}):
            figures[f"{name} median rounds {p}"] = {"value": statistics.median(
                r["rounds"][p] for r in got if p in r["rounds"]), "unit": "rounds"}
        for m in sorted({m for r in got for m in r.get("metrics", {})}):
            sds = [r["metrics"][m]["noise_sd"] for r in got
                   if m in r.get("metrics", {}) and r["metrics"][m]["noise_sd"] is not None]
            if sds:
                figures[f"{name} {m} median noise sd"] = {"value": statistics.median(sds),
                                                          "unit": "log-ratio per pair"}
    doc = {"schema": 1, "topic": "gate-power",
           "what": "the power table of real default gates: " + ", ".join(
               f"{k} x{len(v)}" for k, v in results.items()),
           "benchmark": "benchmarks/gate_power.py " + " ".join(sys.argv[1:]), "date": now,
           "machine": machine_line(machine_facts()),
           "commit": commit_of(), "figures": figures, "notes": "merged from " + ", ".join(sources)}
    into.mkdir(parents=True, exist_ok=True)
    path = into / f"gate-power-table-{now[:10]}.json"
    path.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    return path


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
                "WORSE on a metric", "median / max wall s", "median rounds"):
        table.add_column(col, justify="right")
    for name, got in results.items():
        if not got:
            continue
        n = len(got)
        c = Counter(r["decision"] for r in got)
        profiles = sorted({p for r in got for p in r["rounds"]})
        both = sum(r.get("slower_on_a_metric", r.get("slower_on_every_profile", False))
                   for r in got)
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
