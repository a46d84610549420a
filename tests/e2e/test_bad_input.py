"""Bad input end to end (issue 3): a workload file that does not parse, a C1 for another sector
size, a proof of the wrong length, a daemon that crashes mid-run. Each must give a clear error
naming the cause, end, write its report and leave no container behind.

The workload cases drive the pytest plugin directly (`pytest suites --proofdiff-workload-file`,
what `proofdiff run` runs underneath) with the default suites; the crash case is `proofdiff
run` with a memory limit the kernel enforces for real (OOM kill while proving).
"""

from __future__ import annotations

import base64
import json
import secrets
import subprocess
import sys
from pathlib import Path
from typing import Any

import docker
import pytest

from harness.cli import DEFAULT_SUITES

pytestmark = pytest.mark.e2e
REPO = Path(__file__).resolve().parents[2]


def _rid(name: str) -> str:
    return f"e2e-{name}-{secrets.token_hex(3)}"


def _pytest_run(artifacts: Any, tmp_path: Path, run_id: str, workload: str,
                path: Path) -> tuple[int, str, dict[str, Any]]:
    cmd = [sys.executable, "-m", "pytest", *[f"suites/test_{s}.py" for s in DEFAULT_SUITES],
           "-p", "no:cacheprovider", "-q", "--tb=line", f"--rootdir={REPO}",
           f"--proofdiff-run-id={run_id}", f"--proofdiff-report-dir={tmp_path}",
           f"--proofdiff-param-cache={artifacts.param_cache}",
           f"--proofdiff-workload={workload}", f"--proofdiff-workload-file={workload}={path}",
           f"--proofdiff-image={artifacts.image_tag}"]
    try:
        proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=900)
    finally:
        left = docker.from_env().containers.list(all=True,
                                                 filters={"label": f"proofdiff.run={run_id}"})
        assert not left, f"run {run_id} left containers behind: {[c.name for c in left]}"
    summary = tmp_path / run_id / "summary.json"
    assert summary.is_file(), f"no report:\n{proc.stdout[-3000:]}{proc.stderr[-2000:]}"
    return proc.returncode, proc.stdout + proc.stderr, json.loads(summary.read_text())


def _texts(summary: dict[str, Any]) -> str:
    out = list(summary["errors"]) + [r["message"] for r in summary.get("oracles", [])]
    for o in summary["outcomes"]:
        out += o["errors"] + [b["reason"] for b in o["bad"]]
    return "\n".join(out)


def test_a_workload_file_that_does_not_parse(artifacts: Any, tmp_path: Path) -> None:
    bad = tmp_path / "broken.json"
    bad.write_text('{"schema": 1,\n "workload": "wpost-2k",\n "jobs": [\n', encoding="utf-8")
    rc, out, s = _pytest_run(artifacts, tmp_path, _rid("badjson"), "wpost-2k", bad)
    assert rc != 0 and s["verdict"] == "error", s["verdict_line"]
    text = _texts(s)
    assert f"{bad}:4:1: bad JSON" in text and "regenerate the workload" in text, text
    pre = [r for r in s["oracles"] if r["oracle"] == "workload"]
    assert pre and all(r["outcome"] == "fail" for r in pre), pre
    assert "a run could not start" in out, out[-2000:]  # the session stops: nothing to prove


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
    rc, out, s = _pytest_run(artifacts, tmp_path, _rid("c1size"), "porep-32g", path)
    assert rc != 0 and s["verdict"] in ("invalid", "diverged"), s["verdict_line"]
    for o in s["outcomes"]:
        assert o["outcome"] == "failed", o
        assert "sector size 34359738368 not supported" in o["bad"][0]["reason"], o["bad"]
    warm = [r for r in s["oracles"] if r["oracle"] == "first-proof"]
    assert warm and all("sector size 34359738368" in r["message"] for r in warm)


def test_a_proof_of_the_wrong_length(artifacts: Any, tmp_path: Path) -> None:
    doc = json.loads(Path(artifacts.workloads["wpost-2k"]).read_text())
    doc["partitions"] = 3  # the daemon proves 4 sectors = 2 partitions = 384 bytes
    path = tmp_path / "wpost-2k-3p.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    rc, out, s = _pytest_run(artifacts, tmp_path, _rid("length"), "wpost-2k", path)
    assert rc != 0 and s["verdict"] == "invalid", s["verdict_line"]
    for o in s["outcomes"]:
        assert o["outcome"] == "invalid" and o["invalid"] == 4, o
        assert "proof is 384 bytes, expected 576 (3 partitions x 192)" in o["bad"][0]["reason"]


def test_a_daemon_that_crashes_mid_run(proofdiff_run: Any) -> None:
    # 20 MB is enough to start the daemon (11 MB) but not to prove: the kernel OOM-kills it
    r = proofdiff_run("--set", "prod.mem_limit=20m", run_id=_rid("oom"))
    s = r.summary
    assert r.rc in (1, 2) and s["verdict"] in ("diverged", "invalid"), (r.rc, s["verdict_line"])
    (live,) = [x for x in s["oracles"] if x["oracle"] == "liveness" and x["profile"] == "prod"]
    assert live["outcome"] == "fail" and "exit code 137 and OOMKilled=true" in live["message"]
    assert "raise the profile's mem_limit" in live["message"], live["message"]
    assert live["data"]["state"]["OOMKilled"] is True and live["data"]["lost"]
    iso = [x for x in s["oracles"] if x["suite"] == "isolation" and x["profile"] == "prod"]
    assert iso and all(x["outcome"] == "skipped" and "OOMKilled=True" in x["message"]
                       for x in iso), iso
    bench = [x for x in s["oracles"] if x["profile"] == "bench"]
    assert bench and all(x["outcome"] == "pass" for x in bench)
