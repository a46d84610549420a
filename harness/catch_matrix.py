"""``proofdiff catch-matrix``: the fault catalog self-test as one command (fault x suite).

Runs ``proofdiff run`` once on the clean image and once per fault switch (DESIGN.md section 4),
the fault set on the faulty profile only (``prod``: ``--set prod.env.REFPROVER_FAULTS=...``),
each in its own process with a deadline, then reads every run's ``summary.json`` and prints
which suite's oracles failed on which profile. A fault row passes when the suite and oracle
meant for it failed on the faulty profile and the baseline profile stayed clean; the clean row
passes when nothing failed anywhere. The matrix goes into a report of its own
(``<report dir>/<matrix run id>/summary.json`` key ``catch_matrix``, and ``index.html``).

    proofdiff catch-matrix                          # every fault, every suite (~17 min, 2 cores)
    proofdiff catch-matrix --targeted               # each fault with only its suite(s)
    proofdiff catch-matrix --fault shared-witness --repeat-clean 5
    proofdiff catch-matrix --clean-only --repeat-clean 5    # A/A false alarms of 5 clean runs
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

__all__ = ["CATALOG", "Case", "add_arguments", "cells_of", "judge_row", "run_matrix"]

REPO = Path(__file__).resolve().parents[1]
SUITES = ("preflight", "validity", "warmup", "isolation", "timing")
#: Deadline of one ``proofdiff run`` of the matrix, seconds.
CASE_TIMEOUT_S = 1800.0


@dataclass(frozen=True)
class Case:
    """One row: ``name``; ``faults`` = REFPROVER_FAULTS on the faulty profile ('' = clean);
    extra ``--set`` overrides (applied to the faulty profile's name ``{p}``); the suite and the
    oracle names (alternatives) meant to catch it; the suites of a ``--targeted`` run; why."""

    name: str
    faults: str = ""
    sets: tuple[str, ...] = ()
    meant: tuple[str, tuple[str, ...]] | None = None
    targeted: tuple[str, ...] = SUITES
    why: str = ""


#: The catalog. Validity cells are named by the run's outcome label (invalid | failed | error).
CATALOG: tuple[Case, ...] = (
    Case("clean", why="nothing may fail on the clean image"),
    Case("partition-race", "partition-race", meant=("validity", ("invalid",)),
         targeted=("validity",), why="shared scratch buffer: some partition proofs invalid"),
    Case("shared-assembler", "shared-assembler", meant=("validity", ("invalid", "failed")),
         targeted=("validity",), why="one assembler per request id: colliding ids mix partitions"),
    Case("no-self-check", "partition-race,no-self-check",
         sets=("{p}.config.pipeline.self_check=true",), meant=("validity", ("invalid",)),
         targeted=("validity",), why="with self_check on, bad proofs must come back FAILED; "
         "the fault returns them COMPLETED (partition-race makes the bad proofs)"),
    Case("param-path-default", "param-path-default", meant=("preflight", ("params",)),
         targeted=("preflight",), why="the daemon reads /data/zk/params whatever the config says"),
    Case("serialize-pipeline", "serialize-pipeline", meant=("timing", ("concurrency",)),
         targeted=("timing",), why="a global lock per job: correct proofs, one job at a time"),
    Case("queue-deadlock", "queue-deadlock", sets=("{p}.timeout_s=40",),
         meant=("isolation", ("hang",)), targeted=("isolation",),
         why="jobs submitted while >= 2 are unfinished are never answered"),
    Case("shared-witness", "shared-witness", meant=("isolation", ("distinct-inputs",)),
         targeted=("isolation",), why="concurrent distinct jobs share partition proofs"),
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The ``catch-matrix`` subcommand's options."""
    p.add_argument("--fault", metavar="NAME", action="append", default=[],
                   choices=[c.name for c in CATALOG if c.faults],
                   help="fault to run (repeatable). Default: every fault of the catalog")
    p.add_argument("--repeat-clean", metavar="N", type=int, default=1,
                   help="clean-image runs (A/A false alarms are counted over them). Default: 1")
    p.add_argument("--clean-only", action="store_true",
                   help="only the clean-image row(s), no fault (with --repeat-clean: the A/A "
                   "false-alarm measurement). Default: clean and faults")
    p.add_argument("--targeted", action="store_true",
                   help="run each fault with only the suite(s) meant for it (faster); the clean "
                   "row still runs every suite. Default: every suite for every row")
    p.add_argument("--faulty-profile", metavar="NAME", default="prod",
                   help="the profile that gets the fault. Default: prod")
    p.add_argument("--profiles", metavar="FILE", type=Path,
                   default=REPO / "profiles" / "refprover.toml", help="profile file. Default: "
                   "profiles/refprover.toml (its first profile is the baseline)")
    p.add_argument("--image", metavar="TAG", help="image for every profile. Default: the build's")
    p.add_argument("--set", metavar="PROFILE.KEY=VALUE", action="append", default=[],
                   dest="overrides", help="extra override for every row (repeatable)")
    p.add_argument("--report-dir", metavar="DIR", type=Path, default=REPO / "reports",
                   help="report root. Default: reports/")
    p.add_argument("--run-id", metavar="ID", help="matrix run id. Default: matrix-<new id>")


def cells_of(summary: dict[str, Any]) -> dict[str, list[dict[str, str]]]:
    """Failed oracles by suite: ``{suite: [{oracle, profile}]}`` (validity: outcome labels;
    run-level errors under ``errors``)."""
    cells: dict[str, list[dict[str, str]]] = {}
    for o in summary.get("outcomes", []):
        if o["outcome"] != "valid":
            cells.setdefault("validity", []).append({"oracle": o["outcome"],
                                                     "profile": o["profile"]})
    for r in summary.get("oracles", []):
        if r["outcome"] == "fail":
            cells.setdefault(r["suite"], []).append({"oracle": r["oracle"],
                                                     "profile": r["profile"] or "all"})
    for e in summary.get("errors", []):
        cells.setdefault("errors", []).append({"oracle": e.splitlines()[0][:80], "profile": "-"})
    return cells


def judge_row(case: Case, cells: dict[str, list[dict[str, str]]], *, baseline: str,
              faulty: str) -> tuple[bool, str]:
    """(ok, verdict text) of one row (see the module docstring)."""
    if case.meant is None:
        bad = [f"{s}/{c['oracle']} [{c['profile']}]" for s, cs in cells.items() for c in cs]
        return (not bad, "clean" if not bad else "FALSE ALARM: " + ", ".join(bad))
    suite, oracles = case.meant
    caught = any(c["oracle"] in oracles and c["profile"] == faulty
                 for c in cells.get(suite, []))
    base_bad = [f"{s}/{c['oracle']}" for s, cs in cells.items() for c in cs
                if c["profile"] == baseline]
    if not caught:
        return False, f"MISSED by {suite}/{'|'.join(oracles)}"
    if base_bad:
        return False, f"caught, but the baseline failed too: {', '.join(base_bad)}"
    return True, f"caught by {suite}/{'|'.join(oracles)}"


def _run_case(case: Case, args: argparse.Namespace, run_id: str, suites: tuple[str, ...],
              console: Console) -> tuple[int, float, dict[str, Any]]:
    p = args.faulty_profile
    cmd = [sys.executable, "-m", "harness.cli", "run", "--profiles", str(args.profiles),
           "--report-dir", str(args.report_dir), "--run-id", run_id]
    cmd += ["--suite", "all"] if set(suites) == set(SUITES) else [
        x for s in suites for x in ("--suite", s)]
    if args.image:
        cmd += ["--image", args.image]
    for s in args.overrides:
        cmd += ["--set", s]
    if case.faults:
        cmd += ["--set", f"{p}.env.REFPROVER_FAULTS={case.faults}"]
    for s in case.sets:
        cmd += ["--set", s.format(p=p)]
    console.print(f"[bold]{case.name}[/bold]: {' '.join(cmd[3:])}")
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=CASE_TIMEOUT_S)
        rc = proc.returncode
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGTERM)  # the run's own handler reaps its containers
        try:
            out, _ = proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            out, _ = proc.communicate()
        rc = -1
        from .launcher import reap

        reap(run_id)
    wall = time.monotonic() - t0
    path = args.report_dir / run_id / "summary.json"
    try:
        summary = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        summary = {"errors": [f"no summary from `proofdiff run` (exit {rc}): {exc}; "
                              f"output tail: {(out or '')[-800:]}"]}
    return rc, wall, summary


def run_matrix(args: argparse.Namespace, console: Console) -> int:
    """Entry point of ``proofdiff catch-matrix``; 0 when every row is ok, else 1."""
    from .launcher import new_run_id
    from .profiles import load_profiles
    from .report import build_summary, write_report

    profiles = load_profiles(args.profiles, args.overrides)
    baseline = next(iter(profiles))
    mid = args.run_id or f"matrix-{new_run_id()}"
    wanted = (set() if args.clean_only else set(args.fault) if args.fault
              else {c.name for c in CATALOG if c.faults})
    cases = [CATALOG[0]] * max(1, args.repeat_clean) + [c for c in CATALOG if c.name in wanted]
    rows: list[dict[str, Any]] = []
    t_all = time.monotonic()
    for i, case in enumerate(cases):
        label = case.name if case.faults or args.repeat_clean <= 1 else f"clean-{i + 1}"
        suites = case.targeted if (args.targeted and case.faults) else SUITES
        rc, wall, summary = _run_case(case, args, f"{mid}-{label}", suites, console)
        cells = cells_of(summary)
        ok, verdict = judge_row(case, cells, baseline=baseline, faulty=args.faulty_profile)
        aa = [r for r in summary.get("oracles", []) if r["suite"] == "timing"
              and r["oracle"] == "aa"]
        rows.append({"fault": label, "faults": case.faults, "why": case.why,
                     "meant": list(case.meant[:1]) + [case.meant[1][0]] if case.meant else None,
                     "meant_oracles": list(case.meant[1]) if case.meant else [],
                     "cells": cells, "ok": ok, "verdict": verdict, "wall_s": round(wall, 1),
                     "rc": rc, "run_id": f"{mid}-{label}", "suites": list(suites),
                     "validity_ran": bool(summary.get("outcomes")),
                     "aa": aa[0]["outcome"] if aa else None})
        console.print(f"  -> {'[green]' if ok else '[red]'}{verdict}[/] ({wall:.0f} s, exit {rc})")
    total = time.monotonic() - t_all
    shown = [s for s in (*SUITES, "errors") if any(s in r["cells"] for r in rows) or s in SUITES]
    table = Table(title=f"catch matrix {mid}: faults on {args.faulty_profile!r} only "
                        f"({total / 60:.1f} min)")
    table.add_column("fault", no_wrap=True)
    for s in shown:
        table.add_column(s)
    table.add_column("verdict", overflow="fold")  # keep oracle names whole
    table.add_column("s", justify="right")
    for r in rows:
        cols = []
        for s in shown:
            cs = r["cells"].get(s, [])
            meant = r["meant"] if r["meant"] and r["meant"][0] == s else None
            txt = ", ".join((f"[bold]{escape(c['oracle'])}[/bold]" if meant and c["oracle"] in
                             r["meant_oracles"] else escape(c["oracle"]))
                            + " " + escape(f"[{c['profile']}]") for c in cs)
            ran = s in r["suites"] or (s == "validity" and r["validity_ran"])
            cols.append(txt if cs else "[dim]ok[/dim]" if ran else "[dim]-[/dim]")
        colour = "green" if r["ok"] else "red"
        table.add_row(r["fault"], *cols, f"[{colour}]{r['verdict']}[/{colour}]",
                      f"{r['wall_s']:.0f}")
    console.print(table)
    console.print("cells: the oracles that failed \\[profile]; bold = the one meant to catch the "
                  "fault; '-' = suite not run (--targeted)")
    cleans = [r for r in rows if not r["faults"]]
    false_alarms = sum(1 for r in cleans if r["aa"] == "fail")
    console.print(f"clean runs: {sum(1 for r in cleans if r['ok'])}/{len(cleans)} passed every "
                  f"suite; A/A false alarms {false_alarms} of "
                  f"{sum(1 for r in cleans if r['aa'])}; clean time "
                  f"{sum(r['wall_s'] for r in cleans) / 60:.1f} min; total {total / 60:.1f} min")
    ok = all(r["ok"] for r in rows)
    matrix = {"suites": list(shown), "faulty_profile": args.faulty_profile,
              "baseline": baseline, "rows": rows, "total_s": round(total, 1),
              "clean_runs": len(cleans), "aa_false_alarms": false_alarms}
    summary = build_summary(run_id=mid, profiles=profiles, runs=[], catch_matrix=matrix,
                            errors=[])
    summary["verdict"] = "pass" if ok else "invalid"
    summary["verdict_line"] = ("every fault caught by its suite, clean image clean" if ok else
                               "; ".join(f"{r['fault']}: {r['verdict']}" for r in rows
                                         if not r["ok"]))
    out = write_report(args.report_dir, summary)
    console.print(f"{'[green]PASS' if ok else '[red]FAIL'}[/]: {summary['verdict_line']}\n"
                  f"report: {out / 'index.html'}")
    return 0 if ok else 1
