"""``--history`` on ``proofdiff run`` and the ``proofdiff history`` command on bad input: a run
that fails is stored as such; a history that fails is printed with its fix, the report is still
written and the exit code says so; ``history`` on nothing says what is missing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from proofdiff.cli import main
from proofdiff.cli.history_append import exit_with_history
from proofdiff.history.database import history_url, open_history
from proofdiff.history.store import store_result
from tests.unit.test_history_store import COMMIT, result, timed_run


def _bad_profiles(tmp_path: Path) -> Path:
    bad = tmp_path / "bad.toml"
    bad.write_text("[profiles.bench\n", encoding="utf-8")
    return bad


def test_a_run_that_could_not_run_is_stored_with_its_error(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rep = tmp_path / "rep"
    rc = main(["run", "--profiles", str(_bad_profiles(tmp_path)), "--report-dir", str(rep),
               "--run-id", "r-err", "--history"])
    assert rc == 3
    assert "history: stored run r-err (#1) in sqlite:///" in capsys.readouterr().out
    import sqlite3
    with sqlite3.connect(rep / "history.sqlite") as conn:
        (verdict, errors), = conn.execute("SELECT verdict, errors FROM runs").fetchall()
    assert verdict == "ERROR" and "malformed TOML" in json.loads(errors)[0]


def test_a_corrupt_history_is_reported_and_the_report_still_written(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad_db = tmp_path / "h.sqlite"
    bad_db.write_bytes(b"garbage " * 1000)
    rc = main(["run", "--profiles", str(_bad_profiles(tmp_path)), "--report-dir",
               str(tmp_path / "rep"), "--run-id", "r1", "--history", str(bad_db)])
    out = capsys.readouterr().out
    assert rc == 3
    assert "history: NOT STORED: history sqlite:///" in out
    assert "not a readable SQLite database" in out and "fix: move the file aside" in out
    assert json.loads((tmp_path / "rep" / "r1" / "summary.json").read_text())["run_id"] == "r1"


def test_an_unreachable_postgresql_is_reported_and_the_report_still_written(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # port 1 on the loopback: nothing listens there, the connection is refused at once
    rc = main(["run", "--profiles", str(_bad_profiles(tmp_path)), "--report-dir",
               str(tmp_path / "rep"), "--run-id", "r1", "--history",
               "postgresql://proofdiff:secret@127.0.0.1:1/history"])
    out = capsys.readouterr().out
    assert rc == 3
    assert "history: NOT STORED: history postgresql+psycopg://proofdiff:***@127.0.0.1:1/" \
           "history is unreachable" in out
    assert "secret" not in out
    assert (tmp_path / "rep" / "r1" / "summary.json").is_file()


def test_a_history_failure_raises_the_exit_code_to_3_but_keeps_an_interrupt() -> None:
    assert [exit_with_history(c, stored=False) for c in (0, 1, 2, 3, 130)] == [3, 3, 3, 3, 130]
    assert [exit_with_history(c, stored=True) for c in (0, 1, 2, 3, 130)] == [0, 1, 2, 3, 130]


def test_history_with_no_database_says_so(tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["history", "--report-dir", str(tmp_path)]) == 2
    assert f"no history at {tmp_path}/history.sqlite: no run was stored there" in \
        capsys.readouterr().out


def test_history_on_an_empty_database_says_so(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    open_history(history_url("", tmp_path)).close()
    assert main(["history", "--report-dir", str(tmp_path)]) == 2
    assert "holds no runs yet: nothing to show" in capsys.readouterr().out


def test_history_of_an_unknown_metric_lists_the_metrics(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    open_history(history_url("", tmp_path)).close()
    assert main(["history", "--report-dir", str(tmp_path), "--metric", "speed"]) == 3
    out = capsys.readouterr().out
    assert "no metric 'speed'" in out and "fix: use one of: latency, throughput," in out


def test_history_of_a_metric_never_recorded_names_the_recorded_ones(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = open_history(history_url("", tmp_path))
    store_result(db, result("r1", (timed_run(1000.0),)), command="run", commit=COMMIT)
    db.close()
    assert main(["history", "--report-dir", str(tmp_path), "--metric", "gpu-util"]) == 2
    out = capsys.readouterr().out
    assert "(1 runs) has no value of 'gpu-util'" in out
    assert "recorded metrics: latency, throughput, failure-rate" in out


def test_history_of_a_series_too_short_to_judge_says_undecided_and_exits_2(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    url = history_url(str(tmp_path / "h.sqlite"), tmp_path)
    db = open_history(url)
    for i, wall in enumerate((1000.0, 1010.0, 1500.0)):  # a step, but 3 runs cannot show one
        store_result(db, result(f"r{i}", (timed_run(wall),), t=1_764_000_000.0 + 86400 * i),
                     command="run", commit=COMMIT)
    db.close()
    rc = main(["history", "--history", url, "--html", str(tmp_path / "h.html")])
    out = capsys.readouterr().out
    assert rc == 2, out
    assert "undecided: 3 valued run(s); a change point needs 4" in out
    assert "no change point" not in out
    assert "undecided: 1 of 1 series too short to judge" in out


#: A password in every place a PostgreSQL URL can carry one: the user's, and libpq's
#: ``password`` / ``sslpassword`` parameters.
PW = "s3cret-Pw"
URLS = (f"postgresql://proofdiff:{PW}@127.0.0.1:1/history?password={PW}x&sslpassword={PW}y",
        f"postgres://proofdiff:{PW}@127.0.0.1:notaport/history")


@pytest.mark.parametrize("url", URLS, ids=["unreachable", "unparsable"])
@pytest.mark.parametrize("cmd", [
    ["run"], ["nightly"], ["gate", "--candidate", "proofdiff/none:a", "--baseline",
                           "proofdiff/none:b"], ["history"]])
def test_a_postgresql_password_reaches_no_report_log_or_console(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture,
        cmd: list[str], url: str) -> None:
    # CI uploads the report folder and the console log as artifacts: the history's URL is
    # shown everywhere with its password masked, on the path where the history fails too
    rep = tmp_path / "rep"
    extra = [] if cmd == ["history"] else ["--profiles", str(_bad_profiles(tmp_path)),
                                           "--run-id", "r1"]
    rc = main([*cmd, "--report-dir", str(rep), *extra, "--history", url])
    out, err = capsys.readouterr()
    assert rc == 3, out + err
    assert "***" in out + err, out + err  # the history named, masked
    leaks = [p for p in rep.rglob("*") if p.is_file() and PW.encode() in p.read_bytes()]
    assert not leaks, leaks
    assert cmd == ["history"] or (rep / "r1" / "summary.json").is_file()
    assert PW not in out + err + caplog.text, out + err
