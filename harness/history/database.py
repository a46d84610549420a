"""Opening the history: a SQLAlchemy URL (or a SQLite file), migrated to this proofdiff's
schema by its Alembic revisions, or a :class:`HistoryError` that names the cause and the fix.

* A plain path (no ``://``) is a SQLite file; ``postgresql://`` and ``postgres://`` mean
  ``postgresql+psycopg://`` (psycopg 3, the driver of the ``postgres`` extra).
* SQLite waits at most ``lock_timeout_s`` (default :data:`LOCK_TIMEOUT_S`) for another writer
  (its busy timeout); PostgreSQL at most :data:`CONNECT_TIMEOUT_S` to connect.
* A database at a revision this proofdiff does not know (written by a newer one) is refused,
  never downgraded or written to; an older one is upgraded in place (``alembic upgrade head``,
  in one transaction; on PostgreSQL under an advisory lock, so runners that start together
  migrate once).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from alembic.util import CommandError
from sqlalchemy import Engine, create_engine, event, text
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError, DBAPIError, NoSuchModuleError, SQLAlchemyError

from proofdiff.history.redaction import shown_url, without_secrets
from proofdiff.model.errors import ProofdiffError

__all__ = ["CONNECT_TIMEOUT_S", "DEFAULT_FILE", "LOCK_TIMEOUT_S", "History", "HistoryError",
           "history_url", "open_history", "schema_head"]

#: The SQLite file in the report root when ``--history`` is given without a value.
DEFAULT_FILE = "history.sqlite"
#: How long a SQLite writer waits for another one's lock, seconds.
LOCK_TIMEOUT_S = 10.0
#: How long to wait for a PostgreSQL server to accept the connection, seconds.
CONNECT_TIMEOUT_S = 10
#: Where the migrations live, as Alembic resolves a package resource.
SCRIPT_LOCATION = "proofdiff.history:migrations"
#: ``pg_advisory_xact_lock`` key of the migration (any constant of ours).
_PG_MIGRATION_LOCK = 0x70726F6F66


class HistoryError(ProofdiffError):
    """The history could not be opened, read or written: locked, corrupt, of a newer schema,
    unreachable, or a URL that does not parse (the cause names the database, never its
    password)."""


@dataclass
class History:
    """An open history database.

    Attributes:
        url: the URL as shown to people (every password masked:
            :func:`~proofdiff.history.redaction.shown_url`). engine: SQLAlchemy's engine.
    """

    url: str
    engine: Engine

    def close(self) -> None:
        """Release the engine's connections."""
        self.engine.dispose()


def history_url(value: str, report_root: Path) -> str:
    """The SQLAlchemy URL of a ``--history`` value: '' or ``default`` -> the SQLite file
    :data:`DEFAULT_FILE` in ``report_root``; a path -> that SQLite file; ``postgresql://`` /
    ``postgres://`` -> ``postgresql+psycopg://``; any other URL as given."""
    if value in ("", "default"):
        return f"sqlite:///{(report_root / DEFAULT_FILE).absolute()}"
    if "://" not in value:
        return f"sqlite:///{Path(value).expanduser().absolute()}"
    for short in ("postgresql://", "postgres://"):
        if value.startswith(short):
            return "postgresql+psycopg://" + value[len(short):]
    return value


def _config() -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", SCRIPT_LOCATION)
    return cfg


def schema_head() -> str:
    """The newest schema revision this proofdiff knows."""
    head = ScriptDirectory.from_config(_config()).get_current_head()
    assert head is not None, "the shipped migrations have no head"
    return head


def _engine(url: URL, lock_timeout_s: float) -> Engine:
    if url.get_backend_name() == "sqlite":
        db = url.database or ""
        if db and db != ":memory:":
            Path(db).parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(url, connect_args={"timeout": lock_timeout_s})

        @event.listens_for(engine, "connect")
        def _pragmas(dbapi_conn: object, _record: object) -> None:
            cur = dbapi_conn.cursor()  # type: ignore[attr-defined]
            cur.execute("PRAGMA foreign_keys=ON")
            cur.close()
        return engine
    if url.get_backend_name() == "postgresql":
        return create_engine(url, connect_args={"connect_timeout": CONNECT_TIMEOUT_S},
                             pool_pre_ping=True)
    return create_engine(url)


def describe_failure(exc: BaseException, shown: str) -> HistoryError:
    """The :class:`HistoryError` of a database error on ``shown`` (the URL, password hidden):
    locked, corrupt, unreachable, or the driver's own words."""
    words = str(getattr(exc, "orig", None) or exc).strip()
    low = words.lower()
    if "database is locked" in low:
        return HistoryError(f"history {shown} is locked: another process holds its write lock "
                            f"and did not release it within the wait ({words})",
                            fix="wait for the other proofdiff (or sqlite3 shell) to finish, or "
                                "give this run its own --history file")
    if "not a database" in low or "malformed" in low or "file is encrypted" in low:
        return HistoryError(f"history {shown} is not a readable SQLite database: {words}",
                            fix="move the file aside and rerun (a new history is created); "
                                "`sqlite3 FILE .recover` may save the runs in it")
    if "connection" in low or "could not" in low or "timeout" in low or "refused" in low:
        return HistoryError(f"history {shown} is unreachable: {words.splitlines()[0]}",
                            fix="start the PostgreSQL server or correct the --history URL "
                                "(postgresql://USER@HOST:PORT/DB); the run itself is reported")
    return HistoryError(f"history {shown}: {words.splitlines()[0] if words else type(exc).__name__}",
                        fix="check the --history URL and the database's permissions")


def _check_revision(conn: object, shown: str) -> None:
    current = MigrationContext.configure(conn).get_current_heads()  # type: ignore[arg-type]
    script = ScriptDirectory.from_config(_config())
    for rev in current:
        try:
            script.get_revision(rev)
        except CommandError:
            raise HistoryError(
                f"history {shown} has schema revision {rev!r}, newer than this proofdiff knows "
                f"(its newest is {schema_head()!r}): it was written by a newer proofdiff",
                fix="upgrade proofdiff (pip install -U proofdiff) to read and write it, or give "
                    "--history another database") from None


def open_history(url: str, *, lock_timeout_s: float = LOCK_TIMEOUT_S,
                 migrate: bool = True) -> History:
    """Open ``url`` and bring its schema to this proofdiff's head.

    Args:
        url: a SQLAlchemy URL (:func:`history_url` turns a ``--history`` value into one).
        lock_timeout_s: SQLite's busy timeout, seconds (default :data:`LOCK_TIMEOUT_S`).
        migrate: upgrade an older schema (default); false only checks it (``history``
            reading a database it must not change; a database with no schema reads as empty).

    Raises:
        HistoryError: the URL does not parse (a port that is not a number included) or names
            no installed driver (psycopg: the ``postgres`` extra,
            :func:`proofdiff.model.extras.require`); the database is
            locked, corrupt, unreachable, or of a newer schema (module docstring).
    """
    shown = shown_url(url)  # every message below names the database by this alone
    try:
        parsed = make_url(url)
    except (ArgumentError, ValueError) as exc:  # ValueError: a port that is not a number
        port = "; a port must be a number" if isinstance(exc, ValueError) else ""
        raise HistoryError(f"--history {shown!r} is not a database URL: "
                           f"{without_secrets(str(exc), url)}{port}",
                           fix="give a SQLite file path, sqlite:///PATH or "
                               "postgresql://USER@HOST:PORT/DB with a numeric PORT (e.g. "
                               "5432)") from None
    if migrate and parsed.get_backend_name() == "sqlite" and parsed.database not in (None, "",
                                                                                      ":memory:"):
        # a new history file's folder is made, as a report dir is (not when only reading)
        Path(parsed.database).expanduser().parent.mkdir(parents=True, exist_ok=True)
    if parsed.get_backend_name() == "postgresql" and parsed.get_driver_name() == "psycopg":
        from proofdiff.model.extras import require

        require("postgres", "psycopg", needed_by=f"--history {shown}", error=HistoryError)
    try:
        engine = _engine(parsed, lock_timeout_s)
    except (NoSuchModuleError, ImportError) as exc:
        raise HistoryError(f"--history {shown}: no driver for it installed ({exc})",
                           fix="use sqlite:///PATH, or postgresql://... with the postgres "
                               "extra (pip install 'proofdiff[postgres]')") from None
    try:
        with engine.begin() as conn:
            if parsed.get_backend_name() == "postgresql":
                conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": _PG_MIGRATION_LOCK})
            _check_revision(conn, shown)
            if migrate:
                cfg = _config()
                cfg.attributes["connection"] = conn
                command.upgrade(cfg, "head")
    except HistoryError:
        engine.dispose()
        raise
    except (DBAPIError, SQLAlchemyError, OSError) as exc:
        engine.dispose()
        err = describe_failure(exc, shown)  # the driver's words may quote its DSN
        raise HistoryError(without_secrets(err.cause, url), fix=err.fix) from None
    return History(url=shown, engine=engine)
