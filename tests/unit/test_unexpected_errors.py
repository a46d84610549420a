"""What is not a result is never exit 1: an exception that no workflow expected (a
bug of proofdiff's, a library's error nobody explained) is ERROR (exit 3) with its traceback,
and the report the workflow has is written; bad input that a library rejects in its own words
(a non-numeric port in a ``--history`` URL) is a clear error naming the fix."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from proofdiff.cli import main
from proofdiff.core.differential import run_differential
from proofdiff.model.run_options import RunOptions
from proofdiff.model.status import Verdict

pytestmark = pytest.mark.unit

#: A PostgreSQL URL whose port is not a number, with a password that must never be printed.
BAD_PORT = "postgresql://proofdiff:hunter2@127.0.0.1:fivefour/history"


def test_a_history_url_whose_port_is_not_a_number_is_a_clear_error(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["history", "--history", BAD_PORT, "--report-dir", str(tmp_path)])
    out = capsys.readouterr().out
    assert rc == 3, out
    assert "a port must be a number" in out and "numeric PORT" in out, out
    assert "hunter2" not in out and "Traceback" not in out


def test_a_night_with_such_a_history_exits_3_with_its_report(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text("[profiles.bench\n", encoding="utf-8")
    rc = main(["nightly", "--profiles", str(bad), "--history", BAD_PORT, "--report-dir",
               str(tmp_path / "rep"), "--run-id", "n1", "--bisect-budget-s", "0"])
    assert rc == 3
    night = json.loads((tmp_path / "rep" / "n1" / "summary.json").read_text())
    assert night["decision"] == "error"
    assert any("a port must be a number" in e for e in night["errors"]), night["errors"]


def test_an_unexpected_exception_in_a_run_is_error_with_its_traceback_and_report(
        tmp_path: Path) -> None:
    # a library caller's override that is no text (a number): nothing of proofdiff's turns
    # what follows into an error of its own, so it is unexpected, and the run says so
    res = run_differential(RunOptions(report_dir=str(tmp_path), run_id="r-bug",
                                      overrides=(7,)))  # type: ignore[arg-type]
    assert res.verdict is Verdict.ERROR and res.exit_code == 3, res.verdict_line
    assert res.verdict_line.startswith("the differential ended with an unexpected error, ")
    assert "Traceback (most recent call last)" in res.errors[0]
    summary = json.loads((tmp_path / "r-bug" / "summary.json").read_text())
    assert summary["verdict"] == "ERROR" and "Traceback" in summary["errors"][0]


def test_an_unknown_suite_from_a_library_caller_is_an_error_with_the_known_ones(
        tmp_path: Path) -> None:
    res = run_differential(RunOptions(report_dir=str(tmp_path), run_id="r-suite",
                                      suites=("validty",)))
    assert res.verdict is Verdict.ERROR, res.verdict_line
    assert res.verdict_line == "unknown suite 'validty'; known: preflight, validity, warmup, " \
        "isolation, behaviour, timing, or 'all'"
    assert "Traceback" not in res.errors[0] and "fix: name one of those suites" in res.errors[0]
