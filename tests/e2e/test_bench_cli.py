"""The bench-cli driver and profiles/cuzk.toml end to end, on the real refprover image.

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

from harness.driver_bench_cli import BENCH_REQUEST_ID
from harness.gpu import probe_gpu_support

pytestmark = pytest.mark.e2e

#: The validity suite alone: cuzk.toml's real cuzk keys (gpus.*) are unknown to refprover,
#: which preflight's config-keys check rightly reports; the other suites have their own tests.
ON_REFPROVER = ("--pytest-arg=-k", "--pytest-arg=test_validity",
                "--profiles", "profiles/cuzk.toml", "--workload", "wpost-2k",
                "--set", "*.image=proofdiff/refprover:latest", "--set", 'bench.bench_tool="bench"')


def _outcome(summary: dict[str, Any], profile: str) -> dict[str, Any]:
    return next(o for o in summary["outcomes"] if o["profile"] == profile)


def test_cuzk_profiles_on_refprover_bench_cli_vs_grpc_agree(proofdiff_run: Any) -> None:
    r = proofdiff_run(*ON_REFPROVER, "--set", "*.gpus=none", run_id="e2e-cuzk-ref")
    assert r.rc == 0, r.output
    s = r.summary
    assert s["verdict"] == "pass", s["verdict_line"]
    for profile in ("bench", "prod"):
        o = _outcome(s, profile)
        assert o["outcome"] == "valid" and o["total"] == o["valid"] == 4, o
        assert o["unverified"] == 0, "refprover's bench saves proofs: all must be re-verified"
    runs = {run["profile"]: run for run in s["runs"]}
    bench_jobs = runs["bench"]["jobs"]
    assert {j["request_id"] for j in bench_jobs} == {BENCH_REQUEST_ID}
    assert all(j["wall_ms"] > 0 and j["gpu_compute_ms"] > 0 for j in bench_jobs), bench_jobs
    assert {j["request_id"] for j in runs["prod"]["jobs"]} == {"wpost-1000-1"}  # curio ids
    # cuzk keys refprover does not know are logged, as cuzk would ignore refprover's
    assert "ignored config key" in runs["prod"]["log_tail"]
    left = docker.from_env().containers.list(
        all=True, filters={"label": [f"proofdiff.run={s['run_id']}", "proofdiff.role=bench"]})
    assert not left, "bench containers must be removed after each batch"


def test_a_flag_the_bench_tool_rejects_is_an_error_with_its_usage_line(proofdiff_run: Any) -> None:
    r = proofdiff_run(*ON_REFPROVER, "--set", "*.gpus=none", "--profile", "bench",
                      "--set", 'bench.bench_args=["-n", "2"]', run_id="e2e-bench-flag")
    assert r.rc == 3, r.output
    (o,) = r.summary["outcomes"]
    text = " ".join(o["errors"])
    assert "error: unexpected argument '-n' found" in text, text
    assert "Usage: bench batch [OPTIONS] --type <TYP> --c1 <C1>" in text, text
    assert "fix bench_args" in text and "profiles/cuzk.toml" in text, text


def test_gpu_request_without_an_nvidia_runtime_says_what_to_do(proofdiff_run: Any) -> None:
    reason = probe_gpu_support(docker.from_env(), "proofdiff/refprover:latest",
                               run_id="e2e-gpu-probe")
    r = proofdiff_run(*ON_REFPROVER, "--profile", "prod", run_id="e2e-cuzk-gpu")
    if reason is None:  # a GPU host: refprover ignores the GPUs it was given
        assert r.rc == 0, r.output
        return
    assert r.rc == 3, r.output
    text = " ".join(r.summary["errors"]) + " ".join(
        e for o in r.summary["outcomes"] for e in o["errors"])
    assert 'could not select device driver "" with capabilities: [[gpu]]' in text, text
    assert "NVIDIA Container Toolkit" in text and "--set '*.gpus=none'" in text, text


@pytest.mark.slow
def test_real_cuzk_image_on_a_gpu_host(proofdiff_run: Any) -> None:
    """The GPU part: needs a curio-cuzk image and the Filecoin params it proves with (README,
    'Running against cuzk on a GPU host')."""
    image, params = os.environ.get("PROOFDIFF_CUZK_IMAGE"), os.environ.get("PROOFDIFF_CUZK_PARAMS")
    if not image or not params:
        pytest.skip("no cuzk image on this host: set PROOFDIFF_CUZK_IMAGE=<tag> and "
                    "PROOFDIFF_CUZK_PARAMS=<dir with the official 2 KiB PoRep params + vk> on a "
                    "GPU host with the NVIDIA Container Toolkit to run profiles/cuzk.toml for real")
    reason = probe_gpu_support(docker.from_env(), image, run_id="e2e-gpu-probe")
    if reason is not None:
        pytest.skip(f"this engine cannot give containers GPUs: {reason}")
    r = proofdiff_run("--profiles", "profiles/cuzk.toml", "--image", image,
                      "--param-cache", params, run_id="e2e-cuzk-gpu-real")
    assert r.rc == 0, r.output
