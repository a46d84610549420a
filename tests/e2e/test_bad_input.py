"""Bad input end to end: a workload file that does not parse, a C1 for another sector size, a
proof of the wrong length (through the pytest plugin, as a user's `pytest suites` run), and a
daemon OOM-killed mid-run (through `proofdiff run`). Each must give a clear error naming the
cause, end, write its report and leave no container behind."""

from __future__ import annotations

import base64
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import docker
import pytest

from proofdiff.model.result import DifferentialResult
from proofdiff.model.status import Outcome, Verdict
from proofdiff.report.summary_json import load_summary

from tests.e2e.conftest import REPO, errors_of, unique

pytestmark = pytest.mark.e2e


def _pytest_suites(artifacts: Any, tmp_path: Path, name: str, workload: str,
                   path: Path, *suites: str) -> tuple[int, str, DifferentialResult]:
    """A user's ``pytest`` run of the shipped ``suites`` (only the files of ``suites``, the
    ones a test reads: the others would prove for nothing) on ``workload`` from ``path``."""
    run_id = unique(name)
    files = [f"suites/test_{s}.py" for s in suites]
    cmd = [sys.executable, "-m", "pytest", *files, "-p", "no:cacheprovider", "-q",
           "--tb=line", f"--proofdiff-run-id={run_id}", f"--proofdiff-report-dir={tmp_path}",
           f"--proofdiff-param-cache={artifacts.param_cache}",
           f"--proofdiff-workload={workload}", f"--proofdiff-workload-file={workload}={path}",
           f"--proofdiff-image={artifacts.image_tag}",
           f"--proofdiff-verifier-image={artifacts.image_tag}", "-k", "not timing"]
    try:
        proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=900)
    finally:
        left = docker.from_env().api.containers(all=True,
                                                filters={"label": f"proofdiff.run={run_id}"})
        assert not left, f"run {run_id} left containers behind: {[c['Names'] for c in left]}"
    assert (tmp_path / run_id / "summary.json").is_file(), proc.stdout[-3000:] + proc.stderr[-2000:]
    return proc.returncode, proc.stdout + proc.stderr, load_summary(tmp_path / run_id)


def test_a_workload_file_that_does_not_parse(artifacts: Any, tmp_path: Path) -> None:
    bad = tmp_path / "broken.json"
    bad.write_text('{"schema": 1,\n "workload": "wpost-2k",\n "jobs": [\n', encoding="utf-8")
    rc, out, res = _pytest_suites(artifacts, tmp_path, "e2e-badjson", "wpost-2k", bad,
                                 "preflight", "validity")
    assert rc != 0 and res.verdict is Verdict.ERROR, res.verdict_line
    text = errors_of(res)
    assert f"{bad}:4:1: bad JSON" in text and "regenerate the workload" in text, text
    pre = res.records_of("preflight", oracle="workload")
    assert pre and all(r.outcome is Outcome.FAIL for r in pre), pre


def test_a_c1_for_another_sector_size(artifacts: Any, tmp_path: Path) -> None:
    size = 32 << 30  # a 32 GiB sector's C1 sent to a daemon proving 2 KiB sectors
    env = {"SectorNum": 1, "Phase1Out": base64.b64encode(b"{}").decode(), "SectorSize": size}
    doc = {"schema": 1, "workload": "porep-32g", "proof_kind": "POREP_SEAL_COMMIT",
           "sector_size": size, "registered_proof": 8, "partitions": 10,
           "jobs": [{"name": "porep-s1", "miner_id": 1000, "sector_number": 1,
                     "comm_r": "11" * 32, "comm_d": "22" * 32, "ticket": "33" * 32,
                     "seed": "44" * 32, "c1": json.dumps(env)}]}
    path = tmp_path / "porep-32g.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    rc, out, res = _pytest_suites(artifacts, tmp_path, "e2e-c1size", "porep-32g", path,
                                 "validity", "warmup")
    assert rc != 0 and res.verdict in (Verdict.FAILED, Verdict.ERROR), res.verdict_line
    for profile in ("bench", "prod"):
        jobs = res.records_of("validity", profile, oracle="jobs")[0]
        assert jobs.outcome is Outcome.FAIL
        assert "sector size 34359738368 not supported" in jobs.evidence["bad"][0]["reason"]
        assert res.records_of("validity", profile, oracle="proofs")[0].outcome is Outcome.ERROR
    warm = res.records_of("warmup", oracle="first-proof")
    assert warm and all("sector size 34359738368" in r.message for r in warm)


def test_a_proof_of_the_wrong_length(artifacts: Any, tmp_path: Path) -> None:
    doc = json.loads(Path(artifacts.workloads["wpost-2k"]).read_text())
    # the workload says 1 partition; the daemon proves its 4 sectors as 2 (2 per 2 KiB
    # WindowPoSt partition): 384 bytes where 192 are expected
    doc["jobs"] = doc["jobs"][:2]  # every job's proof is judged alike: two show it
    doc["partitions"] = 1
    path = tmp_path / "wpost-2k-1p.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    rc, out, res = _pytest_suites(artifacts, tmp_path, "e2e-length", "wpost-2k", path, "validity")
    assert rc != 0 and res.verdict is Verdict.FAILED, res.verdict_line
    for profile in ("bench", "prod"):
        proofs = res.records_of("validity", profile, oracle="proofs")[0]
        assert proofs.outcome is Outcome.FAIL and proofs.counts.invalid == 2
        assert proofs.evidence["bad"][0]["reason"] == \
            "proof is 384 bytes, expected 192 (1 partitions x 192)"


def test_a_daemon_that_crashes_mid_run(cli_run: Any, two_job_workload: str) -> None:
    # 20 MB is enough to start the daemon (11 MB) but not to prove: the kernel OOM-kills it
    # the suites it reads: warmup's liveness and isolation's skip (the workload run, where the
    # kill happens, comes with them; behaviour would only prove more on bench)
    r = cli_run("--set", "prod.mem_limit=20m", "--suite", "warmup", "--suite", "isolation",
                "--workload-file", two_job_workload, run_id="e2e-oom")
    res = r.result
    assert r.rc == 1 and res.verdict is Verdict.DIVERGED, (r.rc, res.verdict_line)
    live = r.record("warmup", "liveness", "prod")
    assert live.outcome is Outcome.FAIL and "exit code 137 and OOMKilled=true" in live.message
    assert "raise the profile's mem_limit" in live.message
    assert live.evidence["state"]["OOMKilled"] is True and live.evidence["lost"]
    iso = res.records_of("isolation", "prod")
    assert iso and all(x.outcome is Outcome.SKIPPED and "OOMKilled=True" in x.message
                       for x in iso), iso
    bench = res.records_of(profile="bench")
    assert bench and all(x.outcome is Outcome.PASS for x in bench)
