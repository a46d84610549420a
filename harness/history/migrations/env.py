"""Alembic's environment for the history: migrate the connection that
:func:`proofdiff.history.database.open_history` hands over in ``config.attributes``
(``connection``); never run from the ``alembic`` command line with an ini file."""

from __future__ import annotations

from alembic import context

from proofdiff.history.schema import Base

_conn = context.config.attributes["connection"]
context.configure(connection=_conn, target_metadata=Base.metadata, render_as_batch=True,
                  compare_type=True)
with context.begin_transaction():
    context.run_migrations()
