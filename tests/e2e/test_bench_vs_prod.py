"""The main job end to end: bench vs prod on the real reference image, through `proofdiff run`.

Containers started through the one runner, real WindowPoSt proofs, independent verification in
a short-lived container, the report read back. Faults are applied to prod only, through the same
`--set` users type. The three validity faults share one run with test_run_differential.py
(:func:`tests.e2e.conftest.validity_faults`, the library call under `proofdiff run`, its
console view and exit code): bench, the baseline, proves once, and each fault has its own copy
of prod, judged against it.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import docker
import pytest

from proofdiff.model.status import Outcome, Verdict

from tests.e2e.conftest import REPO, CliRun, errors_of, unique
from tests.report_page import open_page

pytestmark = pytest.mark.e2e

#: The validity suite alone: these tests are about the bench-vs-prod validity verdict; the other
#: suites have their own catalog (tests/e2e/test_fault_catalog.py).
VALIDITY = ("--suite", "validity")

def _errors_on(r: CliRun, profile: str) -> str:
    """The run-level errors and every failed record's message of ``profile``."""
    return "\n".join([*r.result.errors,
                      *(x.message for x in r.result.failed() if x.profile == profile)])


def test_clean_image_bench_and_prod_agree(cli_run: Any, two_job_workload: str) -> None:
    r = cli_run(*VALIDITY, "--workload-file", two_job_workload, run_id="e2e-clean")
    assert r.rc == 0, r.output
    assert r.result.verdict is Verdict.SAME and not r.result.divergences, r.result.verdict_line
    for profile in ("bench", "prod"):
        proofs = r.record("validity", "proofs", profile)
        assert proofs.outcome is Outcome.PASS
        assert (proofs.counts.total, proofs.counts.valid) == (2, 2), proofs.evidence
        run = r.result.run(profile, "wpost-2k")
        assert run is not None and run.workload_flow is not None
        for j in run.workload_flow.jobs:  # every proof checked partition by partition
            assert len(j.proof) == 2 * 192 and j.verdict is not None
            assert j.verdict.partitions == (True, True), j.verdict
    assert "bench" in r.output and "prod" in r.output and "SAME" in r.output
    # its page in a real browser (tests/e2e/test_report_browser.py opens a failing one)
    page = r.report_dir / "index.html"
    assert '<header id="decision" class="good">' in page.read_text(encoding="utf-8")
    facts = open_page(page)
    assert facts.severe == [] and facts.divergence_top is None, facts


def test_partition_race_on_prod_is_reported_with_the_config_delta(
        validity_faults: CliRun) -> None:
    # on both profiles: latent in bench's monolithic config, so only config differs
    r = validity_faults
    assert r.rc == 1, r.output
    (div,) = [d for d in r.result.divergences if d.oracle == "proofs" and d.profile == "prod-race"]
    assert div.baseline_outcome is Outcome.PASS and div.outcome is Outcome.FAIL
    bad = r.record("validity", "proofs", "prod-race").evidence["bad"]
    assert len(bad) == 2 and all(b["bad_partitions"] == [0, 1] for b in bad), bad  # both jobs
    assert [s.path for s in div.suspects[:2]] == [
        "config.pipeline.enabled", "config.synthesis.partition_workers"]
    assert "suspect 1: config.pipeline.enabled: False -> True" in r.output
    assert "partitions [0, 1] do not verify" in r.output


def test_shared_assembler_with_colliding_job_ids_is_reported(validity_faults: CliRun) -> None:
    r = validity_faults
    assert r.rc == 1, r.output
    failed = [r.record("validity", o, "prod-asm") for o in ("proofs", "jobs")]
    assert any(x.outcome is Outcome.FAIL for x in failed), failed
    bad = [b for x in failed for b in x.evidence.get("bad", [])]
    assert {b["request_id"] for b in bad} == {"proofdiff-fixed"}, bad
    reasons = " ".join(b["reason"] for b in bad)
    assert "already inserted" in reasons or "do not verify" in reasons, reasons
    assert r.record("validity", "proofs", "bench").outcome is Outcome.PASS


def test_missing_image_is_a_clear_error_with_a_report(cli_run: Any) -> None:
    r = cli_run("--image", "proofdiff/refprover:does-not-exist", run_id="e2e-noimage")
    assert r.rc == 3, r.output
    assert r.result.verdict is Verdict.ERROR
    text = r.output + errors_of(r.result)
    assert "proofdiff/refprover:does-not-exist" in text and "make image" in text, text
    assert "ERROR: ERROR" not in r.output


def test_daemon_exiting_at_start_is_a_clear_error(cli_run: Any) -> None:
    r = cli_run("--profile", "bench", "--set", 'bench.command=["--no-such-flag"]',
                run_id="e2e-exits")
    assert r.rc == 3, r.output
    text = errors_of(r.result) + r.output
    assert "exited with code 2" in text and "--no-such-flag" in text, text


def test_daemon_never_answering_fails_within_its_deadline(cli_run: Any) -> None:
    # The daemon listens on 9999 while the profile publishes 9820: GetStatus never answers.
    r = cli_run("--profile", "prod", "--set",
                'prod.command=["-c","/data/zk/cuzk.toml","-l","0.0.0.0:9999"]',
                "--set", "prod.ready_timeout_s=5", run_id="e2e-silent")
    assert r.rc == 3, r.output
    text = errors_of(r.result)
    assert "did not answer GetStatus" in text and "within 5 s" in text, text
    assert "0.0.0.0:9999" in text, "the daemon's own log tail must be attached"


def test_params_mounted_where_the_daemon_does_not_read_name_path_and_fix(
        validity_faults: CliRun) -> None:
    r = validity_faults
    assert r.rc == 1, r.output  # bench proves, prod-noparams cannot start: a divergence
    assert any(d.profile == "prod-noparams" for d in r.result.divergences), r.result.divergences
    text = _errors_on(r, "prod-noparams")
    assert "/data/elsewhere" in text and "/var/tmp/filecoin-proof-parameters" in text, text
    assert "set config.srs.param_cache" in text, "the fix must be named"


def _wait_for_container(api: Any, label: dict[str, str], proc: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 120
    while not api.containers(all=True, filters=label):
        assert proc.poll() is None and time.monotonic() < deadline, "no container ever started"
        time.sleep(0.2)


def test_interrupt_removes_containers_and_keeps_the_report(artifacts: Any, tmp_path: Path) -> None:
    run_id = unique("e2e-interrupt")
    cmd = [sys.executable, "-m", "proofdiff", "run", "--report-dir", str(tmp_path),
           "--run-id", run_id]
    # A shell may start us with SIGINT ignored; the child gets the default (Ctrl-C) behaviour.
    proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, preexec_fn=lambda: signal.signal(signal.SIGINT,
                                                                        signal.SIG_DFL))
    api = docker.from_env().api
    _wait_for_container(api, {"label": f"proofdiff.run={run_id}"}, proc)
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 130, out
    assert not api.containers(all=True, filters={"label": f"proofdiff.run={run_id}"})
    doc = json.loads((tmp_path / run_id / "summary.json").read_text())
    assert doc["verdict"] == "INTERRUPTED" and doc["exit_code"] == 130


def test_sigkill_of_proofdiff_run_leaves_no_container_or_temp_dir(artifacts: Any,
                                                                  tmp_path: Path) -> None:
    run_id = unique("e2e-sigkill")
    before = set(Path(tempfile.gettempdir()).glob("proofdiff-daemon-*"))
    proc = subprocess.Popen([sys.executable, "-m", "proofdiff", "run", "--report-dir",
                             str(tmp_path), "--run-id", run_id], cwd=REPO,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, text=True)
    api = docker.from_env().api
    label = {"label": f"proofdiff.run={run_id}"}
    _wait_for_container(api, label, proc)
    os.kill(proc.pid, signal.SIGKILL)  # no handler runs: only the watchdog can clean up
    proc.wait(timeout=10)
    t0 = time.monotonic()
    while api.containers(all=True, filters=label) or \
            set(Path(tempfile.gettempdir()).glob("proofdiff-daemon-*")) - before:
        assert time.monotonic() - t0 < 10, "the run's containers or config dirs outlived it by 10 s"
        time.sleep(0.2)
