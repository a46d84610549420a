"""Timing samples as pytest-benchmark JSON, so ``pytest-benchmark compare FILE...`` reads them.

pytest-benchmark disables itself under pytest-xdist and times Python callables, not daemon jobs,
so proofdiff writes the same file format itself: ``machine_info``, ``commit_info``,
``benchmarks[]`` (``group``, ``name``, ``fullname``, ``params``, ``extra_info``, ``options``,
``stats`` with ``data``), ``datetime``, ``version``. The statistics come from pytest-benchmark's
own :class:`pytest_benchmark.stats.Stats`, in SECONDS as pytest-benchmark stores them.

    write_benchmark_json(path, [BenchEntry("prod/wpost-2k/steady", "prod", samples_ms, {...})])
    .venv/bin/pytest-benchmark compare reports/<run id>/benchmarks/*.json
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import platform
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest_benchmark
from pytest_benchmark.stats import Stats

__all__ = ["BenchEntry", "benchmark_doc", "write_benchmark_json"]


@dataclass(frozen=True)
class BenchEntry:
    """One benchmark: ``name`` (unique in the file), ``group`` (compare groups by it), the
    samples in ms, and ``extra_info`` (profile, workload, image digest, verdicts ...)."""

    name: str
    group: str
    samples_ms: Sequence[float]
    extra_info: Mapping[str, Any] = field(default_factory=dict)


def _commit_info(repo: Path) -> dict[str, Any]:
    try:
        def git(*args: str) -> str:
            return subprocess.run(["git", "-C", str(repo), *args], capture_output=True,
                                  text=True, timeout=10, check=True).stdout.strip()

        return {"id": git("rev-parse", "HEAD"), "dirty": bool(git("status", "--porcelain")),
                "project": "proofdiff", "branch": git("rev-parse", "--abbrev-ref", "HEAD")}
    except (OSError, subprocess.SubprocessError):
        return {"id": "unversioned", "dirty": True, "project": "proofdiff", "branch": "unknown"}


def _machine_info() -> dict[str, Any]:
    uname = platform.uname()
    return {"node": uname.node, "processor": uname.processor or uname.machine,
            "machine": uname.machine, "python_implementation": platform.python_implementation(),
            "python_version": platform.python_version(), "release": uname.release,
            "system": uname.system, "cpu": {"count": os.cpu_count()}}


def benchmark_doc(entries: Sequence[BenchEntry], *, repo: Path | None = None) -> dict[str, Any]:
    """The pytest-benchmark JSON document of ``entries`` (entries with no samples are left
    out: pytest-benchmark cannot compute stats over nothing)."""
    benches = []
    for e in entries:
        if not e.samples_ms:
            continue
        st = Stats()  # type: ignore[no-untyped-call]
        for x in e.samples_ms:
            st.update(float(x) / 1000.0)  # type: ignore[no-untyped-call]
        s = st.as_dict()  # type: ignore[no-untyped-call]
        s["data"] = [float(x) / 1000.0 for x in e.samples_ms]
        s["iterations"] = 1
        benches.append({"group": e.group, "name": e.name, "fullname": e.name,
                        "params": None, "param": None, "extra_info": dict(e.extra_info),
                        "options": {"disable_gc": False, "timer": "time.monotonic",
                                    "min_rounds": len(e.samples_ms), "max_time": 0,
                                    "min_time": 0, "warmup": False},
                        "stats": s})
    return {"machine_info": _machine_info(),
            "commit_info": _commit_info(repo or Path(__file__).resolve().parents[1]),
            "benchmarks": benches,
            "datetime": _dt.datetime.now(_dt.timezone.utc).isoformat(),
            "version": pytest_benchmark.__version__}


def write_benchmark_json(path: str | Path, entries: Sequence[BenchEntry]) -> Path:
    """Write :func:`benchmark_doc` to ``path`` (parents created); returns the path."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_suffix(".tmp")
    tmp.write_text(json.dumps(benchmark_doc(entries), indent=2) + "\n", encoding="utf-8")
    tmp.replace(p)
    return p
