"""Regression cases as files: a malformed or incomplete case.toml names the file and line, a
written case reads back to the same pinned profiles, the signature matches its own record and
not another, and env files read as docker reads them."""

from __future__ import annotations

import os
import tomllib
from pathlib import Path

import pytest

from proofdiff.model.oracle_records import OracleRecord
from proofdiff.model.profile_file import load_profiles, profile_table
from proofdiff.model.status import Outcome
from proofdiff.regressions.case import CaseError, load_case, write_case
from proofdiff.model.run_options import RunOptions
from proofdiff.regressions.replay import CaseOutcome, matches, replay
from proofdiff.regressions.replay_all import ALL_SKIPPED_EXIT, CaseVerdict, exit_code, judge_case
from proofdiff.regressions.repro import ReproError, read_env_file, signature

REPO = Path(__file__).resolve().parents[2]


def _doc() -> dict:
    ps = load_profiles("refprover", ["*.env.REFPROVER_FAULTS=partition-race"])
    return {"case": {"id": "c1", "title": "t", "date": "2026-12-01", "status": "open"},
            "image": {"tag": "proofdiff/refprover:x", "reference": True},
            "workload": {"name": "wpost-2k"},
            "expect": {"profile": "prod", "oracle": "validity/proofs",
                       "match": {"message": "INVALID"}},
            "fix": {"overrides": ['*.env.REFPROVER_FAULTS=""']},
            "profiles": {n: profile_table(p) for n, p in ps.items()}}


def test_a_written_case_reads_back_to_the_same_profiles_and_its_fix_applies(tmp_path: Path) -> None:
    write_case(tmp_path / "c1", _doc())
    case = load_case(tmp_path / "c1")
    ps = load_profiles("refprover", ["*.env.REFPROVER_FAULTS=partition-race"])
    got = case.resolved()
    assert got["prod"].effective_config() == ps["prod"].effective_config()
    assert got["prod"].env == ps["prod"].env and got["prod"].concurrency == 4
    assert case.resolved(fixed=True)["prod"].env["REFPROVER_FAULTS"] == ""
    assert case.status == "open" and case.reference and case.oracle == "validity/proofs"


def test_malformed_toml_names_file_and_line(tmp_path: Path) -> None:
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "case.toml").write_text('[case]\nid = "x"\ntitle = \n')
    with pytest.raises(CaseError, match=r"case.toml:3: malformed TOML"):
        load_case(tmp_path / "bad")


def test_a_missing_key_names_its_table_and_line(tmp_path: Path) -> None:
    doc = _doc()
    del doc["expect"]["oracle"]
    folder = tmp_path / "c2"
    folder.mkdir()
    import tomli_w
    (folder / "case.toml").write_text(tomli_w.dumps(doc))
    with pytest.raises(CaseError, match=r"case.toml:\d+: \[expect\] oracle is missing"):
        load_case(folder)
    doc = _doc()
    doc["case"]["status"] = "closed"
    (folder / "case.toml").write_text(tomli_w.dumps(doc))
    with pytest.raises(CaseError, match=r"status must be one of \('open', 'fixed'\)"):
        load_case(folder)


@pytest.mark.parametrize("where", ["../outside.json", "/etc/passwd", "link.json"])
def test_a_case_workload_file_outside_its_folder_is_refused(tmp_path: Path, where: str) -> None:
    # a case folder is shipped to fleet hosts and read by a replay: its inputs are its own
    # files, never a path (or a link) that reaches elsewhere on the machine
    import tomli_w

    (tmp_path / "outside.json").write_text("{}")
    folder = tmp_path / "c3"
    folder.mkdir()
    (folder / "link.json").symlink_to(tmp_path / "outside.json")
    doc = _doc()
    doc["workload"] = {"file": where}
    (folder / "case.toml").write_text(tomli_w.dumps(doc))
    with pytest.raises(CaseError) as err:
        load_case(folder)
    assert f"[workload] file = {where!r} is outside the case folder" in str(err.value)
    assert str(err.value).startswith(f"{folder / 'case.toml'}:"), str(err.value)
    assert "copy the inputs into" in err.value.fix
    (folder / "inputs.json").write_text("{}")  # a file of its own is taken
    doc["workload"] = {"file": "inputs.json"}
    (folder / "case.toml").write_text(tomli_w.dumps(doc))
    assert load_case(folder).workload_file == str((folder / "inputs.json").resolve())


def test_the_signature_matches_its_record_and_not_another_failure() -> None:
    rec = OracleRecord(suite="validity", oracle="proofs", profile="prod", workload="wpost-2k",
                       outcome=Outcome.FAIL, message="3 of 4 proofs INVALID on prod: job "
                       "wpost-0 (id 4f0e2a3c-aaaa) partitions [0, 1]\nmore")
    sig = signature(rec)
    assert matches(rec, sig)
    other = OracleRecord(suite="validity", oracle="proofs", profile="prod", workload="wpost-2k",
                         outcome=Outcome.FAIL, message="1 of 4 jobs FAILED on prod: timeout")
    assert not matches(other, sig)
    again = OracleRecord(suite="validity", oracle="proofs", profile="prod", workload="wpost-2k",
                         outcome=Outcome.FAIL, message="4 of 4 proofs INVALID on prod: job "
                         "wpost-2 (id 99) partitions [1]")
    assert matches(again, sig), "numbers and ids are not part of the signature"


def test_env_files_read_as_docker_reads_them(tmp_path: Path) -> None:
    f = tmp_path / "prod.env"
    f.write_text('# deployed\nRUST_LOG=info\nexport FIL_PROOFS_PARAMETER_CACHE="/var/tmp/p"\n\n'
                 "EMPTY=\n")
    assert read_env_file(f) == {"RUST_LOG": "info", "FIL_PROOFS_PARAMETER_CACHE": "/var/tmp/p",
                                "EMPTY": ""}
    f.write_text("RUST_LOG=info\nthis is not a variable\n")
    with pytest.raises(ReproError, match=r"prod.env:2: not KEY=VALUE"):
        read_env_file(f)


def test_the_shipped_cases_are_well_formed() -> None:
    from proofdiff.regressions import discover
    folders = discover(REPO / "regressions")
    assert len(folders) >= 4, folders
    for folder in folders:
        case = load_case(folder)
        assert case.resolved() and case.resolved(fixed=True)
        # the seed cases know their fix (a fault switch); a real daemon's bug may have none
        assert case.fix or case.binaries, f"{case.id}: the seed cases know their fix"


def _out(status: str, message: str = "m") -> CaseOutcome:
    return CaseOutcome(case="c1", status=status, message=message)


def test_a_case_must_hold_with_its_fix_too() -> None:
    bug = _out("reproduces", "validity/proofs fails on prod as recorded")
    assert judge_case("open", bug, _out("holds", "validity/proofs passes on prod")) == (
        "ok", "validity/proofs fails on prod as recorded; with its fix: validity/proofs passes "
        "on prod")
    assert judge_case("open", bug, _out("reproduces", "still INVALID")) == (
        "FAIL", "validity/proofs fails on prod as recorded; with its fix it does not hold: "
        "reproduces: still INVALID")
    assert judge_case("fixed", _out("holds"), _out("broken", "verifier exited 2"))[0] == "ERROR"
    assert judge_case("fixed", _out("holds", "passes"), None) == (
        "ok", "passes; no [fix] recorded: not replayed with a fix")


def test_a_replay_where_every_case_was_skipped_exits_non_zero() -> None:
    skipped = [CaseVerdict(case=f"c{i}", verdict="SKIP") for i in range(3)]
    assert exit_code(skipped) == ALL_SKIPPED_EXIT == 2
    assert exit_code([*skipped, CaseVerdict(case="c4", verdict="ok")]) == 0


def test_a_build_that_fails_makes_the_replay_broken_not_missing(tmp_path: Path) -> None:
    case = load_case(REPO / "regressions" / "bench-cli-count-flag")
    no_crate = RunOptions(crate_dir=str(tmp_path), cache_root=str(tmp_path / "cache"),
                          report_dir=str(tmp_path / "reports"))
    got = replay(case, no_crate)
    assert got.status == "broken"
    assert got.message.startswith("the artifacts for wpost-2k could not be built: ")
    assert f"no refprover crate at {tmp_path}" in got.message


def test_both_routes_exit_non_zero_when_every_case_was_skipped(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A case whose shipped inputs are absent is skipped before anything is built or run."""
    import shutil
    import subprocess
    import sys

    import tomli_w

    from proofdiff.cli import main

    root = tmp_path / "cases"
    shutil.copytree(REPO / "regressions" / "bench-cli-count-flag", root / "c1")
    doc = tomllib.loads((root / "c1" / "case.toml").read_text())
    doc["workload"] = {"file": "inputs/absent.json"}
    (root / "c1" / "case.toml").write_text(tomli_w.dumps(doc))
    def suite(cases: Path) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "pytest", "suites/test_regressions.py", "-q",
                               "-p", "no:cacheprovider", "-p", "no:randomly", "-rs",
                               f"--basetemp={tmp_path / 'pt'}"], cwd=REPO, env={
                                   **os.environ, "PROOFDIFF_REGRESSIONS": str(cases)},
                              capture_output=True, text=True, timeout=300)

    proc = suite(root)
    assert "2 skipped" in proc.stdout and "inputs/absent.json are missing" in proc.stdout, \
        proc.stdout[-3000:]
    assert proc.returncode == ALL_SKIPPED_EXIT, proc.stdout[-3000:]
    (tmp_path / "none").mkdir()  # no case folder at all: no replay was skipped
    proc = suite(tmp_path / "none")
    assert "2 skipped" in proc.stdout and proc.returncode == 0, proc.stdout[-3000:]
    monkeypatch.setenv("PROOFDIFF_REGRESSIONS", str(root))
    assert main(["run", "--suite", "regressions", "--report-dir",
                 str(tmp_path / "r")]) == ALL_SKIPPED_EXIT
    assert "1 case(s); exit 2" in capsys.readouterr().out


CUZK_CASE = REPO / "regressions" / "cuzk-colliding-ids-answered-with-the-first-proof"


def test_the_real_cuzk_case_is_skipped_where_its_pinned_binaries_are_not(tmp_path: Path) -> None:
    """The case pins cuzk-daemon and cuzk-bench by digest and says how to build them; without
    them (or with another build) its replay is skipped with that reason, before any build."""
    import hashlib

    from proofdiff.model.run_options import RunOptions
    from proofdiff.regressions.replay import replay

    case = load_case(CUZK_CASE)
    assert case.binaries["cuzk-daemon"] == (
        "sha256:16ee59bc9275e2c4b37d2c0d6565b5039a9442ae1d1b634d5f1c78c6bda63711")
    assert case.resolved()["prod"].daemon == "cuzk" and case.oracle == "isolation/colliding-ids"
    opts = RunOptions.from_env(bin_dir=str(tmp_path), report_dir=str(tmp_path / "r"))
    env = {"PATH": str(tmp_path / "nothing")}
    with pytest.MonkeyPatch.context() as mp:
        for k, v in env.items():
            mp.setenv(k, v)
        got = replay(case, opts)
        assert got.status == "missing"
        assert got.message.startswith(f"cuzk-daemon ({case.binaries['cuzk-daemon']}) is not in "
                                      f"--bin-dir {tmp_path}")
        assert "cd extern/cuzk && cargo build --release" in got.message
        other = tmp_path / "cuzk-daemon"
        other.write_bytes(b"#!/bin/sh\n")
        other.chmod(0o755)
        got = replay(case, opts)
        digest = "sha256:" + hashlib.sha256(b"#!/bin/sh\n").hexdigest()
        assert got.status == "missing" and f"is {digest}, but the case pins" in got.message
    assert not (tmp_path / "r").exists()  # nothing ran, nothing was built


def test_a_case_replay_takes_the_users_overrides_after_its_fix(tmp_path: Path) -> None:
    write_case(tmp_path / "c1", _doc())
    case = load_case(tmp_path / "c1")
    got = case.resolved(fixed=True, overrides=['prod.env.REFPROVER_FAULTS="no-self-check"'])
    assert got["prod"].env["REFPROVER_FAULTS"] == "no-self-check"
    assert got["bench"].env["REFPROVER_FAULTS"] == ""


def test_a_fleet_workload_replays_with_the_param_cache_the_user_gives() -> None:
    """A 32 GiB PoRep has no params the build makes: without --param-cache the replay says so;
    with it, only the tools are built and the proofs use the given cache."""
    from types import SimpleNamespace

    from proofdiff.model.workload import POREP, Shape, WorkloadError
    from proofdiff.regressions.replay import build_for

    job = SimpleNamespace(shape=Shape(POREP, 32 << 30, 8, "1.1.0", 10))
    w = SimpleNamespace(jobs=[job], source="fleet.json")
    with pytest.raises(WorkloadError, match="no vk for POREP_SEAL_COMMIT with 34359738368-byte"):
        build_for(w, "")  # type: ignore[arg-type]
    assert build_for(w, "/var/tmp/filecoin-proof-parameters") == "wpost-2k"  # type: ignore[arg-type]


def test_a_case_without_a_signature_is_refused_since_it_would_hold_on_any_failure(
        tmp_path: Path) -> None:
    import tomli_w

    doc = _doc()
    doc["expect"]["match"] = {}
    (tmp_path / "c3").mkdir()
    (tmp_path / "c3" / "case.toml").write_text(tomli_w.dumps(doc))
    with pytest.raises(CaseError, match=r"case.toml:\d+: \[expect.match\] gives no signature"
                       ) as err:
        load_case(tmp_path / "c3")
    assert "another bug's included" in err.value.cause and "message" in err.value.fix
