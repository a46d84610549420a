"""Reading the history: a metric's series per machine, profile and workload, oldest first.

One point per cell (a run's profile x workload x image) in time order; its value is the
metric's (:mod:`proofdiff.history.metrics`), ``None`` when the cell has nothing to say (a run
that failed before proving, a metric it did not sample). Series never mix machine
fingerprints (:mod:`proofdiff.history.fingerprint`).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar, Unpack

from sqlalchemy import Select, func, select
from sqlalchemy.exc import DBAPIError, SQLAlchemyError

from proofdiff.history.database import History, HistoryError, describe_failure
from proofdiff.history.fingerprint import MachineKey
from proofdiff.history.metrics import METRICS, MetricSpec, SampleRow
from proofdiff.history.schema import Cell, Machine, Run, Sample

__all__ = ["Point", "Series", "load_series", "metric_spec", "recorded_metrics", "run_count"]


@dataclass(frozen=True)
class Point:
    """One cell's value: the run (id, time, command, commit, verdict), the image it ran
    (tag, digest), the metric's ``value`` (``None``: nothing to say) and ``n`` samples read."""

    run_id: str
    created_at: datetime
    command: str
    commit: str
    verdict: str
    image_tag: str
    image_digest: str
    value: float | None
    n: int


@dataclass(frozen=True)
class Series:
    """One metric over runs on one machine, profile and workload."""

    machine: MachineKey
    profile: str
    workload: str
    metric: MetricSpec
    points: tuple[Point, ...]

    @property
    def valued(self) -> list[Point]:
        """The points that have a value, in order."""
        return [p for p in self.points if p.value is not None]


def metric_spec(name: str) -> MetricSpec:
    """The metric called ``name``.

    Raises:
        HistoryError: no such metric (the valid names listed).
    """
    try:
        return METRICS[name]
    except KeyError:
        raise HistoryError(f"no metric {name!r} in proofdiff history",
                           fix=f"use one of: {', '.join(METRICS)}") from None


_Q = TypeVar("_Q", bound=Select[Unpack[tuple[Any, ...]]])


def _filtered(q: _Q, profile: Sequence[str], workload: Sequence[str], machine: str | None,
              command: Sequence[str] = ()) -> _Q:
    if profile:
        q = q.where(Cell.profile.in_(profile))
    if workload:
        q = q.where(Cell.workload.in_(workload))
    if machine:
        q = q.where((Machine.fingerprint.startswith(machine)) | (Machine.host == machine))
    if command:
        q = q.where(Run.command.in_(command))
    return q


def run_count(history: History) -> int:
    """How many runs the history holds."""
    try:
        with history.engine.connect() as conn:
            return int(conn.scalar(select(func.count(Run.id))) or 0)
    except (DBAPIError, SQLAlchemyError) as exc:
        raise describe_failure(exc, history.url) from None


def recorded_metrics(history: History) -> list[str]:
    """The metrics that have at least one value in the history (start-to-ready included when
    any daemon came up)."""
    try:
        with history.engine.connect() as conn:
            kinds = set(conn.scalars(select(Sample.metric).distinct()))
            ready = conn.scalar(select(func.count(Cell.id)).where(
                Cell.start_to_ready_ms.is_not(None)))
    except (DBAPIError, SQLAlchemyError) as exc:
        raise describe_failure(exc, history.url) from None
    return [m.name for m in METRICS.values()
            if (m.reads and set(m.reads) & kinds) or (not m.reads and ready)]


def load_series(history: History, metric: str, *, profile: Sequence[str] = (),
                workload: Sequence[str] = (), machine: str | None = None,
                last: int | None = None, command: Sequence[str] = ()) -> list[Series]:
    """Every series of ``metric`` (only these profiles and workloads, and runs made by these
    commands, ``run``, ``nightly``..., when given; one machine: a fingerprint prefix or a
    hostname), each its ``last`` points at most, ordered by machine, profile, workload.

    Raises:
        HistoryError: an unknown metric; a database that fails while read.
    """
    spec = metric_spec(metric)
    cells_q = _filtered(
        select(Cell.id, Cell.profile, Cell.workload, Cell.image_tag, Cell.image_digest,
               Cell.start_to_ready_ms, Run.run_id, Run.created_at, Run.command, Run.commit,
               Run.verdict, Machine.fingerprint, Machine.host, Machine.gpu_model,
               Machine.gpu_driver, Machine.cpus, Machine.mem_gib)
        .join(Run, Cell.run_pk == Run.id).join(Machine, Run.machine_id == Machine.id),
        profile, workload, machine, command).order_by(Run.created_at, Run.id, Cell.id)
    rows: dict[int, list[SampleRow]] = defaultdict(list)
    try:
        with history.engine.connect() as conn:
            cells = conn.execute(cells_q).all()
            if spec.reads and cells:
                samples_q = _filtered(
                    select(Sample.cell_id, Sample.metric, Sample.value, Sample.flow,
                           Sample.status, Sample.valid, Sample.warmup)
                    .join(Cell, Sample.cell_id == Cell.id).join(Run, Cell.run_pk == Run.id)
                    .join(Machine, Run.machine_id == Machine.id)
                    .where(Sample.metric.in_(spec.reads)), profile, workload, machine, command)
                for s in conn.execute(samples_q):
                    rows[s.cell_id].append(SampleRow(s.metric, s.value, s.flow, s.status,
                                                     s.valid, s.warmup))
    except (DBAPIError, SQLAlchemyError) as exc:
        raise describe_failure(exc, history.url) from None
    groups: dict[tuple[str, str, str], list[Point]] = defaultdict(list)
    machines: dict[str, MachineKey] = {}
    for c in cells:
        machines[c.fingerprint] = MachineKey(c.fingerprint, c.host, c.gpu_model, c.gpu_driver,
                                             c.cpus, c.mem_gib)
        mine = rows.get(c.id, [])
        value = spec.value(mine) if spec.reads else c.start_to_ready_ms
        groups[(c.fingerprint, c.profile, c.workload)].append(Point(
            run_id=c.run_id, created_at=c.created_at, command=c.command, commit=c.commit,
            verdict=c.verdict, image_tag=c.image_tag, image_digest=c.image_digest,
            value=value, n=len(mine) if spec.reads else int(value is not None)))
    return [Series(machines[fp], prof, wl, spec, tuple(points[-last:] if last else points))
            for (fp, prof, wl), points in sorted(groups.items())]
