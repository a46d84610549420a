"""The pytest plugin (through pytester, as an installed plugin: no conftest registers it) and the
CLI on bad input: no Docker needed, because each case stops before a container would start, and
each must still write a report."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from proofdiff.cli import main
from tests.unit.test_notify import Hook, hook  # noqa: F401 - the served webhook fixture

pytest_plugins = ["pytester"]

BROKEN = '[defaults]\nworkload = "wpost-2k"\n[profiles.bench]\nconcurrency = 1\nworker_count = 2\n'


def test_report_header_lists_profiles_and_their_differences(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_x="def test_x(): pass")
    res = pytester.runpytest_subprocess("test_x.py", "--proofdiff-set=prod.concurrency=8")
    res.assert_outcomes(passed=1)
    res.stdout.fnmatch_lines(["proofdiff: run *, profiles refprover",
                              "  bench: workload=wpost-2k",
                              "  prod: workload=wpost-2k; vs bench: *concurrency=8*"])
    assert not (pytester.path / "reports").exists()  # no proofdiff fixture was used: no report


def test_bad_set_option_is_a_usage_error(pytester: pytest.Pytester) -> None:
    res = pytester.runpytest_subprocess("--proofdiff-set=prod")
    assert res.ret == pytest.ExitCode.USAGE_ERROR
    res.stderr.fnmatch_lines(["*expected PROFILE.KEY*"])


def test_unknown_suite_is_a_usage_error_listing_the_suites(pytester: pytest.Pytester) -> None:
    res = pytester.runpytest_subprocess("--proofdiff-suite=speed")
    assert res.ret == pytest.ExitCode.USAGE_ERROR
    res.stderr.fnmatch_lines(["*not a suite; valid: preflight, validity, warmup, isolation, "
                              "behaviour, "
                              "timing, all*"])


def test_unknown_profile_key_fails_collection_and_writes_a_report(pytester: pytest.Pytester,
                                                                   hook: Hook) -> None:
    bad = pytester.path / "bad.toml"
    bad.write_text(BROKEN, encoding="utf-8")
    pytester.makepyfile(test_mine="""
        def test_mine(proofdiff_check, proofdiff_profile_name):
            proofdiff_check("validity", "proofs")
    """)
    res = pytester.runpytest_subprocess("test_mine.py", f"--proofdiff-profiles={bad}",
                                        "--proofdiff-run-id=r-bad", "-p", "no:cacheprovider",
                                        f"--proofdiff-notify={hook.url}", "--proofdiff-history")
    assert res.ret != pytest.ExitCode.OK
    res.stdout.fnmatch_lines(["*unknown key 'worker_count'*",
                              "proofdiff: notify: summary sent to http://127.0.0.1:*",
                              "proofdiff: history: stored run r-bad (#1) in sqlite:///*"])
    with sqlite3.connect(pytester.path / "reports" / "history.sqlite") as conn:
        assert conn.execute("SELECT run_id, command, verdict FROM runs").fetchall() == [
            ("r-bad", "pytest", "ERROR")]
    summary = json.loads((pytester.path / "reports" / "r-bad" / "summary.json").read_text())
    assert summary["verdict"] == "ERROR" and summary["exit_code"] == 3
    assert "unknown key 'worker_count'" in summary["errors"][0]
    assert (pytester.path / "reports" / "r-bad" / "index.html").exists()
    body = hook.got[0]["body"]  # the plugin takes the same --notify as the commands
    assert (body["kind"], body["run_id"], body["decision"]) == ("run", "r-bad", "ERROR")


def test_cli_profile_error_exits_3_with_a_report(tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('[profiles.bench\n', encoding="utf-8")
    rc = main(["run", "--profiles", str(bad), "--report-dir", str(tmp_path / "rep"),
               "--run-id", "r1"])
    assert rc == 3
    out = capsys.readouterr().out
    assert f"{bad}:1: malformed TOML" in out
    assert out.count("ERROR") == 1, out  # the verdict says ERROR once
    summary = json.loads((tmp_path / "rep" / "r1" / "summary.json").read_text())
    assert summary["verdict"] == "ERROR" and "malformed TOML" in summary["errors"][0]


def test_bracketed_text_in_errors_is_printed_literally(tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "p.toml"
    bad.write_text(BROKEN, encoding="utf-8")
    assert main(["run", "--profiles", str(bad), "--report-dir", str(tmp_path), "--run-id",
                 "r2"]) == 3
    assert f"{bad} [profiles.bench]: unknown key 'worker_count'" in capsys.readouterr().out


def test_help_states_the_exit_codes(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["run", "--help"])
    out = capsys.readouterr().out
    for line in ("0    SAME", "1    DIVERGED", "2    FAILED or INCOMPLETE", "3    ERROR",
                 "130  interrupted"):
        assert line in out


@pytest.mark.parametrize("command", ["run", "gate", "bisect", "repro"])
def test_every_command_takes_the_same_run_options(command: str,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    from proofdiff.model.profile_file import shipped_profile_sets
    with pytest.raises(SystemExit):
        main([command, "--help"])
    out = " ".join(capsys.readouterr().out.split())
    for flag in ("--param-cache", "--bin-dir", "--set", "--verifier-image", "--profiles"):
        assert flag in out, f"proofdiff {command} lacks {flag}"
    for name in shipped_profile_sets():
        assert name in out, f"proofdiff {command} --help does not name the profile set {name}"


@pytest.mark.parametrize(("outcome", "verdict", "code"), [
    ("skipped", "INCOMPLETE", 2), ("error", "ERROR", 3)])
def test_pytest_exits_with_the_verdicts_code_when_every_test_passed(
        pytester: pytest.Pytester, outcome: str, verdict: str, code: int) -> None:
    """The records come through the run dir's hand-over, as pytest-xdist workers leave them;
    the one test of the session passes, so only the verdict can make the exit non-zero (a SAME
    run exits 0: tests/e2e/test_plugin_outside_repo.py)."""
    from proofdiff.core.session import SuiteResult
    from proofdiff.core.store import FileStore
    from proofdiff.model.oracle_records import OracleRecord
    from proofdiff.model.status import Outcome

    records = tuple(OracleRecord(suite="isolation", oracle="reused-id", profile=p,
                                 workload="wpost-2k", outcome=Outcome(outcome),
                                 message=f"judged {outcome}") for p in ("bench", "prod"))
    FileStore(pytester.path / "reports" / "r-v" / "handover").get_or_compute(
        "suite//isolation/wpost-2k", SuiteResult,
        lambda: SuiteResult(suite="isolation", workload="wpost-2k", records=records), 10.0)
    _one_run_handed_over(pytester.path / "reports" / "r-v" / "handover")
    pytester.makepyfile(test_x="def test_x(): pass")
    res = pytester.runpytest_subprocess("test_x.py", "--proofdiff-run-id=r-v",
                                        "-p", "no:cacheprovider")
    res.assert_outcomes(passed=1)
    res.stdout.fnmatch_lines([f"proofdiff: {verdict}: *"])
    assert res.ret == code, res.stdout.str()[-2000:]



def _one_run_handed_over(handover: Path) -> None:
    """bench's workload run, as a worker leaves it in the run dir (no check judged it)."""
    from proofdiff.core.store import FileStore
    from proofdiff.model.image import ImageInfo
    from proofdiff.model.runs import RunRecord

    FileStore(handover).get_or_compute("run//bench/wpost-2k", RunRecord, lambda: RunRecord(
        profile="bench", workload="wpost-2k", image=ImageInfo(tag="proofdiff/refprover:x"),
        partitions=2), 10.0)


def test_a_session_that_asked_for_no_check_keeps_pytests_exit(pytester: pytest.Pytester) -> None:
    """A user's test that only read the run record (``proofdiff_run``) judged it itself."""
    _one_run_handed_over(pytester.path / "reports" / "r-run" / "handover")
    pytester.makepyfile(test_x="def test_x(): pass")
    res = pytester.runpytest_subprocess("test_x.py", "--proofdiff-run-id=r-run",
                                        "-p", "no:cacheprovider")
    res.assert_outcomes(passed=1)
    assert res.ret == 0, res.stdout.str()[-2000:]


@pytest.mark.parametrize("argv", [
    ["run"], ["gate", "--candidate", "a:1", "--baseline", "a:0"],
    ["gate", "--candidate-bin-dir", "new", "--baseline-bin-dir", "old"],
    ["repro", "--id", "x", "--title", "t"], ["bisect"]], ids=lambda a: a[0])
def test_every_workflow_takes_the_artifact_options_and_set_as_run_does(argv: list[str]) -> None:
    """One table of run options (add_run_options): gate, repro, bisect and the replay (run
    --suite regressions) read --param-cache, --bin-dir, --set and --verifier-image alike."""
    from proofdiff.cli import _parser
    from proofdiff.cli.option_flags import run_options

    args = _parser().parse_args([*argv, "--param-cache", "/p", "--bin-dir", "/b",
                                 "--set", "prod.concurrency=2", "--verifier-image", "v:1"])
    opts = run_options(args)
    assert (opts.param_cache, opts.bin_dir, opts.overrides, opts.verifier_image) == (
        "/p", "/b", ("prod.concurrency=2",), "v:1")


def test_the_gate_takes_two_images_or_two_binary_folders_not_a_mix() -> None:
    from proofdiff.cli import main

    assert main(["gate", "--candidate", "a:1", "--baseline-bin-dir", "old"]) == 3
    assert main(["gate", "--candidate", "a:1"]) == 3


@pytest.mark.parametrize("rounds", ["5", "six", "202"])
def test_gate_rounds_outside_the_schedule_is_a_usage_error(
        rounds: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["gate", "--candidate", "a:1", "--baseline", "a:1", "--rounds", rounds])
    assert exit_.value.code == 2
    assert f"{rounds!r}: expected a whole number of rounds from 6" in capsys.readouterr().err


@pytest.mark.parametrize("slowdown", ["0", "1.5", "five", "150%"])
def test_gate_max_slowdown_outside_0_1_is_a_usage_error(
        slowdown: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["gate", "--candidate", "a:1", "--baseline", "a:1", "--max-slowdown", slowdown])
    assert exit_.value.code == 2
    assert f"{slowdown!r}: expected the tolerated slowdown as a fraction" in \
        capsys.readouterr().err


@pytest.mark.parametrize("argv", [["gate", "--no-tim"], ["run", "--bisect-b", "5"],
                                  ["bisect", "--orac", "validity"]])
def test_an_abbreviated_option_is_refused_not_taken_for_another(
        argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2
    assert "unrecognized arguments" in capsys.readouterr().err
