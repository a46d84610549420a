"""Time spans shared by the overhead benchmarks: the wall-clock union of possibly overlapping
intervals (concurrent flows must not be counted twice)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence


def union(spans: Iterable[Sequence[float]]) -> list[list[float]]:
    """The disjoint, sorted union of ``(start, end)`` spans (any unit; end >= start)."""
    out: list[list[float]] = []
    for a, b in sorted((float(s[0]), float(s[1])) for s in spans):
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return out


def covered(spans: Iterable[Sequence[float]]) -> float:
    """Total length of the union of ``spans`` (same unit as the spans)."""
    return sum(b - a for a, b in union(spans))


def flow_span_s(flow: dict) -> tuple[float, float] | None:
    """One summary.json flow's ``(start, end)`` in Unix s: its first job's send time plus the
    flow's ``wall_ms`` (first submit to last answer); ``None`` when no job says when it was
    sent (``started_unix_s`` 0 or absent)."""
    starts = [j.get("started_unix_s") or 0.0 for j in flow.get("jobs", [])]
    starts = [s for s in starts if s > 0]
    if not starts:
        return None
    t0 = min(starts)
    return t0, t0 + float(flow.get("wall_ms") or 0.0) / 1000.0
