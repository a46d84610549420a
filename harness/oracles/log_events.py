"""Work items and job totals as the daemon's log records them: events, kept apart from its
status figures.

A daemon's log is its own account, but of events (this partition started, that one finished),
each with its time, not a counter it maintains: proofdiff takes the intervals from it and checks
each against what it observed itself (the request's send and answer times) before it counts
them. Two formats are read:

* refprover (``targets/refprover/src/engine.rs``, the ``tracing`` formatter: an RFC 3339 time,
  the level, the message, then ``key=value`` fields): ``partition start`` and ``partition done``
  with ``job_id``, ``seq`` and ``partition`` (debug level: a profile that logs
  ``refprover=debug``, as refprover's prod does), and ``job completed`` with ``total_ms``;
* cuzk (curio ``extern/cuzk/cuzk-core/src/engine.rs``, ``timeline_event``): stderr lines
  ``TIMELINE,<ms since the engine started>,<event>,<job_id>,<detail>``; a partition's synthesis
  runs from ``SYNTH_START`` to ``SYNTH_END`` (detail ``partition=N``; a monolithic job's has
  none), which is what ``pipeline.max_parallel_synthesis`` limits. Its times are offsets from
  the engine's start, so they give overlaps but cannot be placed against the client's clock;
  cuzk's ``all partitions complete, proof assembled`` line carries the job's ``total_ms``.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

from proofdiff.model.jobs import JobRecord
from proofdiff.oracles.overlap_sweep import most_at_once

__all__ = ["LoggedItem", "fitted", "logged_items", "logged_totals", "max_overlap"]

_ANSI = re.compile(r"\x1b\[[0-9;]*m")
#: A field's value runs to the next `` key=`` (curio's WindowPoSt ids hold spaces:
#: ``wdpost-1000-0-[219 155 147 89 151 100 219 25]``).
_ID = r"\bjob_id=(.*?)(?=\s+\w+=)"
_TRACING = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z)\s+[A-Z]+\s+(?:\S+: )?"
                      r"partition (start|done)\b.*?" + _ID + r"\s+seq=(\d+).*?"
                      r"\bpartition=(\d+)")
_TIMELINE = re.compile(r"^TIMELINE,(\d+),(SYNTH_START|SYNTH_END),([^,]*),(.*)$")
_TOTAL = re.compile(_ID + r".*?\btotal_ms=(\d+)")
_PARTITION = re.compile(r"\bpartition=(\d+)")
#: Clock slack when placing a logged interval inside the client's view of its request, seconds:
#: the log's times are the daemon's clock, the request's the client's (one host, one clock; the
#: slack covers the log's microseconds against the client's reads of the clock).
FIT_SLACK_S = 0.05


@dataclass(frozen=True)
class LoggedItem:
    """One work item's interval from the log: ``job_id``, ``seq`` (the daemon's job sequence
    number where it logs one, else ``None``), ``partition`` (``None``: a monolithic job),
    ``start`` and ``end`` seconds (``wall``: since the epoch; else since the engine started)."""

    job_id: str
    seq: int | None
    partition: int | None
    start: float
    end: float
    wall: bool


def _unix_s(stamp: str) -> float:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def logged_items(log: str) -> list[LoggedItem]:
    """Every work item the log shows started and finished, in start order (module docstring);
    an item with no end yet is left out."""
    open_: dict[tuple[str, int | None, int | None], list[tuple[float, bool]]] = defaultdict(list)
    items: list[LoggedItem] = []
    for raw in log.splitlines():
        line = _ANSI.sub("", raw).strip()
        if (m := _TRACING.match(line)) is not None:
            key: tuple[str, int | None, int | None] = (m.group(3), int(m.group(4)),
                                                       int(m.group(5)))
            at, wall, began = _unix_s(m.group(1)), True, m.group(2) == "start"
        elif (t := _TIMELINE.match(line)) is not None:
            part = _PARTITION.search(t.group(4))
            key = (t.group(3), None, int(part.group(1)) if part else None)
            at, wall, began = int(t.group(1)) / 1000.0, False, t.group(2) == "SYNTH_START"
        else:
            continue
        if began:
            open_[key].append((at, wall))
        elif open_[key]:
            start, wall = open_[key].pop(0)
            items.append(LoggedItem(job_id=key[0], seq=key[1], partition=key[2], start=start,
                                    end=at, wall=wall))
    return sorted(items, key=lambda i: i.start)


def logged_totals(log: str) -> dict[str, list[int]]:
    """``total_ms`` per job id, as the log says it at each job's end (refprover's ``job
    completed``, cuzk's ``proof assembled``), in log order."""
    out: dict[str, list[int]] = defaultdict(list)
    for raw in log.splitlines():
        line = _ANSI.sub("", raw)
        if "job completed" in line or "proof assembled" in line:
            if (m := _TOTAL.search(line)) is not None:
                out[m.group(1).strip('"')].append(int(m.group(2)))
    return dict(out)


def fitted(items: Iterable[LoggedItem], jobs: Sequence[JobRecord]) -> tuple[list[LoggedItem],
                                                                             int]:
    """``(the items that fit, how many did not)``: an item fits when its job id was sent and
    answered and its interval lies within that request's send and answer times (the client's
    clock, :data:`FIT_SLACK_S` of slack). Items on the engine's own clock (cuzk's timeline)
    cannot be placed: none of them fits."""
    spans: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for j in jobs:
        if j.request_id and j.wall_ms > 0 and not j.await_only:
            spans[j.request_id].append((j.started_unix_s, j.started_unix_s + j.wall_ms / 1000))
    good, bad = [], 0
    for it in items:
        inside = it.wall and any(a - FIT_SLACK_S <= it.start and it.end <= b + FIT_SLACK_S
                                 for a, b in spans.get(it.job_id, ()))
        if inside:
            good.append(it)
        elif it.job_id in spans:
            bad += 1
    return good, bad


def max_overlap(items: Sequence[LoggedItem]) -> tuple[int, float, tuple[str, ...]]:
    """The most ``items`` in progress at one instant: ``(count, when, "job#partition" of each
    then)``, in the order of ``items``; touching ends do not overlap."""
    best, when, live = most_at_once([(i.start, i.end) for i in items])
    return best, when, tuple(f"{items[n].job_id}#{items[n].partition}" for n in sorted(live))
