"""The plots of a run's page (and the gate's): each proof's latency per profile side by side,
jobs in flight over time, and both sides' samples of a timing verdict, as inline SVG
(:mod:`proofdiff.report.figures`). Each returns '' when it has nothing to draw."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from proofdiff.model.jobs import FlowRecord
from proofdiff.model.runs import RunRecord
from proofdiff.model.timing_verdict import TimingVerdict
from proofdiff.report.figures import PALETTE, figure, svg_of

if TYPE_CHECKING:
    from matplotlib.axes import Axes

__all__ = ["WORKLOAD_FLOW", "in_flight_svg", "latency_svg", "run_plots", "samples_svg"]

#: The flow whose jobs are a run's proofs (isolation's and timing's have their own pages).
WORKLOAD_FLOW = "workload"


def _colour(profiles: Sequence[str], profile: str) -> str:
    return PALETTE[(profiles.index(profile) if profile in profiles else 0) % len(PALETTE)]


def _workload_flows(profiles: Sequence[str], runs: Sequence[RunRecord],
                    workload: str) -> list[tuple[str, FlowRecord]]:
    """(profile, flow) of each workload flow on ``workload``, in ``profiles`` order (the
    order the runs were made in, which side by side is a race, never moves a box)."""
    got = [(run.profile, f) for run in runs if run.workload == workload
           for f in run.flows if f.name == WORKLOAD_FLOW]
    return sorted(got, key=lambda pf: profiles.index(pf[0]) if pf[0] in profiles
                  else len(profiles))


def run_plots(profiles: Sequence[str], workloads: Sequence[str],
              runs: Sequence[RunRecord]) -> dict[str, str]:
    """The run page's plots, ``{"latency": svg, "in_flight": svg}``, from what they read
    alone: the profile order (colours, boxes), the workloads in plan order (panels) and each
    run's workload flow; ``workloads`` missing one that ``runs`` have gets it appended."""
    names = list(profiles) or sorted({r.profile for r in runs})
    order = list(dict.fromkeys([*workloads, *(r.workload for r in runs)]))
    return {"latency": latency_svg(names, order, runs),
            "in_flight": in_flight_svg(names, order, runs)}


def latency_svg(profiles: Sequence[str], workloads: Sequence[str],
                runs: Sequence[RunRecord]) -> str:
    """Per workload, each profile's COMPLETED workload proofs' wall time (s, the client's: call
    to answer) side by side: a box per profile over its dots, as inline SVG."""
    workloads = [w for w in workloads
                 if any(f.completed() for _p, f in _workload_flows(profiles, runs, w))]
    if not workloads:
        return ""
    fig, axes = figure(min(4.0 * len(workloads), 12.0), 2.6, ncols=len(workloads))
    for ax, wl in zip(axes, workloads):
        flows = _workload_flows(profiles, runs, wl)
        for i, (prof, flow) in enumerate(flows):
            ys = [j.wall_ms / 1000.0 for j in flow.completed()]
            if not ys:
                continue
            ax.boxplot([ys], positions=[i], widths=0.5, showfliers=False,
                       medianprops={"color": "black"})
            jitter = [i + 0.12 * ((k % 5) - 2) / 2 for k in range(len(ys))]
            ax.plot(jitter, ys, "o", ms=4, alpha=0.7, color=_colour(profiles, prof))
        ax.set_xticks(range(len(flows)), [p for p, _f in flows], fontsize=8)
        ax.set_ylabel("latency, s (call to answer)", fontsize=8)
        ax.set_ylim(bottom=0)
        ax.set_title(f"{wl}: each proof's latency per profile", fontsize=9)
    return svg_of(fig, "latency per profile, side by side")


def _client_in_flight(flow: FlowRecord) -> tuple[list[float], list[int]]:
    """Requests in flight from the client's side over the flow (s since its first request):
    a step per call and per answer."""
    jobs = [j for j in flow.jobs if j.started_unix_s > 0]
    if not jobs:
        return [], []
    t0 = min(j.started_unix_s for j in jobs)
    events = sorted([(j.started_unix_s - t0, 1) for j in jobs]
                    + [(j.started_unix_s - t0 + j.wall_ms / 1000.0, -1) for j in jobs])
    ts, ns, n = [0.0], [0], 0
    for t, d in events:
        n += d
        ts.append(t)
        ns.append(n)
    return ts, ns


def _draw_in_flight(ax: Axes, profiles: Sequence[str], runs: Sequence[RunRecord],
                    wl: str) -> bool:
    drew = False
    for prof, flow in _workload_flows(profiles, runs, wl):
        colour = _colour(profiles, prof)
        if flow.samples:
            ts = [s.t_ms / 1000.0 for s in flow.samples]
            ax.step(ts, [s.running_jobs if s.running_jobs is not None else s.in_progress
                         for s in flow.samples], where="post", lw=1.5, color=colour,
                    label=f"{prof}: the daemon's own count")
            drew = True
        ts, ns = _client_in_flight(flow)
        if ts:
            ax.step(ts, ns, where="post", lw=1, ls="--", color=colour,
                    label=f"{prof}: requests sent, not answered")
            drew = True
    ax.set_xlabel("s since the flow started", fontsize=8)
    ax.set_ylabel("jobs in flight", fontsize=8)
    ax.set_ylim(bottom=0)
    ax.set_title(f"{wl}: jobs in flight over time", fontsize=9)
    if drew:
        ax.legend(fontsize=7)
    return drew


def in_flight_svg(profiles: Sequence[str], workloads: Sequence[str],
                  runs: Sequence[RunRecord]) -> str:
    """Per workload, each profile's jobs in flight during its workload flow: the daemon's own
    figure as sampled every ~0.25 s (``cuzk_running_jobs``, else work items in progress;
    solid) and the requests the client had sent and not yet seen answered (dashed), as inline
    SVG."""
    workloads = [w for w in workloads
                 if any(f.samples or f.jobs for _p, f in _workload_flows(profiles, runs, w))]
    if not workloads:
        return ""
    fig, axes = figure(min(5.0 * len(workloads), 12.0), 2.6, ncols=len(workloads))
    drew = [_draw_in_flight(ax, profiles, runs, wl) for ax, wl in zip(axes, workloads)]
    return svg_of(fig, "jobs in flight over time") if any(drew) else ""


def samples_svg(m: TimingVerdict, title: str, sides: Sequence[str] = ()) -> str:
    """Both sides' samples of one timing verdict in drawing order (rounds; warmup hollow), a
    dashed line at each side's median, as inline SVG; ``sides`` names them (default the
    verdict's ``left`` and ``right``)."""
    if not (m.left_samples or m.right_samples):
        return ""
    names = tuple(sides) or (m.left, m.right)
    fig, (ax,) = figure(5.0, 2.4)
    for samples, label, colour, summary in ((m.left_samples, names[0], PALETTE[0],
                                             m.left_summary),
                                            (m.right_samples, names[1], PALETTE[1],
                                             m.right_summary)):
        xs = list(range(len(samples)))
        warm = m.warmup_pairs
        ax.plot(xs[warm:], samples[warm:], "o-", color=colour, label=label, ms=4, lw=1)
        if warm:
            ax.plot(xs[:warm], samples[:warm], "o", mfc="none", color=colour, ms=4)
        if summary.n:
            ax.axhline(summary.median, color=colour, ls="--", lw=0.8)
    ax.set_xlabel("round (hollow: warmup)" if m.warmup_pairs else "sample, in drawing order",
                  fontsize=8)
    ax.set_ylabel(f"{m.metric} ({m.unit})", fontsize=8)
    ax.set_title(f"{title}: {m.verdict}", fontsize=9)
    ax.legend(fontsize=7)
    return svg_of(fig, f"{title}: samples of both sides")
