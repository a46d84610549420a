"""The run history on a real PostgreSQL server, started here from Debian's packages
(``postgresql-15``: ``initdb`` and ``pg_ctl`` under /usr/lib/postgresql/N/bin; the Makefile's
``sysdeps`` installs them), as the ``postgres`` user when we are root, on a free 127.0.0.1
port, trust authentication, its data in a temporary folder: the migrations, a stored run read
back, a newer schema refused (an unreachable server: tests/unit/test_history_cli.py)."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import text

from proofdiff.history.database import HistoryError, open_history, schema_head
from proofdiff.history.query import load_series
from proofdiff.history.schema import Base
from proofdiff.history.store import store_result
from proofdiff.runtime.ports import free_port
from tests.unit.test_history_store import COMMIT, result, timed_run

#: Deadline of pg_ctl's start and stop, seconds.
PG_CTL_TIMEOUT_S = 60


def _bin_dir() -> Path | None:
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"),
                   key=lambda p: int(p.parts[-3]) if p.parts[-3].isdigit() else 0)
    return found[-1].parent if found else None


class PgServer:
    """One throwaway PostgreSQL server: ``url`` (postgresql://postgres@127.0.0.1:PORT/...),
    ``stop()``."""

    def __init__(self, bin_dir: Path, root: Path) -> None:
        self.bin, self.data, self.port = bin_dir, root / "data", free_port()
        self.sock, self.log = root / "sock", root / "server.log"
        self.sock.mkdir()
        self.as_user = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
        if self.as_user:
            shutil.chown(root, "postgres")
            shutil.chown(self.sock, "postgres")
        self._pg("initdb", "-D", str(self.data), "-A", "trust", "-U", "postgres", "-E", "UTF8",
                 "--no-sync")
        self._pg("pg_ctl", "-D", str(self.data), "-l", str(self.log), "-w", "-t",
                 str(PG_CTL_TIMEOUT_S), "-o",
                 f"-c listen_addresses=127.0.0.1 -p {self.port} -k {self.sock} -c fsync=off",
                 "start")
        self.url = f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def _pg(self, tool: str, *args: str) -> None:
        proc = subprocess.run([*self.as_user, str(self.bin / tool), *args], capture_output=True,
                              text=True, timeout=PG_CTL_TIMEOUT_S + 30)
        if proc.returncode:
            tail = self.log.read_text()[-2000:] if self.log.is_file() else ""
            raise RuntimeError(f"{tool} exited {proc.returncode}: {proc.stderr}{tail}")

    def database(self, name: str) -> str:
        """A new empty database's URL."""
        h = open_history(self.url, migrate=False)
        try:
            with h.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
                conn.execute(text(f'CREATE DATABASE "{name}"'))
        finally:
            h.close()
        return self.url.rsplit("/", 1)[0] + f"/{name}"

    def stop(self) -> None:
        self._pg("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "-t",
                 str(PG_CTL_TIMEOUT_S), "stop")


@pytest.fixture(scope="module")
def pg() -> Iterator[PgServer]:
    bin_dir = _bin_dir()
    if bin_dir is None:
        pytest.skip("no PostgreSQL server binaries (/usr/lib/postgresql/N/bin): "
                    "`make sysdeps` installs Debian's postgresql")
    root = Path(tempfile.mkdtemp(prefix="proofdiff-pg-"))
    server = None
    try:
        server = PgServer(bin_dir, root)
        yield server
    finally:
        if server is not None:
            server.stop()
        shutil.rmtree(root, ignore_errors=True)


def test_runs_stored_in_postgresql_read_back(pg: PgServer) -> None:
    h = open_history(pg.database("readback"))
    try:
        with h.engine.connect() as conn:
            ctx = MigrationContext.configure(conn)
            assert ctx.get_current_heads() == (schema_head(),)
            assert compare_metadata(ctx, Base.metadata) == []
        for i, ms in enumerate((1000.0, 1010.0)):
            store_result(h, result(f"pg{i}", (timed_run(ms),), t=1_764_000_000.0 + i),
                         command="nightly", commit=COMMIT)
        [lat] = load_series(h, "latency")
        assert [(p.run_id, p.value) for p in lat.points] == [("pg0", 1000.0), ("pg1", 1010.0)]
        assert lat.machine.gpu_model == "NVIDIA H200"
    finally:
        h.close()


def test_a_newer_schema_in_postgresql_is_refused(pg: PgServer) -> None:
    url = pg.database("newer")
    h = open_history(url)
    with h.engine.begin() as conn:
        conn.execute(text("UPDATE alembic_version SET version_num = '9999_from_the_future'"))
    h.close()
    with pytest.raises(HistoryError, match="newer than this proofdiff knows"):
        open_history(url)



def _refused_within(url: str, deadline_s: float) -> None:
    """Return once the server refuses ``url`` (a reload takes effect for new connections
    after the postmaster reads its SIGHUP: not at once)."""
    import time

    end = time.monotonic() + deadline_s
    while True:
        try:
            open_history(url, migrate=False).close()
        except HistoryError as exc:
            assert "password authentication failed" in str(exc), str(exc)
            return
        assert time.monotonic() < end, f"pg_hba.conf's reload not seen within {deadline_s} s"
        time.sleep(0.1)


def test_a_password_is_masked_whether_the_server_takes_it_or_refuses_it(
        pg: PgServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # a role that must give its password (scram-sha-256 for it alone, ahead of trust): stored
    # with the right one, refused with a wrong one; in both, the console, the report folder and
    # the history command show the URL with the password masked
    from proofdiff.cli import main

    secret = "Pg-s3cret-w0rd"
    h = open_history(pg.url, migrate=False)
    try:
        with h.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            conn.execute(text(f"CREATE ROLE pwuser LOGIN PASSWORD '{secret}'"))
            conn.execute(text('CREATE DATABASE "pw" OWNER pwuser'))
    finally:
        h.close()
    hba = pg.data / "pg_hba.conf"
    hba.write_text("host all pwuser 127.0.0.1/32 scram-sha-256\n" + hba.read_text())
    pg._pg("pg_ctl", "-D", str(pg.data), "reload")
    _refused_within(f"postgresql://pwuser:wrong@127.0.0.1:{pg.port}/pw", deadline_s=10)
    bad = tmp_path / "bad.toml"
    bad.write_text("[profiles.bench\n", encoding="utf-8")
    rep = tmp_path / "rep"
    base = f"127.0.0.1:{pg.port}/pw"
    # the password as libpq takes it, in the userinfo and as the password parameter
    for rid, url, said in (
            ("right", f"postgresql://pwuser@{base}?password={secret}",
             f"history: stored run right (#1) in postgresql+psycopg://pwuser@{base}?password=***"),
            ("wrong", f"postgresql://pwuser:{secret[::-1]}@{base}",
             "password authentication failed")):
        rc = main(["run", "--profiles", str(bad), "--report-dir", str(rep), "--run-id", rid,
                   "--history", url])
        out = capsys.readouterr().out
        pw = url.split("password=")[-1] if rid == "right" else secret[::-1]
        assert rc == 3 and said in out, out
        assert pw not in out and not [p for p in rep.rglob("*")
                                      if p.is_file() and pw.encode() in p.read_bytes()]
    rc = main(["history", "--report-dir", str(rep), "--history",
               f"postgresql://pwuser:{secret}@{base}"])
    out = capsys.readouterr().out
    assert secret not in out and f"pwuser:***@{base}" in out, out
