"""The nightly page's trend: each timing series of the night's machine, profiles and workloads
over the nightly runs of the history, with its change points (the plots of
:func:`proofdiff.history.view.trend_svg`)."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import select
from sqlalchemy.exc import DBAPIError, SQLAlchemyError

from proofdiff.history.changes import MAX_PVALUE, MIN_MAGNITUDE
from proofdiff.history.database import (HistoryError, describe_failure, history_url,
                                        open_history)
from proofdiff.history.query import load_series
from proofdiff.history.schema import Cell, Machine, Run
from proofdiff.history.view import SeriesView, analyse, trend_svg
from proofdiff.nightly.nightly import NIGHT_METRICS

__all__ = ["night_trend", "trend_plots"]


def night_trend(url: str, run_id: str) -> list[SeriesView]:
    """``url``: a SQLAlchemy URL (:func:`~proofdiff.history.database.history_url`). Every :data:`~proofdiff.nightly.nightly.NIGHT_METRICS` series of the nightly run ``run_id`` stored in the history at
    ``url`` (its machine, profiles and workloads; nightly runs only), each with its change
    points (Otava's defaults, as the nightly judges them); [] when the history has no such
    run.

    Raises:
        HistoryError: the history cannot be opened or read.
    """
    db = open_history(url)
    try:
        try:
            with db.engine.connect() as conn:
                cells = conn.execute(
                    select(Machine.fingerprint, Cell.profile, Cell.workload)
                    .join(Run, Cell.run_pk == Run.id).join(Machine, Run.machine_id == Machine.id)
                    .where(Run.run_id == run_id, Run.command == "nightly")).all()
        except (DBAPIError, SQLAlchemyError) as exc:
            raise describe_failure(exc, db.url) from None
        if not cells:
            return []
        series = [s for m in NIGHT_METRICS
                  for s in load_series(db, m, profile=sorted({c.profile for c in cells}),
                                       workload=sorted({c.workload for c in cells}),
                                       machine=cells[0].fingerprint, command=("nightly",))]
    finally:
        db.close()
    return analyse([s for s in series if s.valued], max_pvalue=MAX_PVALUE,
                   min_magnitude=MIN_MAGNITUDE)


def trend_plots(history: str | None, run_id: str, report_root: Path
                ) -> tuple[list[tuple[SeriesView, str]], str]:
    """(each series with its plot, changed ones first; a note) for the page: the note says why
    there is no trend ('' when there is one, or when no history was given). ``history``: a
    ``--history`` value (a URL or a SQLite path; ``default`` is the file in ``report_root``)."""
    if not history:
        return [], ""
    try:
        views = night_trend(history_url(history, report_root), run_id)
    except HistoryError as exc:
        return [], f"the trend could not be read: {exc}"
    if not views:
        return [], f"the history holds no timing of nightly run {run_id}"
    views.sort(key=lambda v: not v.changes)
    return [(v, trend_svg(v)) for v in views], ""
