"""``proofdiff catch-matrix``: the fault catalog self-test as one command (fault x suite).

One differential run on the clean image and one per fault switch
(docs/design/fault-catalog.md), the fault on the faulty profile only (``--set
prod.env.REFPROVER_FAULTS=...``), each through
:func:`~proofdiff.core.differential.run_differential` with its own report. A fault row passes when
the suite and oracle meant for it failed on the faulty profile and the baseline stayed clean;
the clean row passes when every check was judged and passed: nothing failed, and nothing was
skipped, left undecided or without an outcome (a check that did not judge found nothing, which
is no evidence of a clean image). An ERROR record (the oracle could not judge) counts as the
catch only in the oracle meant for the fault; anywhere else its cell says ``error``, so that it
is never read as another oracle catching the fault. The matrix goes into a report of its own
(``summary.json`` ``extra.catch_matrix`` and ``index.html``).

    proofdiff catch-matrix                          # every fault, every suite
    proofdiff catch-matrix --targeted               # each fault with only its suite(s)
    proofdiff catch-matrix --clean-only --repeat-clean 5    # A/A false alarms of 5 clean runs
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from proofdiff.cli.option_flags import add_run_options, run_options
from proofdiff.model.status import Outcome, Verdict
from proofdiff.oracles.suite_table import SUITES

if TYPE_CHECKING:  # the core and rich are imported when the matrix runs, not for --help
    from rich.console import Console

    from proofdiff.model.result import DifferentialResult
    from proofdiff.model.run_options import RunOptions

__all__ = ["CATALOG", "HOST_MEMORY_SETS", "MatrixRow", "add_arguments", "cells_of", "judge_row",
           "run_matrix", "unjudged_of"]

ALL = tuple(SUITES)


@dataclass(frozen=True)
class MatrixRow:
    """One row: ``name``; ``faults`` = REFPROVER_FAULTS on the faulty profile ('' = clean);
    extra ``--set`` overrides (``{p}`` = the faulty profile, ``{without_library}`` = the
    reference image variant without a library its programs need); the suite and oracle names
    (alternatives) meant to catch it; the suites of a ``--targeted`` run; why."""

    name: str
    faults: str = ""
    sets: tuple[str, ...] = ()
    meant: tuple[str, tuple[str, ...]] | None = None
    targeted: tuple[str, ...] = ALL
    why: str = ""


#: A prod limited to 1200 MB whose work items each hold 400 MiB while they prove: a budget
#: read from the cgroup admits 2 at once (about 890 MB), one read from the host admits 3.
HOST_MEMORY_SETS = ("{p}.mem_limit=1200m", '{p}.config.memory.partition_working_set="400MiB"')

#: The catalog (targets/refprover/README.md 'Faults').
CATALOG: tuple[MatrixRow, ...] = (
    MatrixRow("clean", why="nothing may fail on the clean image"),
    MatrixRow("partition-race", "partition-race", meant=("validity", ("proofs",)),
         targeted=("validity",), why="shared scratch buffer: partition proofs invalid"),
    MatrixRow("shared-assembler", "shared-assembler", sets=('{p}.job_ids="fixed"',),
         meant=("validity", ("proofs", "jobs")), targeted=("validity",),
         why="one assembler per request id: colliding ids (one id for every job, as retried "
         "sectors share curio's porep-<miner>-<sector>) mix partitions"),
    MatrixRow("no-self-check", "partition-race,no-self-check",
         sets=("{p}.config.pipeline.self_check=true",), meant=("validity", ("proofs",)),
         targeted=("validity",), why="with self_check on, bad proofs must come back FAILED; "
         "the fault returns them COMPLETED (partition-race makes the bad proofs)"),
    MatrixRow("param-path-default", "param-path-default", meant=("preflight", ("params",)),
         targeted=("preflight",), why="the daemon reads /data/zk/params whatever the config says"),
    MatrixRow("serialize-pipeline", "serialize-pipeline", meant=("timing", ("concurrency",)),
         targeted=("timing",), why="a global lock per job: correct proofs, one job at a time"),
    MatrixRow("queue-deadlock", "queue-deadlock", sets=("{p}.timeout_s=40",),
         meant=("isolation", ("hang",)), targeted=("isolation",),
         why="jobs submitted while >= 2 are unfinished are never answered"),
    MatrixRow("shared-witness", "shared-witness", meant=("isolation", ("distinct-inputs",)),
         targeted=("isolation",), why="concurrent distinct jobs share partition proofs"),
    MatrixRow("ignore-priority", "ignore-priority", meant=("behaviour", ("priority",)),
         targeted=("behaviour",), why="pipeline mode schedules FIFO: a HIGH job waits behind "
         "queued NORMAL work"),
    MatrixRow("exceed-inflight", "exceed-inflight", meant=("behaviour", ("in-flight",)),
         targeted=("behaviour",), why="the in-flight limit counts distinct request ids, so "
         "partitions and colliding ids slip past it"),
    MatrixRow("env-bool", "env-bool", meant=("behaviour", ("mode",)), targeted=("behaviour",),
         why="REFPROVER_DISABLE_PIPELINE=0 read as set-means-on: the pipeline silently off"),
    MatrixRow("ignore-deprecated", "ignore-deprecated", meant=("behaviour", ("mode",)),
         targeted=("behaviour",), why="synthesis.partition_workers ignored as deprecated (as "
         "cuzk does): one worker"),
    MatrixRow("host-memory", "host-memory", sets=HOST_MEMORY_SETS,
         meant=("behaviour", ("resources",)), targeted=("behaviour",),
         why="the memory budget read from the host, not the cgroup: OOM under mem_limit"),
    MatrixRow("retain-witness", "retain-witness", meant=("behaviour", ("growth",)),
         targeted=("isolation", "behaviour"), why="the pipeline keeps every partition's witness "
         "in a retry cache nothing evicts: memory at rest grows with the jobs served (judged "
         "over the default run's repeated work: isolation's flows and behaviour's)"),
    MatrixRow("serialize-partitions", "serialize-partitions", meant=("behaviour", ("parallel",)),
         targeted=("behaviour",), why="one partition of a job at a time: a lone job's "
         "partitions one after another while workers stand idle"),
    MatrixRow("compute-micros", "compute-micros", meant=("behaviour", ("timings",)),
         targeted=("behaviour",), why="the partition path reports gpu_compute_ms in "
         "microseconds: figures that do not add up"),
    MatrixRow("status-waits", "status-waits", meant=("behaviour", ("control-plane",)),
         targeted=("behaviour",), why="GetStatus waits for the pipeline to drain: no answer "
         "under load"),
    MatrixRow("missing-library", sets=("{p}.image={without_library}",),
         meant=("preflight", ("libraries",)), targeted=("preflight",),
         why="an image variant without libgcc_s.so.1, which every refprover program needs "
         "(proofdiff.artifacts.variant_images): the daemon cannot start"),
    MatrixRow("no-first-run-artifact", "no-first-run-artifact",
         meant=("warmup", ("first-run-artifacts",)), targeted=("warmup",),
         why="the first proof leaves no circuit summary, as a cuzk warmup that extracted no "
         "PCE"),
    MatrixRow("early-release", "early-release", meant=("behaviour", ("in-flight",)),
         targeted=("behaviour",), why="the in-flight slot given back when a worker takes the "
         "item, before its proof: more items proving than the limit, its count within it"),
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Options of ``catch-matrix``."""
    add_run_options(p, ("select", "artifacts", "report", "deadlines"))
    p.add_argument("--fault", metavar="NAME", action="append", default=[],
                   choices=[c.name for c in CATALOG if c.meant],
                   help="fault to run (repeatable). Default: every fault of the catalog")
    p.add_argument("--repeat-clean", metavar="N", type=int, default=1,
                   help="clean-image runs (A/A false alarms are counted over them). Default: 1")
    p.add_argument("--clean-only", action="store_true", help="only the clean row(s)")
    p.add_argument("--targeted", action="store_true", help="each fault with only the suite(s) "
                   "meant for it; the clean row still runs every suite. Default: every suite")
    p.add_argument("--faulty-profile", metavar="NAME", default="prod",
                   help="the profile that gets the fault. Default: prod")


def cells_of(result: DifferentialResult) -> dict[str, list[dict[str, str]]]:
    """The records that failed, by suite: ``{suite: [{oracle, profile}]}`` for a FAIL,
    ``{oracle, profile, outcome: "error"}`` for an ERROR (it could not judge); run-level errors
    under ``errors``."""
    cells: dict[str, list[dict[str, str]]] = {}
    for r in result.failed():
        cell = {"oracle": r.oracle, "profile": r.profile}
        if r.outcome is Outcome.ERROR:
            cell["outcome"] = Outcome.ERROR.value
        cells.setdefault(r.suite, []).append(cell)
    for e in result.errors:
        cells.setdefault("errors", []).append({"oracle": e.splitlines()[0][:80], "profile": "-"})
    return cells


def unjudged_of(result: DifferentialResult) -> list[str]:
    """The checks of a run that judged nothing: SKIPPED or INCONCLUSIVE records
    (``suite/oracle [profile] outcome``), else, for an INCOMPLETE run, its verdict line (a
    selected check with no record at all)."""
    out = [f"{r.check} [{r.profile}] {r.outcome.value}" for r in result.records
           if r.outcome in (Outcome.SKIPPED, Outcome.INCONCLUSIVE)]
    if not out and result.verdict is Verdict.INCOMPLETE:
        out.append(result.verdict_line)
    return out


def _name(suite: str, c: dict[str, str]) -> str:
    return f"{suite}/{c['oracle']} [{c['profile']}]" + (f" {c['outcome']}" if "outcome" in c
                                                        else "")


def judge_row(case: MatrixRow, cells: dict[str, list[dict[str, str]]], *, baseline: str,
              faulty: str, unjudged: Sequence[str] = ()) -> tuple[bool, str]:
    """(ok, verdict text) of one row (see the module docstring); ``unjudged``: the run's checks
    that judged nothing (:func:`unjudged_of`), which keep the clean row from being ok."""
    if case.meant is None:
        bad = [_name(s, c) for s, cs in cells.items() for c in cs]
        if bad:
            return False, "FALSE ALARM: " + ", ".join(bad)
        if unjudged:
            return False, "NOT JUDGED: " + ", ".join(unjudged)
        return True, "clean"
    suite, oracles = case.meant
    hits = [c for c in cells.get(suite, []) if c["oracle"] in oracles and c["profile"] == faulty]
    caught = bool(hits)
    how = "" if any("outcome" not in c for c in hits) else " (error: it could not judge)"
    base_bad = [f"{s}/{c['oracle']}" for s, cs in cells.items() for c in cs
                if c["profile"] == baseline]
    if not caught:
        return False, f"MISSED by {suite}/{'|'.join(oracles)}"
    if base_bad:
        return False, f"caught, but the baseline failed too: {', '.join(base_bad)}"
    return True, f"caught by {suite}/{'|'.join(oracles)}{how}"


def _variant(opts: RunOptions, console: Console) -> str:
    """The reference image without the library its programs need (built on first use)."""
    from proofdiff.artifacts.engine import connect
    from proofdiff.artifacts.variant_images import ensure_without_library
    from proofdiff.core.plan import run_artifacts

    art = run_artifacts(opts, opts.workloads or ("wpost-2k",), docker=True, log=console.print)
    client = connect()
    try:
        return ensure_without_library(client, Path(art.cache_root or opts.cache_root),
                                      art.image_tag, log=console.print)
    finally:
        client.close()


def _row(case: MatrixRow, label: str, args: argparse.Namespace, opts: RunOptions, mid: str,
         console: Console) -> dict[str, Any]:
    import msgspec
    from rich.text import Text

    from proofdiff.core.differential import run_differential

    p = args.faulty_profile
    fmt = {"p": p, "without_library": _variant(opts, console) if any(
        "{without_library}" in s for s in case.sets) else ""}
    sets = [*opts.overrides, *([f"{p}.env.REFPROVER_FAULTS={case.faults}"] if case.faults else []),
            *(s.format(**fmt) for s in case.sets)]
    suites = case.targeted if (args.targeted and case.meant) else ALL
    console.print(Text(f"{label}: suites {', '.join(suites)}; --set {' --set '.join(sets) or '-'}",
                       style="bold"))
    t0 = time.monotonic()
    result = run_differential(msgspec.structs.replace(
        opts, overrides=tuple(sets), suites=tuple(suites), run_id=f"{mid}-{label}"))
    wall = time.monotonic() - t0
    cells = cells_of(result)
    ok, verdict = judge_row(case, cells, baseline=result.baseline, faulty=p,
                            unjudged=unjudged_of(result))
    aa = result.records_of("timing", oracle="aa")
    console.print(Text(f"  -> {verdict} ({wall:.0f} s, {result.verdict.value})",
                       style="green" if ok else "red"))
    return {"fault": label, "faults": case.faults, "why": case.why, "ok": ok, "verdict": verdict,
            "meant": f"{case.meant[0]}/{'|'.join(case.meant[1])}" if case.meant else "",
            "cells": cells, "wall_s": round(wall, 1), "run_id": result.run_id,
            "suites": list(suites), "exit_code": result.exit_code,
            "aa": aa[0].outcome.value if aa else None}


def _cell(row: dict[str, Any], suite: str) -> str:
    cs = row["cells"].get(suite, [])
    if cs:
        return ", ".join(f"{c['oracle']} [{c['profile']}]" + (f" {c['outcome']}" if "outcome" in c
                                                             else "") for c in cs)
    return "ok" if suite in row["suites"] else "-"


def run_matrix(args: argparse.Namespace, console: Console) -> int:
    """Entry point of ``proofdiff catch-matrix``; 0 when every row is ok, else 1."""
    from rich.table import Table
    from rich.text import Text

    from proofdiff.core.differential import assemble
    from proofdiff.core.plan import new_run_id
    from proofdiff.model.oracle_records import OracleRecord
    from proofdiff.report.writer import write_report

    opts = run_options(args)
    mid = opts.run_id or f"matrix-{new_run_id()}"
    wanted = (set() if args.clean_only else set(args.fault) if args.fault
              else {c.name for c in CATALOG if c.meant})
    cases = [CATALOG[0]] * max(1, args.repeat_clean) + [c for c in CATALOG if c.name in wanted]
    t_all = time.monotonic()
    rows = [_row(case, case.name if case.meant or args.repeat_clean <= 1 else f"clean-{i + 1}",
                 args, opts, mid, console) for i, case in enumerate(cases)]
    total = time.monotonic() - t_all
    shown = [*ALL, *(["errors"] if any("errors" in r["cells"] for r in rows) else [])]
    table = Table(title=f"catch matrix {mid}: faults on {args.faulty_profile!r} only "
                        f"({total / 60:.1f} min)")
    for col in ("fault", *shown, "verdict", "s"):
        table.add_column(col, overflow="fold", no_wrap=col == "fault")
    for r in rows:
        colour = "green" if r["ok"] else "red"
        table.add_row(Text(r["fault"]), *(Text(_cell(r, s)) for s in shown),
                      Text(r["verdict"], style=colour), f"{r['wall_s']:.0f}")
    console.print(table)
    console.print(Text("cells: the oracles that failed [profile] ('error': could not judge); "
                       "'-' = suite not run (--targeted)"))
    cleans = [r for r in rows if not r["meant"]]
    alarms = sum(1 for r in cleans if r["aa"] == Outcome.FAIL.value)
    console.print(Text(f"clean runs: {sum(1 for r in cleans if r['ok'])}/{len(cleans)} passed "
                       f"every suite; A/A false alarms {alarms} of "
                       f"{sum(1 for r in cleans if r['aa'])}; total {total / 60:.1f} min"))
    ok = all(r["ok"] for r in rows)
    section = {"title": "Catch matrix (fault x suite)", "faulty_profile": args.faulty_profile,
               "note": f"each fault on {args.faulty_profile!r} only; a cell lists the oracles "
                       "that failed [profile]", "columns": ["fault", *shown, "verdict", "s"],
               "rows": [[r["fault"], *(_cell(r, s) for s in shown), r["verdict"], r["wall_s"]]
                        for r in rows], "cases": rows, "total_s": round(total, 1),
               "clean_runs": len(cleans), "aa_false_alarms": alarms}
    # one record per row (no profiles: a row is not a bench-vs-prod comparison)
    records = [OracleRecord(suite="catch-matrix", oracle=r["fault"], profile=args.faulty_profile,
                            workload="", outcome=Outcome.PASS if r["ok"] else Outcome.FAIL,
                            message=f"{r['verdict']} (run {r['run_id']}, {r['wall_s']:.0f} s)",
                            evidence={"cells": r["cells"]}) for r in rows]
    summary = assemble(run_id=mid, profiles={}, records=records, runs=[],
                       extra={"catch_matrix": section})
    out = write_report(summary, opts.report_root)
    console.print(Text(f"{'PASS' if ok else 'FAIL'}: " + ("every fault caught by its suite, clean "
                       "image clean" if ok else "; ".join(f"{r['fault']}: {r['verdict']}"
                                                          for r in rows if not r["ok"])),
                       style="green" if ok else "red"))
    console.print(Text(f"report: {out / 'index.html'}"))
    return 0 if ok else 1
