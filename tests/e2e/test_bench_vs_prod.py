"""The main job end to end: bench vs prod on the real refprover image (issue 2's done-when).

Each test is one `proofdiff run` (about a minute on 2 cores): containers started by the
fixtures, real WindowPoSt proofs, independent verification in a short-lived container, the
report read back. Faults are applied to prod only, through the same `--set` users type.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import docker
import pytest

from tests.e2e.conftest import REPO, all_errors

pytestmark = pytest.mark.e2e


#: The validity suite alone: these tests are about issue 2's bench-vs-prod validity verdict;
#: the other suites have their own catalog (tests/e2e/test_fault_catalog.py).
VALIDITY_ONLY = ("--pytest-arg=-k", "--pytest-arg=test_validity")


def _outcome(summary: dict[str, Any], profile: str) -> dict[str, Any]:
    return next(o for o in summary["outcomes"] if o["profile"] == profile)


def test_clean_image_bench_and_prod_agree(proofdiff_run: Any) -> None:
    r = proofdiff_run(*VALIDITY_ONLY, run_id="e2e-clean")
    assert r.rc == 0, r.output
    s = r.summary
    assert s["verdict"] == "pass" and not s["divergences"], s["verdict_line"]
    for profile in ("bench", "prod"):
        o = _outcome(s, profile)
        assert o["outcome"] == "valid" and o["total"] == o["completed"] == o["valid"] == 4, o
    # every proof was checked partition by partition by the independent verifier
    for run in s["runs"]:
        assert all(len(j["proof"]) == 2 * 192 * 2 for j in run["jobs"]), "2 partitions x 192 B hex"
    assert "bench" in r.output and "prod" in r.output and "SAME" in r.output


def test_partition_race_on_prod_is_reported_with_the_config_delta(proofdiff_run: Any) -> None:
    r = proofdiff_run(*VALIDITY_ONLY, "--set", "prod.env.REFPROVER_FAULTS=partition-race",
                      run_id="e2e-race")
    assert r.rc == 1, r.output
    s = r.summary
    assert s["verdict"] == "diverged", s["verdict_line"]
    (div,) = s["divergences"]
    assert div["left"]["outcome"] == "valid" and div["right"]["outcome"] == "invalid", div
    bad = [b for b in div["right"]["bad"] if b["kind"] == "invalid"]
    assert bad and all(b["bad_partitions"] for b in bad), "failing partitions must be named"
    suspects = [x["path"] for x in div["suspects"]]
    assert any("REFPROVER_FAULTS" in x for x in suspects), suspects
    assert any("pipeline.enabled" in x for x in suspects), suspects
    assert "REFPROVER_FAULTS" in r.output and "invalid" in r.output


def test_shared_assembler_with_colliding_job_ids_is_reported(proofdiff_run: Any) -> None:
    # prod's curio-style ids are derived from (miner, first sector): the workload's 4 jobs
    # prove the same sectors with different randomness, so all 4 share one id, as retries do.
    r = proofdiff_run(*VALIDITY_ONLY, "--set", "prod.env.REFPROVER_FAULTS=shared-assembler",
                      run_id="e2e-asm")
    assert r.rc == 1, r.output
    (div,) = r.summary["divergences"]
    assert div["left"]["outcome"] == "valid" and div["right"]["outcome"] in ("invalid", "failed")
    ids = {b["request_id"] for b in div["right"]["bad"]}
    assert ids == {"wpost-1000-1"}, ids
    reasons = " ".join(b["reason"] for b in div["right"]["bad"])
    assert div["right"]["invalid"] or "already inserted" in reasons or "another job" in reasons


def test_missing_image_is_a_clear_error_with_a_report(proofdiff_run: Any) -> None:
    r = proofdiff_run("--image", "proofdiff/refprover:does-not-exist", run_id="e2e-noimage")
    assert r.rc == 3, r.output
    assert r.summary["verdict"] == "error"
    text = r.output + all_errors(r.summary)
    assert "does-not-exist" in text and "build" in text, text


def test_daemon_exiting_at_start_is_a_clear_error(proofdiff_run: Any) -> None:
    r = proofdiff_run("--profile", "bench", "--set", 'bench.command=["--no-such-flag"]',
                      run_id="e2e-exits")
    assert r.rc == 3, r.output
    text = all_errors(r.summary) + r.output
    assert "exited with code 2" in text and "--no-such-flag" in text, text


def test_daemon_never_answering_fails_within_its_deadline(proofdiff_run: Any) -> None:
    # The daemon listens on 9999 while the profile publishes 9820: GetStatus never answers.
    r = proofdiff_run("--profile", "prod", "--set",
                      'prod.command=["-c","/data/zk/cuzk.toml","-l","0.0.0.0:9999"]',
                      "--set", "prod.ready_timeout_s=5", run_id="e2e-silent")
    assert r.rc == 3, r.output
    text = all_errors(r.summary)
    assert "did not answer GetStatus" in text and "within 5 s" in text, text
    assert "0.0.0.0:9999" in text, "the daemon's own log tail must be attached"


def test_params_missing_where_the_daemon_reads_them_name_path_and_fix(proofdiff_run: Any) -> None:
    # prod reads srs.param_cache=/var/tmp/filecoin-proof-parameters; mount the params elsewhere.
    r = proofdiff_run(*VALIDITY_ONLY, "--set", "prod.mounts.params=/data/elsewhere",
                      run_id="e2e-noparams")
    assert r.rc in (1, 3), r.output
    text = all_errors(r.summary)
    assert "/data/elsewhere" in text and "/var/tmp/filecoin-proof-parameters" in text, text
    assert "set config.srs.param_cache" in text, "the fix must be named"


def test_interrupt_removes_containers_and_keeps_the_report(artifacts: Any, tmp_path: Path) -> None:
    run_id = f"e2e-interrupt-{uuid.uuid4().hex[:6]}"
    cmd = [sys.executable, "-m", "harness.cli", "run", "--report-dir", str(tmp_path),
           "--run-id", run_id]
    # A shell may start us with SIGINT ignored; the child gets the default (Ctrl-C) behaviour.
    proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, preexec_fn=lambda: signal.signal(signal.SIGINT,
                                                                        signal.SIG_DFL))
    # the low-level list: containers.list() inspects each one and races their removal
    api = docker.from_env().api
    label = {"label": f"proofdiff.run={run_id}"}
    deadline = time.monotonic() + 120
    while not api.containers(all=True, filters=label):
        assert proc.poll() is None and time.monotonic() < deadline, "no container ever started"
        time.sleep(0.2)
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 130, out
    assert not api.containers(all=True, filters=label), "containers left after Ctrl-C"
    assert (tmp_path / run_id / "summary.json").is_file(), out
