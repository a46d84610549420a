"""Acceptance of the pytest plugin and the CLI on bad input: no Docker needed, because each case
stops before a container would start, and each must still write a report."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from harness.cli import EXIT_ERROR, main
from tests.conftest import REPO

pytest_plugins = ["pytester"]

BROKEN = '[defaults]\nimage = "proofdiff/refprover:latest"\nworkload = "wpost-2k"\n' \
         '[profiles.bench]\nconcurrency = 1\nworker_count = 2\n'


def _project(pytester: pytest.Pytester) -> None:
    shutil.copytree(REPO / "fixtures", pytester.path / "fixtures")
    shutil.copytree(REPO / "suites", pytester.path / "suites")
    (pytester.path / "profiles").mkdir()
    shutil.copy(REPO / "profiles" / "refprover.toml", pytester.path / "profiles")
    shutil.copy(REPO / "conftest.py", pytester.path / "conftest.py")


def test_report_header_lists_profiles_and_non_defaults(pytester: pytest.Pytester) -> None:
    _project(pytester)
    pytester.makepyfile(test_x="def test_x(): pass")
    res = pytester.runpytest_subprocess("test_x.py", "--proofdiff-set=prod.concurrency=8")
    res.assert_outcomes(passed=1)
    res.stdout.fnmatch_lines(["proofdiff: run *, profiles from *refprover.toml",
                              "  bench: image=proofdiff/refprover:latest workload=wpost-2k*",
                              "  prod: *non-default: *concurrency=8*"])
    assert not (pytester.path / "reports").exists()  # no suite ran: no report


def test_bad_set_option_is_a_usage_error(pytester: pytest.Pytester) -> None:
    _project(pytester)
    res = pytester.runpytest_subprocess("--proofdiff-set=prod")
    assert res.ret == pytest.ExitCode.USAGE_ERROR
    res.stderr.fnmatch_lines(["*expected PROFILE.KEY*"])


def test_unknown_profile_key_fails_collection_and_writes_report(pytester: pytest.Pytester) -> None:
    _project(pytester)
    bad = pytester.path / "bad.toml"
    bad.write_text(BROKEN, encoding="utf-8")
    res = pytester.runpytest_subprocess("suites", f"--proofdiff-profiles={bad}",
                                        "--proofdiff-run-id=r-bad", "-p", "no:cacheprovider")
    assert res.ret != 0
    res.stdout.fnmatch_lines(["*unknown key 'worker_count'*"])
    summary = json.loads((pytester.path / "reports" / "r-bad" / "summary.json").read_text())
    assert summary["verdict"] == "error"
    assert "unknown key 'worker_count'" in summary["errors"][0]
    assert (pytester.path / "reports" / "r-bad" / "index.html").exists()


def test_cli_profile_error_exits_3_with_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('[profiles.bench\n', encoding="utf-8")
    rc = main(["run", "--profiles", str(bad), "--report-dir", str(tmp_path / "rep"),
               "--run-id", "r1"])
    assert rc == EXIT_ERROR
    out = capsys.readouterr().out
    assert "malformed TOML" in out and f"{bad}:1" in out
    summary = json.loads((tmp_path / "rep" / "r1" / "summary.json").read_text())
    assert summary["verdict"] == "error" and "malformed TOML" in summary["errors"][0]
