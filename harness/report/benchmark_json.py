"""Timing samples as pytest-benchmark JSON, so ``pytest-benchmark compare FILE...`` reads them.

pytest-benchmark times Python callables and disables itself under pytest-xdist, so proofdiff
writes its file format from the timing flows of a result, with pytest-benchmark's own pieces:
``machine_info`` and ``commit_info`` from its generators, statistics from its ``Stats`` (in
seconds, as it stores them). One file per workload: ``benchmarks/timing-<workload>.json``.
"""

from __future__ import annotations

import datetime as _dt
import json
from collections.abc import Mapping, Sequence
from typing import Any

from proofdiff.model.result import DifferentialResult
from proofdiff.model.runs import RunRecord

__all__ = ["benchmark_doc", "benchmark_files"]


def _entry(name: str, group: str, samples_ms: Sequence[float],
           extra: Mapping[str, Any]) -> dict[str, Any]:
    from pytest_benchmark.stats import Stats  # pytest_benchmark imports pytest: only when timed

    st = Stats()  # type: ignore[no-untyped-call]
    for x in samples_ms:
        st.update(float(x) / 1000.0)  # type: ignore[no-untyped-call]
    stats = st.as_dict()  # type: ignore[no-untyped-call]
    stats.update(data=[float(x) / 1000.0 for x in samples_ms], iterations=1)
    return {"group": group, "name": name, "fullname": name, "params": None, "param": None,
            "extra_info": dict(extra), "stats": stats,
            "options": {"disable_gc": False, "timer": "time.monotonic", "max_time": 0,
                        "min_rounds": len(samples_ms), "min_time": 0, "warmup": False}}


def _entries(run: RunRecord, result: DifferentialResult) -> list[dict[str, Any]]:
    batches = run.flows_named("timing")
    info = {"profile": run.profile, "workload": run.workload, "image": run.image.tag,
            "image_digest": run.image.digest, "run_id": result.run_id,
            "verdicts": {r.oracle: r.outcome.value for r in result.records
                         if r.suite == "timing" and r.profile == run.profile
                         and r.workload == run.workload}}
    out = []
    first = next((j for j in run.workload_flow.jobs if j.index == 0), None) \
        if run.workload_flow else None
    if first is not None and first.wall_ms > 0:
        out.append(_entry(f"{run.workload}/warmup[{run.profile}]", f"{run.workload} warmup",
                          [first.wall_ms], {**info, "srs_load_ms": first.timings.srs_load_ms}))
    lat = [j.wall_ms for b in batches for j in b.completed()]
    cost = [b.wall_ms / len(b.jobs) for b in batches if b.jobs and len(b.completed()) == len(b.jobs)]
    for kind, group, xs in (("latency", "steady latency", lat),
                            ("per-proof-cost", "per-proof cost (1/throughput)", cost)):
        if xs:
            out.append(_entry(f"{run.workload}/{kind}[{run.profile}]",
                              f"{run.workload} {group}", xs, info))
    return out


def benchmark_doc(result: DifferentialResult, workload: str) -> dict[str, Any] | None:
    """The pytest-benchmark document of ``workload``'s timing samples (``None`` when there are
    none: pytest-benchmark cannot compute statistics over nothing)."""
    benches = [e for run in result.runs if run.workload == workload and run.flows_named("timing")
               for e in _entries(run, result)]
    if not benches:
        return None
    import pytest_benchmark  # imports pytest: only for a run that was timed
    from pytest_benchmark.plugin import pytest_benchmark_generate_machine_info
    from pytest_benchmark.utils import get_commit_info

    return {"machine_info": pytest_benchmark_generate_machine_info(),  # type: ignore[no-untyped-call]
            "commit_info": get_commit_info("proofdiff"),  # type: ignore[no-untyped-call]
            "benchmarks": benches,
            "datetime": _dt.datetime.fromtimestamp(result.created_unix_s,
                                                   _dt.timezone.utc).isoformat(),
            "version": pytest_benchmark.__version__}


def benchmark_files(result: DifferentialResult) -> dict[str, bytes]:
    """``benchmarks/timing-<workload>.json`` for each workload that was timed (relative path
    -> the file's bytes)."""
    out = {}
    for wl in dict.fromkeys(r.workload for r in result.runs):
        doc = benchmark_doc(result, wl)
        if doc is not None:
            out[f"benchmarks/timing-{wl}.json"] = (json.dumps(doc, indent=2) + "\n").encode()
    return out
