"""warmup/first-run-artifacts: the declared artifacts per daemon kind, the look's script run by
``sh`` here on real files, and the judgement on run records (tests/conftest.py builders)."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

from proofdiff.core.artifact_probe import _SCRIPT, ArtifactLook, parse_artifacts
from proofdiff.model.profile_file import load_profiles
from proofdiff.model.status import JobStatus, Outcome
from proofdiff.oracles.first_run import declared, judge, problems
from tests.conftest import job, recorder, run
from tests.unit.fakes import FakeEvidence, refprover_profiles


def test_each_daemon_kind_declares_what_its_first_run_leaves() -> None:
    cuzk = load_profiles("cuzk", ["*.gpus=none"])["prod"]
    assert declared(cuzk, "porep-2k")[0] == ()
    assert declared(cuzk, "porep-32g")[0] == ("pce-porep-32g.bin",)
    assert declared(cuzk, "wpost-32g")[0] == ("pce-window-post.bin",)
    ref = refprover_profiles()["bench"]
    assert declared(ref, "wpost-2k")[0] == ("{tmp}/refprover/circuits.json",)
    mine = refprover_profiles('bench.first_run_artifacts=["pce-*.bin"]')["bench"]
    assert declared(mine, "wpost-2k") == (("pce-*.bin",), "profile 'bench' first_run_artifacts")


def test_the_look_finds_fresh_empty_old_and_missing_files(tmp_path: Path) -> None:
    started = time.time()
    (tmp_path / "refprover").mkdir()
    (tmp_path / "refprover" / "circuits.json").write_text('{"circuits": []}')
    (tmp_path / "pce-porep-32g.bin").write_bytes(b"")
    old = tmp_path / "pce-window-post.bin"
    old.write_bytes(b"x")
    os.utime(old, (started - 3600, started - 3600))
    names = ["{tmp}/refprover/circuits.json", f"{tmp_path}/pce-porep-*.bin",
             f"{tmp_path}/pce-window-post.bin", f"{tmp_path}/pce-snap-*.bin"]
    out = subprocess.run(["sh", "-c", _SCRIPT, "sh", *names], capture_output=True, text=True,
                         env={**os.environ, "TMPDIR": str(tmp_path)}, timeout=30).stdout
    found = parse_artifacts(out, names)
    assert found[names[0]] == (f"{tmp_path}/refprover/circuits.json", found[names[0]][1])
    assert found[names[0]][1][0].size_bytes == len('{"circuits": []}')
    bad = problems(found, started)
    assert len(bad) == 3, bad
    assert "empty (0 bytes)" in bad[0] and "older than the daemon's start" in bad[1]
    assert f"no file matches {tmp_path}/pce-snap-*.bin" in bad[2]


def test_a_failed_warmup_says_nothing_could_be_extracted_without_looking(
        workload_file: Path) -> None:
    ev = FakeEvidence(profiles=refprover_profiles(), workload_file=workload_file)
    rec = recorder("warmup")
    judge(ev, rec, run("prod", [job(0, JobStatus.FAILED, error="No cached parameters found")]))
    (got,) = rec.records
    assert got.outcome is Outcome.FAIL  # the fake has no daemon: a look would be an ERROR
    assert "nothing could be extracted, the warmup proof came back FAILED: No cached " \
        "parameters found" in got.message


def test_present_artifacts_pass_and_absent_ones_fail(workload_file: Path) -> None:
    ev = FakeEvidence(profiles=refprover_profiles(), workload_file=workload_file)
    name = "{tmp}/refprover/circuits.json"
    ev.artifacts["bench"] = ArtifactLook(parse_artifacts(
        f"@@pattern 0 /tmp/refprover/circuits.json\n@@file 0 120 {int(time.time())} "
        "/tmp/refprover/circuits.json\n@@done\n", [name]), time.time() - 5, "container x")
    ev.artifacts["prod"] = ArtifactLook(parse_artifacts(
        "@@pattern 0 /tmp/refprover/circuits.json\n@@done\n", [name]), time.time(), "container y")
    rec = recorder("warmup")
    for p in ("bench", "prod"):
        judge(ev, rec, run(p, [job(0)]))
    bench, prod = rec.records
    assert bench.outcome is Outcome.PASS and "(120 bytes)" in bench.message
    assert prod.outcome is Outcome.FAIL and "no file matches /tmp/refprover/circuits.json" \
        in prod.message


def test_a_kind_that_declares_none_is_skipped_with_the_reason(workload_file: Path) -> None:
    profiles = load_profiles("cuzk", ["*.gpus=none"])
    ev = FakeEvidence(profiles=profiles, workload_file=workload_file)
    rec = recorder("warmup", "porep-2k")
    judge(ev, rec, run("prod", [job(0)], workload="porep-2k"))
    (got,) = rec.records
    assert got.outcome is Outcome.SKIPPED
    assert "declares no first-run artifact for workload porep-2k (cuzk extracts a PCE for 32 " \
        "and 64 GiB circuits only)" in got.message
