"""The bench-cli driver and the cuzk profile set end to end, on the real reference image.

cuzk.toml is written for a real curio-cuzk image on a GPU host. Here it runs against refprover
(`*.image`), without the GPU request (`*.gpus=none`) and with refprover's client as the bench
tool: the profile set, its daemon command line, its config and mounts, the bench-cli driver
(a cuzk-bench-style `batch` in a container next to the daemon, proofs saved and re-verified)
and the prod gRPC path all run for real. WindowPoSt keeps it in the fast tier.
"""

from __future__ import annotations

import os
from typing import Any

import docker
import pytest

from proofdiff.model.status import Outcome, Verdict

pytestmark = pytest.mark.e2e

#: The validity suite alone: cuzk.toml's real cuzk keys (gpus.*) are unknown to refprover,
#: which preflight's config-keys check rightly reports; the other suites have their own tests.
def on_refprover(image: str) -> tuple[str, ...]:
    """The cuzk profile set pointed at the reference image (its content tag: no build points
    a shared tag such as ``:latest``)."""
    return ("--suite", "validity", "--profiles", "cuzk", "--workload", "wpost-2k",
            "--set", f"*.image={image}", "--set", 'bench.bench_tool="bench"')


def test_cuzk_profiles_on_refprover_bench_cli_vs_grpc_agree(cli_run: Any, artifacts: Any,
                                                            two_job_workload: str) -> None:
    # two jobs: the bench tool's batch and curio's per-job ids need more than one, not four
    r = cli_run(*on_refprover(artifacts.image_tag), "--set", "*.gpus=none", "--workload-file",
                two_job_workload, run_id="e2e-cuzk-ref")
    assert r.rc == 0, r.output
    assert r.result.verdict is Verdict.SAME, r.result.verdict_line
    for profile in ("bench", "prod"):
        proofs = r.record("validity", "proofs", profile)
        assert proofs.outcome is Outcome.PASS and proofs.counts.valid == 2, proofs.evidence
        assert proofs.counts.unverified == 0, "refprover's bench saves proofs: all verified"
    bench = r.result.run("bench", "wpost-2k")
    prod = r.result.run("prod", "wpost-2k")
    assert bench and prod and bench.workload_flow and prod.workload_flow
    assert {j.request_id for j in bench.workload_flow.jobs} == {"(bench tool uuid)"}
    assert all(j.wall_ms > 0 and j.timings.gpu_compute_ms > 0 for j in bench.workload_flow.jobs)
    ids = {j.request_id for j in prod.workload_flow.jobs}  # curio's wdpost ids, one a job
    assert len(ids) == 2 and all(i.startswith("wdpost-1000-0-[") for i in ids), ids
    assert prod.daemon and "ignored config key" in prod.daemon.log_tail
    # both daemons proved under the hardening (proofdiff.runtime.hardening), and the bench
    # tool reached its daemon on the run's own network, which has no outbound access
    for run in (bench, prod):
        assert run.daemon is not None
        view = run.daemon.inspect_view
        assert view["network_mode"] == "the run's own bridge (no outbound)", view
        assert view["security"]["readonly_rootfs"] is True, view["security"]
        assert view["security"]["security_opt"] == ["no-new-privileges"], view["security"]
        assert view["limits"]["pids_limit"] == 4096, view["limits"]
    left = docker.from_env().api.containers(all=True, filters={"label": [
        f"proofdiff.run={r.result.run_id}", "proofdiff.role=bench"]})
    assert not left, "bench containers must be removed after each batch"


def test_a_flag_the_bench_tool_rejects_is_an_error_with_its_usage_line(
        cli_run: Any, artifacts: Any) -> None:
    r = cli_run(*on_refprover(artifacts.image_tag), "--set", "*.gpus=none", "--profile", "bench",
                "--set", 'bench.bench_args=["-n", "2"]', run_id="e2e-bench-flag")
    assert r.rc == 3, r.output
    text = r.record("validity", "proofs", "bench").message
    assert "error: unexpected argument '-n' found" in text, text
    # a cuzk WindowPoSt job goes one partition per request: `single --partition K`
    assert "Usage: bench single [OPTIONS] --type <PROOF_TYPE>" in text, text
    assert "fix bench_args" in text and "cuzk.toml" in text, text


def test_gpu_request_without_an_nvidia_runtime_says_what_to_do(cli_run: Any, artifacts: Any) -> None:
    r = cli_run(*on_refprover(artifacts.image_tag), "--profile", "prod", run_id="e2e-cuzk-gpu")
    if r.rc == 0:  # a GPU host: refprover ignores the GPUs it was given
        return
    assert r.rc == 3, r.output
    text = r.record("validity", "proofs", "prod").message
    assert 'could not select device driver "" with capabilities: [[gpu]]' in text, text
    assert "NVIDIA Container Toolkit" in text and "--set '*.gpus=none'" in text, text


@pytest.mark.slow
def test_real_cuzk_image_on_a_gpu_host(cli_run: Any) -> None:
    """The GPU part: needs a curio-cuzk image and the Filecoin params it proves with
    (docs/guide/cuzk.md)."""
    image, params = os.environ.get("PROOFDIFF_CUZK_IMAGE"), os.environ.get("PROOFDIFF_CUZK_PARAMS")
    if not image or not params:
        pytest.skip("no cuzk image on this host: set PROOFDIFF_CUZK_IMAGE=<tag> and "
                    "PROOFDIFF_CUZK_PARAMS=<dir with the official 2 KiB PoRep params + vk> on a "
                    "GPU host with the NVIDIA Container Toolkit to run the cuzk profiles for real")
    r = cli_run("--profiles", "cuzk", "--image", image, "--param-cache", params,
                run_id="e2e-cuzk-gpu-real", timeout_s=3600)
    assert r.rc == 0, r.output
