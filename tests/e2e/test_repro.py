"""``proofdiff repro`` from production artifacts written here as an operator has them: the
daemon config as deployed, an env file and the inputs in the workload format. The case it
writes reproduces on replay; bad inputs are clear errors that name the file."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from proofdiff.model.run_options import RunOptions
from proofdiff.regressions import load_case, replay

from tests.e2e.conftest import REPO

pytestmark = pytest.mark.e2e

DEPLOYED = """# /data/zk/cuzk.toml as deployed
[daemon]
listen = "0.0.0.0:9820"

[srs]
param_cache = "/var/tmp/filecoin-proof-parameters"

[pipeline]
enabled = true

[synthesis]
partition_workers = 4
"""
ENV = """# prod.env
RUST_LOG=info
FIL_PROOFS_PARAMETER_CACHE=/var/tmp/filecoin-proof-parameters
# the image's bug (refprover's fault switch stands in for a real daemon bug)
REFPROVER_FAULTS=partition-race
"""


def _repro(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "proofdiff", "repro", "--out",
                           str(tmp_path / "regressions"), "--report-dir", str(tmp_path / "r"),
                           *args], cwd=REPO, capture_output=True, text=True, timeout=1200)


def _artifacts(tmp_path: Path, inputs: Path) -> list[str]:
    (tmp_path / "cuzk.toml").write_text(DEPLOYED)
    (tmp_path / "prod.env").write_text(ENV)
    return ["--config", str(tmp_path / "cuzk.toml"), "--env-file", str(tmp_path / "prod.env"),
            "--command", "-c /data/zk/cuzk.toml --log-level info", "--inputs",
            str(inputs)]


def test_repro_from_production_artifacts_writes_a_case_that_reproduces(
        artifacts: Any, tmp_path: Path, two_job_workload: str) -> None:
    # the first two jobs of the build's wpost-2k: both in flight at once on prod, which is
    # where partition-race breaks proofs (the case proves them twice: written, then replayed)
    inputs = tmp_path / "prod-inputs.json"
    shutil.copy(two_job_workload.split("=", 1)[1], inputs)
    proc = _repro(tmp_path, "--id", "prod-wpost-invalid", "--title", "WindowPoSt partitions "
                  "invalid in production", "--incident", "every partition invalid on prod",
                  *_artifacts(tmp_path, inputs))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    case = load_case(tmp_path / "regressions" / "prod-wpost-invalid")
    assert case.oracle == "validity/proofs" and case.profile == "production"
    assert (Path(case.dir) / "inputs" / "prod-inputs.json").is_file(), "the inputs ship"
    prod = case.resolved()["production"]
    assert prod.config["synthesis"]["partition_workers"] == 4, "the config as deployed"
    assert prod.env["REFPROVER_FAULTS"] == "partition-race" and prod.concurrency == 4
    got = replay(case, RunOptions.from_env(report_dir=str(tmp_path / "replay")))
    assert got.status == "reproduces", got.message


def test_a_bad_c1_envelope_is_a_clear_error_naming_the_job(artifacts: Any,
                                                           tmp_path: Path) -> None:
    bad = tmp_path / "c1.json"
    bad.write_text(json.dumps({
        "schema": 1, "workload": "porep-2k", "proof_kind": "POREP_SEAL_COMMIT",
        "sector_size": 2048, "registered_proof": 5, "api_version": "1.2.0", "partitions": 1,
        "jobs": [{"name": "porep-s1", "miner_id": 1000, "sector_number": 1,
                  "comm_r": "00" * 32, "comm_d": "00" * 32, "ticket": "00" * 32,
                  "seed": "00" * 32, "c1": "{not json"}]}))
    proc = _repro(tmp_path, "--id", "bad-c1", "--title", "t", *_artifacts(tmp_path, bad))
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert "porep-s1" in proc.stdout and "C1 envelope is not JSON" in proc.stdout, proc.stdout
    assert not (tmp_path / "regressions" / "bad-c1").exists()


def test_inputs_no_vk_covers_are_refused_before_anything_runs(artifacts: Any,
                                                             tmp_path: Path) -> None:
    doc = json.loads(Path(artifacts.workloads["wpost-2k"]).read_text())
    doc["sector_size"] = 34359738368  # 32 GiB: no vk for it in the reference params
    inputs = tmp_path / "w32g.json"
    inputs.write_text(json.dumps(doc))
    proc = _repro(tmp_path, "--id", "no-vk", "--title", "t", *_artifacts(tmp_path, inputs))
    assert proc.returncode == 3 and "no vk for" in proc.stdout, proc.stdout + proc.stderr


@pytest.mark.slow
def test_repro_from_a_deployed_config_env_file_and_c1_envelopes_reproduces(
        artifacts: Any, tmp_path: Path) -> None:
    """The slow tier: PoRep C2 from real C1 envelopes (`seal porep`), the production way."""
    from proofdiff.artifacts import ensure_artifacts

    porep = ensure_artifacts(["porep-2k"], lambda _l: None,
                             cache_root=Path(RunOptions.from_env().cache_root),
                             crate_dir=REPO / "targets" / "refprover")
    inputs = tmp_path / "c1-inputs.json"
    shutil.copy(porep.workloads["porep-2k"], inputs)
    proc = _repro(tmp_path, "--id", "porep-c2-invalid", "--title", "PoRep C2 partitions invalid",
                  *_artifacts(tmp_path, inputs))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    case = load_case(tmp_path / "regressions" / "porep-c2-invalid")
    assert case.oracle == "validity/proofs" and case.workload_file.endswith("c1-inputs.json")
    got = replay(case, RunOptions.from_env(report_dir=str(tmp_path / "replay")))
    assert got.status == "reproduces", got.message
