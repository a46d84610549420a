"""The metrics ``proofdiff history`` shows: one value per cell (a run's profile x workload x
image), computed from that cell's stored samples.

Each is stated once here, with its unit and which direction is worse. Steady-state figures
leave out the warmup (the workload flow's first job, which loads the SRS, and that flow's
cost); rates count the jobs of the workload and timing flows (the isolation flows send
colliding ids on purpose, so their failures are not the daemon's failure rate).
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass

__all__ = ["METRICS", "MetricSpec", "SampleRow", "SAMPLE_METRICS"]

#: Flows whose jobs the rates count.
RATE_FLOWS = ("workload", "timing")


@dataclass(frozen=True)
class SampleRow:
    """One stored sample as the metrics read it (see :class:`~proofdiff.history.schema.Sample`)."""

    metric: str
    value: float
    flow: str
    status: str
    valid: bool | None
    warmup: bool


@dataclass(frozen=True)
class MetricSpec:
    """One metric: ``name``, ``title``, ``unit``, ``worse`` (``higher`` | ``lower`` | '' = not
    judged: a change is shown, never called a regression), the sample metrics it reads
    (``reads``; empty = the cell's start-to-ready time) and ``value`` (rows -> the cell's value,
    ``None`` when the cell has nothing to say)."""

    name: str
    title: str
    unit: str
    worse: str
    reads: tuple[str, ...]
    value: Callable[[Sequence[SampleRow]], float | None]


def _median_of(metric: str) -> Callable[[Sequence[SampleRow]], float | None]:
    def f(rows: Sequence[SampleRow]) -> float | None:
        xs = [r.value for r in rows if r.metric == metric and not r.warmup
              and r.status in ("COMPLETED", "")]
        return statistics.median(xs) if xs else None
    return f


def _throughput(rows: Sequence[SampleRow]) -> float | None:
    costs = [r.value for r in rows if r.metric == "per_proof_cost" and not r.warmup]
    med = statistics.median(costs) if costs else 0.0
    return 60000.0 / med if med > 0 else None


def _idle_memory(rows: Sequence[SampleRow]) -> float | None:
    xs = [r.value for r in rows if r.metric == "daemon_rss" and not r.warmup]
    return max(xs) / 2 ** 20 if xs else None


def _failure_rate(rows: Sequence[SampleRow]) -> float | None:
    jobs = [r for r in rows if r.metric == "latency" and r.flow in RATE_FLOWS]
    if not jobs:
        return None
    return 100.0 * sum(r.status != "COMPLETED" for r in jobs) / len(jobs)


def _invalid_rate(rows: Sequence[SampleRow]) -> float | None:
    judged = [r for r in rows if r.metric == "latency" and r.flow in RATE_FLOWS
              and r.valid is not None]
    if not judged:
        return None
    return 100.0 * sum(not r.valid for r in judged) / len(judged)


#: Every metric, by name (``proofdiff history --metric NAME``).
METRICS: dict[str, MetricSpec] = {m.name: m for m in (
    MetricSpec("latency", "median latency (client wall, steady)", "ms", "higher", ("latency",),
               _median_of("latency")),
    MetricSpec("throughput", "throughput (60000 / median per-proof cost)", "proofs/min",
               "lower", ("per_proof_cost",), _throughput),
    MetricSpec("failure-rate", "jobs not COMPLETED (workload and timing flows)", "%", "higher",
               ("latency",), _failure_rate),
    MetricSpec("invalid-rate", "verified proofs that did not verify", "%", "higher",
               ("latency",), _invalid_rate),
    MetricSpec("start-to-ready", "daemon start to first GetStatus answer", "ms", "higher", (),
               lambda _rows: None),
    MetricSpec("gpu-util", "median GPU utilization while proving (NVML)", "%", "",
               ("gpu_util",), _median_of("gpu_util")),
    MetricSpec("daemon-total", "median total_ms the daemon reports (a claim)", "ms", "higher",
               ("daemon_total",), _median_of("daemon_total")),
    MetricSpec("gpu-compute", "median gpu_compute_ms the daemon reports (a claim)", "ms",
               "higher", ("gpu_compute",), _median_of("gpu_compute")),
    MetricSpec("queue-wait", "median queue_wait_ms the daemon reports (a claim)", "ms",
               "higher", ("queue_wait",), _median_of("queue_wait")),
    MetricSpec("daemon-memory", "most memory the daemon held at rest (its RSS floor per flow, "
               "after warm-up)", "MiB", "higher", ("daemon_rss",), _idle_memory),
)}

#: Every sample metric the store writes (``samples.metric``).
SAMPLE_METRICS = ("latency", "per_proof_cost", "queue_wait", "srs_load", "synthesis",
                  "gpu_compute", "daemon_total", "gpu_util", "gpu_mem_used", "gpu_sm_clock",
                  "gpu_temp", "gpu_power", "daemon_rss", "daemon_fds", "daemon_threads")
