"""Replaying regression cases: a case holds only when it fails as recorded and passes with its
fix; a skipped case is counted and named, and a replay with any case skipped exits 2 unless
skips are allowed; a failed build is a broken replay; a case on host programs replays on a build
it pins, never a mix. The case files themselves: tests/unit/test_regression_cases.py."""

from __future__ import annotations

import os
import shutil
import tomllib
from pathlib import Path

import pytest

from proofdiff.regressions.case import CaseError, load_case, write_case
from proofdiff.model.run_options import RunOptions
from proofdiff.regressions.replay import CaseOutcome, replay
from proofdiff.regressions.replay_all import ALL_SKIPPED_EXIT, CaseVerdict, exit_code, judge_case

from tests.unit.test_regression_cases import case_document

REPO = Path(__file__).resolve().parents[2]


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
    assert exit_code(skipped, allow_skipped=True) == 2  # nothing judged: never a pass


def test_a_replay_with_any_case_skipped_exits_2_unless_skips_are_allowed() -> None:
    # one case holding and nine skipped must not exit 0
    skipped = [CaseVerdict(case=f"c{i}", verdict="SKIP") for i in range(9)]
    one = [*skipped, CaseVerdict(case="c9", verdict="ok")]
    assert exit_code(one) == 2
    assert exit_code(one, allow_skipped=True) == 0
    assert exit_code([*one, CaseVerdict(case="x", verdict="FAIL")]) == 1
    # an interrupted case (and those not reached) ends the replay with 130, whatever else
    assert exit_code([*one, CaseVerdict(case="y", verdict="INTERRUPTED")]) == 130


def test_run_suite_regressions_names_the_skipped_cases(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    from proofdiff.cli import main

    # the real-cuzk case: its pinned binaries are not here, so it is skipped (missing), never
    # judged, and no daemon starts
    name = "cuzk-colliding-ids-answered-with-the-first-proof"
    shutil.copytree(REPO / "regressions" / name, tmp_path / "cases" / name)
    monkeypatch.setenv("PROOFDIFF_REGRESSIONS", str(tmp_path / "cases"))
    args = ["run", "--suite", "regressions", "--report-dir", str(tmp_path / "rep")]
    assert main(args) == 2
    out = capsys.readouterr().out
    assert f"1 of 1 case(s) skipped, not judged: {name}" in out
    assert "--allow-skipped accepts them" in out
    assert main([*args, "--allow-skipped"]) == 2  # every case skipped: still nothing judged


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
        assert got.message.startswith(f"cuzk-daemon ({case.binaries['cuzk-daemon']}, ")
        assert f"is not in --bin-dir {tmp_path}" in got.message
        assert "cd extern/cuzk && cargo build --release" in got.message
        for name in ("cuzk-daemon", "cuzk-bench"):
            other = tmp_path / name
            other.write_bytes(b"#!/bin/sh\n")
            other.chmod(0o755)
        got = replay(case, opts)
        digest = "sha256:" + hashlib.sha256(b"#!/bin/sh\n").hexdigest()
        assert got.status == "missing"
        assert f"is {digest}, but the case pins 3 build(s)" in got.message
    assert not (tmp_path / "r").exists()  # nothing ran, nothing was built


def _programs(folder: Path, **bodies: bytes) -> dict[str, str]:
    """Write each program into ``folder``; their digests as a case pins them."""
    import hashlib

    folder.mkdir(parents=True, exist_ok=True)
    for name, body in bodies.items():
        (folder / name).write_bytes(body)
        (folder / name).chmod(0o755)
    return {n: "sha256:" + hashlib.sha256(b).hexdigest() for n, b in bodies.items()}


def _binaries_case(tmp_path: Path, builds: str) -> Path:
    text = (CUZK_CASE / "case.toml").read_text()
    head, rest = text.split("[[binaries.builds]]", 1)
    tail = rest[rest.index("\n[workload]"):]
    (tmp_path / "c").mkdir(parents=True, exist_ok=True)
    (tmp_path / "c" / "case.toml").write_text(head + builds + tail)
    return tmp_path / "c"


def test_a_case_on_host_programs_replays_on_any_build_it_pins_never_a_mix(tmp_path: Path) -> None:
    """A Rust build is not byte-reproducible (toolchain, features, host): a case pins each
    build it replays on; the programs found must all be one of them."""
    from proofdiff.regressions.replay import _binaries

    a = _programs(tmp_path / "a", **{"cuzk-daemon": b"#!/bin/sh\n# a\n",
                                     "cuzk-bench": b"#!/bin/sh\n# a bench\n"})
    b = _programs(tmp_path / "b", **{"cuzk-daemon": b"#!/bin/sh\n# b\n",
                                     "cuzk-bench": b"#!/bin/sh\n# b bench\n"})
    builds = "".join(f'[[binaries.builds]]\nname = "{n}"\ndigests = {{ cuzk-daemon = '
                     f'"{d["cuzk-daemon"]}", cuzk-bench = "{d["cuzk-bench"]}" }}\n\n'
                     for n, d in (("build a", a), ("build b", b)))
    case = load_case(_binaries_case(tmp_path, builds))
    assert [x.name for x in case.builds] == ["recorded", "build a", "build b"]
    assert _binaries(case, str(tmp_path / "b")) == ("build b", "")
    assert _binaries(case, str(tmp_path / "a")) == ("build a", "")
    mixed = tmp_path / "mixed"
    _programs(mixed, **{"cuzk-daemon": b"#!/bin/sh\n# a\n",
                        "cuzk-bench": b"#!/bin/sh\n# b bench\n"})
    build, why = _binaries(case, str(mixed))
    assert build == "" and "but the case pins 3 build(s)" in why
    assert f"cuzk-daemon at {mixed}/cuzk-daemon is {a['cuzk-daemon']}" in why


def test_a_pinned_build_without_its_digests_names_its_line(tmp_path: Path) -> None:
    folder = _binaries_case(tmp_path, '[[binaries.builds]]\nname = "cpu"\n\n')
    line = (folder / "case.toml").read_text().splitlines().index("[[binaries.builds]]") + 1
    with pytest.raises(CaseError, match=rf"case.toml:{line}: \[\[binaries.builds\]\] #1 needs a "
                                        r"name and digests"):
        load_case(folder)


def test_the_replay_table_shows_a_message_as_written() -> None:
    """A verdict's message names TOML tables ("no [fix] recorded"): the console table shows
    them as text, not as rich markup that swallows them."""
    from rich.console import Console

    from proofdiff.cli.cmd_run import verdict_table
    from proofdiff.regressions.replay_all import CaseVerdict

    console = Console(record=True, width=200)
    console.print(verdict_table([CaseVerdict(case="c", verdict="ok", status="open",
                                             message="fails as recorded; no [fix] recorded")],
                                "cases"))
    assert "no [fix] recorded" in console.export_text()


def test_a_case_replay_takes_the_users_overrides_after_its_fix(tmp_path: Path) -> None:
    write_case(tmp_path / "c1", case_document())
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

    doc = case_document()
    doc["expect"]["match"] = {}
    (tmp_path / "c3").mkdir()
    (tmp_path / "c3" / "case.toml").write_text(tomli_w.dumps(doc))
    with pytest.raises(CaseError, match=r"case.toml:\d+: \[expect.match\] gives no signature"
                       ) as err:
        load_case(tmp_path / "c3")
    assert "another bug's included" in err.value.cause and "message" in err.value.fix
