"""Regression cases as files: a malformed or incomplete case.toml names the file and line, a
written case reads back to the same pinned profiles, a workload file outside its case's folder is
refused, the signature matches its own record and not another, and env files read as docker
reads them. Their replay: tests/unit/test_regression_replay.py."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from proofdiff.model.oracle_records import OracleRecord
from proofdiff.model.profile_file import load_profiles, profile_table
from proofdiff.model.status import Outcome
from proofdiff.regressions.case import CaseError, load_case, write_case
from proofdiff.model.run_options import RunOptions
from proofdiff.regressions.replay import matches
from proofdiff.regressions.repro import ReproError, read_env_file, signature


REPO = Path(__file__).resolve().parents[2]


def case_document() -> dict:
    ps = load_profiles("refprover", ["*.env.REFPROVER_FAULTS=partition-race"])
    return {"case": {"id": "c1", "title": "t", "date": "2026-12-01", "status": "open"},
            "image": {"tag": "proofdiff/refprover:x", "reference": True},
            "workload": {"name": "wpost-2k"},
            "expect": {"profile": "prod", "oracle": "validity/proofs",
                       "match": {"message": "INVALID"}},
            "fix": {"overrides": ['*.env.REFPROVER_FAULTS=""']},
            "profiles": {n: profile_table(p) for n, p in ps.items()}}


def test_a_written_case_reads_back_to_the_same_profiles_and_its_fix_applies(tmp_path: Path) -> None:
    write_case(tmp_path / "c1", case_document())
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
    doc = case_document()
    del doc["expect"]["oracle"]
    folder = tmp_path / "c2"
    folder.mkdir()
    import tomli_w
    (folder / "case.toml").write_text(tomli_w.dumps(doc))
    with pytest.raises(CaseError, match=r"case.toml:\d+: \[expect\] oracle is missing"):
        load_case(folder)
    doc = case_document()
    doc["case"]["status"] = "closed"
    (folder / "case.toml").write_text(tomli_w.dumps(doc))
    with pytest.raises(CaseError, match=r"status must be one of \('open', 'fixed'\)"):
        load_case(folder)


@pytest.mark.parametrize(("change", "says"), [
    (lambda d: d.update(image="proofdiff/refprover:x"), r":\d+: image must be a table"),
    (lambda d: d.update(fix="make it hold"), r":\d+: fix must be a table"),
    (lambda d: d.update(binaries=3), r":\d+: binaries must be a table"),
    (lambda d: d.update(bisect="none"), r":\d+: bisect must be a table"),
    (lambda d: d.update(workload={"file": 5}), r":\d+: \[workload\] file must be a non-empty"),
    (lambda d: d["fix"].update(overrides="prod.concurrency=1"),
     r":\d+: \[fix\] overrides must be a list of --set strings"),
    (lambda d: d.update(image={"tag": "proofdiff/refprover:x"}),
     r":\d+: \[image\] digest is missing: the case would replay whatever the tag names here"),
    (lambda d: d.update(image={"tag": "t:1", "digest": "sha256:abc"}),
     r":\d+: \[image\] digest 'sha256:abc' is no image id"),
])
def test_a_table_of_the_wrong_type_or_an_unpinned_image_is_that_cases_error(
        tmp_path: Path, change: Any, says: str) -> None:
    import tomli_w

    doc = case_document()
    change(doc)
    folder = tmp_path / "c3"
    folder.mkdir()
    (folder / "case.toml").write_text(tomli_w.dumps(doc))
    with pytest.raises(CaseError, match=r"case.toml" + says) as err:
        load_case(folder)
    assert err.value.fix


def test_one_malformed_case_is_its_own_error_and_the_others_are_replayed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import tomli_w

    from proofdiff.regressions.replay_all import replay_all

    cases = tmp_path / "cases"
    bad = case_document()
    bad["image"] = "proofdiff/refprover:x"  # a value where a table belongs
    (cases / "a-bad").mkdir(parents=True)
    (cases / "a-bad" / "case.toml").write_text(tomli_w.dumps(bad))
    name = "cuzk-colliding-ids-answered-with-the-first-proof"  # skipped here: no daemon runs
    shutil.copytree(REPO / "regressions" / name, cases / name)
    got = replay_all(RunOptions(regressions_dir=str(cases), report_dir=str(tmp_path / "rep")))
    assert [(v.case, v.verdict) for v in got] == [("a-bad", "ERROR"), (name, "SKIP")]
    assert "image must be a table" in got[0].message


@pytest.mark.parametrize("where", ["../outside.json", "/etc/passwd", "link.json"])
def test_a_case_workload_file_outside_its_folder_is_refused(tmp_path: Path, where: str) -> None:
    # a case folder is shipped to fleet hosts and read by a replay: its inputs are its own
    # files, never a path (or a link) that reaches elsewhere on the machine
    import tomli_w

    (tmp_path / "outside.json").write_text("{}")
    folder = tmp_path / "c3"
    folder.mkdir()
    (folder / "link.json").symlink_to(tmp_path / "outside.json")
    doc = case_document()
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


def test_an_isolation_signature_is_what_the_oracle_saw_not_the_suites_header() -> None:
    """An isolation record heads its message with the suite's summary, which every isolation
    failure of the profile shares; the signature is the oracle's own line below it (as
    recorded on cuzk-daemon, curio e0294b0f)."""
    head = "isolation on profile 'production' (wpost-2k, 6 jobs): 1 problem(s)"
    rec = OracleRecord(suite="isolation", oracle="colliding-ids", profile="production",
                       workload="wpost-2k", outcome=Outcome.FAIL, message=(
                           f"{head}\n  colliding-ids: both answers for the shared id "
                           "'iso-c8b7b0-dup' are proofs of wpost-0: one job was answered twice "
                           "and the other never"))
    sig = signature(rec)
    assert sig["message"].startswith(r"both\s+answers\s+for\s+the\s+shared\s+id\s+")
    assert matches(rec, sig)
    other = OracleRecord(suite="isolation", oracle="colliding-ids", profile="production",
                         workload="wpost-2k", outcome=Outcome.FAIL, message=(
                             f"{head}\n  colliding-ids: all 2 requests with the shared id 'x' "
                             "were rejected as duplicates"))
    assert not matches(other, sig)


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
