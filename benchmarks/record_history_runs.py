"""Record the real runs that tests/unit/test_history_changes.py stores and analyses.

    python benchmarks/record_history_runs.py [--clean 15] [--slow 5] [--factor 1.10]
                                             [--out tests/data/history/runs.jsonl.gz]
                                             [--host-bins DIR [--daemon-cpus 8-15]
                                              [--harness-cpus 0-7]]

Each run is a real ``proofdiff run --suite SUITE --profile bench`` of the reference image on
wpost-2k (default ``--suite validity``: the workload's 4 proofs, the first the warmup, each
verified; ``timing`` adds 8 to 12 timing proofs and takes about 3 x as long), one at a time under the e2e lock (/tmp/proofdiff-e2e.lock, taken for ``--per-lock`` runs in a
row, then released for the other sessions' Docker tests): ``--clean`` runs of the
reference image and ``--slow`` runs of a derived image whose proofs take ``--factor`` x as
long (``FROM`` the reference, ``ENV REFPROVER_FAULTS=slow-prove=<factor>``: real work, not a
sleep; removed at the end), interleaved (the slow runs spread evenly among the clean ones), so
that a drift of the shared machine's load over the recording does not line up with the step. Every run's summary.json is written, one JSON document per line,
into ``--out`` (gzip), as the run wrote it; the provenance (date, commit, machine, image ids,
command) goes beside it in ``PROVENANCE.md``. The caches must be warm (``make image``).

``--host-bins DIR`` records on a host without Docker (a GPU host): refprover's binaries from DIR
run as processes (``--set '*.runtime="process"'``), the slow side a folder whose ``refprover``
is a two-line program adding ``slow-prove=<factor>`` to ``REFPROVER_FAULTS`` (both sides
through the same kind of wrapper). ``--daemon-cpus`` pins the daemons (``taskset``, in both
wrappers) and ``--harness-cpus`` pins proofdiff itself and the verifier, so that the harness's
own work never lands on the cores that prove. No lock is taken.
"""

from __future__ import annotations

import argparse
import fcntl
import gzip
import io
import json
import os
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from proofdiff.artifacts import ensure_artifacts
from proofdiff.model.run_options import RunOptions
from record import write_record

REPO = Path(__file__).resolve().parents[1]
LOCK = "/tmp/proofdiff-e2e.lock"


def _run(report_dir: Path, run_id: str, image: str, suite: str, *, host: bool = False,
         harness_cpus: str = "") -> dict[str, object]:
    """One run; ``image`` is a tag, or with ``host`` a folder of binaries (process runtime)."""
    side = (["--set", '*.runtime="process"', "--bin-dir", image] if host
            else ["--image", image])
    pin = ["taskset", "-c", harness_cpus] if harness_cpus else []
    cmd = [*pin, "timeout", "900", sys.executable, "-m", "proofdiff", "run",
           "--suite", suite, "--profile", "bench", *side,
           "--report-dir", str(report_dir), "--run-id", run_id]
    t0 = time.monotonic()
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=3600)
    doc = json.loads((report_dir / run_id / "summary.json").read_text())
    print(f"{run_id}: exit {proc.returncode}, {doc['verdict']}, {time.monotonic() - t0:.0f} s",
          flush=True)
    return doc  # type: ignore[no-any-return]


def _wrapper(bins: Path, into: Path, faults: str, cpus: str) -> Path:
    """A folder like ``bins`` whose ``refprover`` runs ``bins``'s with ``faults`` added to
    ``REFPROVER_FAULTS`` ('' = none) and pinned to ``cpus`` ('' = not); the rest linked."""
    into.mkdir(parents=True, exist_ok=True)
    for f in bins.iterdir():
        dst = into / f.name
        if dst.exists() or dst.is_symlink():
            dst.unlink()
        if f.name == "refprover":
            env = (f'REFPROVER_FAULTS="${{REFPROVER_FAULTS:+$REFPROVER_FAULTS,}}{faults}" '
                   if faults else "")
            pin = f"taskset -c {cpus} " if cpus else ""
            dst.write_text(f'#!/bin/sh\n{env}exec {pin}{f.resolve()} "$@"\n')
            dst.chmod(0o755)
        else:
            dst.symlink_to(f.resolve())
    return into


def _plan(args: argparse.Namespace, stamp: str, ref: str, slow: str) -> list[tuple[str, str]]:
    """The runs in the order taken: the warmups, then clean and slow interleaved."""
    total = args.clean + args.slow
    slow_at = {round((k + 0.5) * total / args.slow) for k in range(args.slow)}
    plan, c, s = [(f"hist-{stamp}-warm-{i}", ref) for i in range(args.warm)], 0, 0
    for i in range(total):
        if i in slow_at and s < args.slow or c >= args.clean:
            plan.append((f"hist-{stamp}-slow-{s:02d}", slow))
            s += 1
        else:
            plan.append((f"hist-{stamp}-clean-{c:02d}", ref))
            c += 1
    return plan


def _write(out: Path, docs: list[dict[str, object]]) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(out, "wt", encoding="utf-8") as f:
        for d in docs:
            f.write(json.dumps(d, separators=(",", ":")) + "\n")


def _series(docs: list[dict[str, Any]]) -> tuple[list[float], list[float]]:
    """Each clean and each slow run's median latency, ms, its warmup job left out."""
    import statistics

    def median_ms(d: dict[str, Any]) -> float:
        jobs = d["runs"][0]["flows"][0]["jobs"]
        return statistics.median(j["wall_ms"] for j in jobs if j["index"] > 0)

    return ([median_ms(d) for d in docs if "-clean-" in d["run_id"]],
            [median_ms(d) for d in docs if "-slow-" in d["run_id"]])


def _record(docs: list[dict[str, Any]], args: argparse.Namespace) -> None:
    """The recording's figures (:func:`_figures`) as a record of benchmarks/results/."""
    import statistics

    from proofdiff.history.changes import change_points

    clean, slow = _series(docs)
    steps = change_points(clean[:10] + slow[:5])
    write_record("history-changes", f"real runs for the history's change-point test: "
                 f"{args.clean} clean, {args.slow} slow-prove={args.factor}, suite {args.suite}",
                 {"clean run-to-run spread": (round(100 * statistics.stdev(clean)
                                                    / statistics.mean(clean), 1), "% (CV)"),
                  "slow / clean": (round(statistics.median(slow) / statistics.median(clean), 3),
                                   ""),
                  "change points found": (len(steps), ""),
                  "first change point index": (steps[0].index if steps else "none", "")},
                 notes="the step belongs at index 10 (10 clean runs, then 5 slow ones)")


def _figures(docs: list[dict[str, Any]]) -> str:
    """What a recording shows, as the test reads it: the clean runs' run-to-run spread (CV of
    each run's median latency, its warmup job left out), slow / clean (medians), and the change
    points that ``proofdiff history``'s method finds in the test's series (the first 10 clean
    runs, then the first 5 slow ones; the step belongs at index 10)."""
    import statistics

    from proofdiff.history.changes import change_points

    clean, slow = _series(docs)
    steps = change_points(clean[:10] + slow[:5])
    found = ", ".join(f"at index {c.index}, {100 * c.rel_change:+.1f} %, p = {c.p_value:.2g}"
                      for c in steps) or "none"
    return (f"run-to-run spread of the clean runs' median latency "
            f"{100 * statistics.stdev(clean) / statistics.mean(clean):.1f} % "
            f"({min(clean):.0f} to {max(clean):.0f} ms), slow / clean "
            f"{statistics.median(slow) / statistics.median(clean):.3f}; change points in 10 "
            f"clean then 5 slow runs: {found}")


def _record_host(args: argparse.Namespace) -> int:
    """The ``--host-bins`` recording (module docstring); the provenance note is printed."""
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M")
    root = args.report_dir / "bins"
    clean = _wrapper(args.host_bins, root / "clean", "", args.daemon_cpus)
    slow = _wrapper(args.host_bins, root / "slow", f"slow-prove={args.factor}", args.daemon_cpus)
    docs = [_run(args.report_dir, rid, str(side), args.suite, host=True,
                 harness_cpus=args.harness_cpus)
            for rid, side in _plan(args, stamp, str(clean), str(slow))]
    _write(args.out, docs)
    m = json.loads(json.dumps(docs[0]["machine"]))
    print(f"recorded {datetime.now(UTC):%Y-%m-%d %H:%M} UTC on {m.get('hostname')} "
          f"({m.get('cpus')} cores; GPUs {m.get('gpus')}): {args.clean} clean, {args.slow} "
          f"slow-prove={args.factor}, suite {args.suite}, daemons on cores "
          f"{args.daemon_cpus or 'any'}, harness on {args.harness_cpus or 'any'}; "
          f"{_figures(docs)}; wrote {args.out} ({args.out.stat().st_size} bytes)")
    _record(docs, args)
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--clean", type=int, default=15)
    ap.add_argument("--slow", type=int, default=5)
    ap.add_argument("--factor", type=float, default=1.10)
    ap.add_argument("--per-lock", type=int, default=5, help="runs per taking of the e2e lock")
    ap.add_argument("--suite", default="validity", choices=("validity", "timing"))
    ap.add_argument("--warm", type=int, default=2, help="runs first, kept as hist-...-warm-N: "
                    "the machine's own warmup, not part of either series")
    ap.add_argument("--out", type=Path, default=REPO / "tests/data/history/runs.jsonl.gz")
    ap.add_argument("--report-dir", type=Path, default=Path("/tmp/proofdiff-history-record"))
    ap.add_argument("--host-bins", type=Path, metavar="DIR",
                    help="refprover's binaries as processes (no Docker; module docstring)")
    ap.add_argument("--daemon-cpus", default="", help="with --host-bins: taskset the daemons")
    ap.add_argument("--harness-cpus", default="", help="taskset proofdiff and the verifier")
    args = ap.parse_args()
    if args.host_bins:
        return _record_host(args)
    opts = RunOptions.from_env()
    art = ensure_artifacts(["wpost-2k"], lambda _l: None, cache_root=Path(opts.cache_root),
                           crate_dir=REPO / "targets" / "refprover")
    ref = art.image_tag
    slow = f"proofdiff/refprover:history-slow-prove-{args.factor:.2f}"
    import docker

    client = docker.from_env()
    client.images.build(fileobj=io.BytesIO(
        f"FROM {ref}\nENV REFPROVER_FAULTS=slow-prove={args.factor}\n".encode()), tag=slow,
        rm=True, pull=False, labels={"proofdiff.test": "history"})
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M")
    plan = _plan(args, stamp, ref, slow)
    load = os.getloadavg()
    docs = []
    try:
        for k in range(0, len(plan), args.per_lock):
            with open(LOCK, "a") as lock:
                t0 = time.monotonic()
                fcntl.flock(lock, fcntl.LOCK_EX)
                print(f"e2e lock taken after {time.monotonic() - t0:.0f} s", flush=True)
                docs.extend(_run(args.report_dir, rid, image, args.suite)
                            for rid, image in plan[k:k + args.per_lock])
    finally:
        client.images.remove(slow, force=True)
    _write(args.out, docs)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO,
                            capture_output=True, text=True).stdout.strip()
    ids = {d["run_id"]: next((i["digest"] for i in d["images"]), "") for d in docs}
    (args.out.parent / "PROVENANCE.md").write_text(
        f"# {args.out.name}\n\nRecorded {datetime.now(UTC):%Y-%m-%d %H:%M} UTC at commit "
        f"{commit} by `python benchmarks/record_history_runs.py --clean {args.clean} --slow "
        f"{args.slow} --factor {args.factor} --suite {args.suite}` on {docs[0]['machine'].get('hostname')} "
        f"({docs[0]['machine'].get('cpus')} cores, "
        f"{round(docs[0]['machine'].get('mem_total_bytes', 0) / 2**30)} GiB, Debian 12), "
        f"load average {load[0]:.2f} / {load[1]:.2f} / {load[2]:.2f} (1 / 5 / 15 min) at "
        "the start; the runs one at a time under the e2e lock.\n\n"
        f"Each line is the summary.json of one real `proofdiff run --suite {args.suite} "
        f"--profile bench --image IMAGE` on wpost-2k, in the order they were taken: {args.clean} of the "
        f"reference image `{ref}` and {args.slow} of `{slow}` (FROM the reference, ENV "
        f"REFPROVER_FAULTS=slow-prove={args.factor}), interleaved; a test orders them into "
        "its own series (the runs' times are the recording's).\n\n"
        + "".join(f"- {rid}: {dg}\n" for rid, dg in ids.items())
        + f"\nMeasured in them: {_figures(docs)}.\n", encoding="utf-8")
    print(_figures(docs))
    _record(docs, args)
    print(f"wrote {args.out} ({args.out.stat().st_size} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
