"""The GPU part of a run's report: per run and GPU, what NVML read while the daemon ran (a
summary row and utilization / memory over time as an inline matplotlib SVG), or why nothing
was read."""

from __future__ import annotations

from typing import Any

from proofdiff.model.gpu_telemetry import GpuTelemetry
from proofdiff.model.result import DifferentialResult
from proofdiff.report.figures import figure, svg_of

__all__ = ["gpu_rows", "gpu_plot_svg"]


def gpu_rows(result: DifferentialResult) -> list[dict[str, Any]]:
    """One row per (run, GPU sampled), or one per run with ``skipped`` = the reason when
    nothing was read. Keys: profile, workload, skipped ('' when sampled), and the
    :class:`~proofdiff.model.gpu_telemetry.GpuSummary` fields; ``svg``: the run's plot ('' when
    none). Runs whose daemon this run did not start (``gpu is None``) are left out."""
    rows: list[dict[str, Any]] = []
    for run in result.runs:
        tel = run.daemon.gpu if run.daemon else None
        if tel is None:
            continue
        head = {"profile": run.profile, "workload": run.workload}
        if not tel.sampled:
            rows.append({**head, "skipped": tel.source.removeprefix("none: ") or tel.error,
                         "svg": ""})
            continue
        svg = gpu_plot_svg(tel, f"{run.profile}/{run.workload}")
        for i, s in enumerate(tel.summaries()):
            rows.append({**head, "skipped": "", "svg": svg if i == 0 else "",
                         **{f: getattr(s, f) for f in s.__struct_fields__}})
    return rows


def gpu_plot_svg(tel: GpuTelemetry, title: str) -> str:
    """Utilization (percent) and memory used (GiB) of each GPU over the daemon's life (seconds),
    as inline SVG."""
    fig, (util_ax, mem_ax) = figure(8.0, 2.2, ncols=2)
    for uuid in tel.gpus:
        mine = [s for s in tel.samples if s.uuid == uuid]
        ts = [s.t_s for s in mine]
        util_ax.plot(ts, [float("nan") if s.util_pct is None else s.util_pct for s in mine],
                     lw=1, label=uuid[:12])
        mem_ax.plot(ts, [(s.mem_used_bytes or 0) / 2 ** 30 for s in mine], lw=1)
    util_ax.set(xlabel="s since the daemon was ready", ylabel="GPU util %", ylim=(0, 100))
    mem_ax.set(xlabel="s since the daemon was ready", ylabel="memory used, GiB")
    util_ax.set_title(f"{title}: GPU utilization", fontsize=9)
    util_ax.legend(fontsize=7)
    return svg_of(fig, f"{title}: GPU utilization and memory over time")
