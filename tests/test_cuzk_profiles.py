"""profiles/cuzk.toml, the profile set for a real curio-cuzk image on a GPU host.

It cannot run here (no cuzk image, no GPU): these tests check what can be checked without
them: that it loads, that bench and prod differ the way the incidents need, that the preflight
finds nothing wrong with it and does find a param path mismatch, and what the GPU request looks
like and does on this engine. Running it against refprover (with ``*.gpus=none``) is in
tests/e2e/test_bench_cli.py.
"""

from __future__ import annotations

import docker
import pytest
from docker.types import DeviceRequest

from harness.config_delta import profile_delta, rank_suspects
from harness.gpu import gpu_hint, probe_gpu_support
from harness.launcher import Launcher
from harness.profiles import load_profiles
from tests.conftest import REPO

CUZK = REPO / "profiles" / "cuzk.toml"


def test_bench_and_prod_are_what_the_issue_describes() -> None:
    ps = load_profiles(CUZK)
    assert list(ps) == ["bench", "prod"]
    bench, prod = ps["bench"], ps["prod"]
    assert (bench.driver, bench.bench_tool, bench.job_ids, bench.miner_id, bench.concurrency) == (
        "bench-cli", "cuzk-bench", "uuid", 1000, 1)
    assert bench.effective_config()["pipeline"]["enabled"] is False
    assert (prod.driver, prod.job_ids, prod.miner_id, prod.concurrency) == ("grpc", "curio", 1000, 4)
    assert prod.effective_config()["pipeline"]["enabled"] is True
    for p in (bench, prod):
        assert p.gpus == "all" and p.workload == "porep-2k"
        assert p.param_read_path() == p.param_mount_path() == "/data/zk/params"
        assert p.effective_config()["daemon"]["listen"] == "0.0.0.0:9820"  # cuzk: unix socket
        assert p.preflight_problems() == []


def test_config_delta_ranks_the_incident_switches_first() -> None:
    ps = load_profiles(CUZK)
    delta = profile_delta(ps["bench"], ps["prod"])
    paths = [i.path for i in delta.items]
    for expected in ("config.pipeline.enabled", "concurrency", "job_ids", "driver",
                     "config.synthesis.partition_workers", "config.gpus"):
        assert expected in paths, paths
    top = [s.path for s in rank_suspects(delta)[:3]]
    assert top == ["config.pipeline.enabled", "config.synthesis.partition_workers", "concurrency"]


def test_preflight_catches_params_mounted_where_cuzk_does_not_read() -> None:
    ps = load_profiles(CUZK, ["prod.mounts.params=/var/tmp/filecoin-proof-parameters"])
    (problem,) = ps["prod"].preflight_problems()
    assert "mounted at '/var/tmp/filecoin-proof-parameters'" in problem
    assert "srs.param_cache='/data/zk/params'" in problem


def test_gpu_request_is_one_device_request_for_all_gpus(tmp_path) -> None:  # type: ignore[no-untyped-def]
    ps = load_profiles(CUZK, ['prod.gpus=["GPU-0b1c", "GPU-77aa"]'])
    launcher = Launcher("unit", tmp_path, client=_engine())
    (req,) = launcher._run_kwargs(load_profiles(CUZK)["bench"], tmp_path)["device_requests"]
    assert isinstance(req, DeviceRequest)
    assert (req.count, req.device_ids, req.capabilities) == (-1, [], [["gpu"]])
    (pinned,) = launcher._run_kwargs(ps["prod"], tmp_path)["device_requests"]
    assert (pinned.count, pinned.device_ids) == (0, ["GPU-0b1c", "GPU-77aa"])  # never both
    off = load_profiles(CUZK, ["*.gpus=none"])["prod"]
    assert "device_requests" not in launcher._run_kwargs(off, tmp_path)


def test_this_engine_gives_gpus_or_says_exactly_why_not() -> None:
    """The GPU part of the cuzk profiles: on a host without the NVIDIA runtime the engine's
    refusal must be recognised and explained; on a GPU host the probe passes."""
    client = _engine()
    image = "proofdiff/refprover:latest"
    try:
        client.images.get(image)
    except docker.errors.ImageNotFound:
        pytest.skip(f"{image} is not built; `make image` builds it")
    reason = probe_gpu_support(client, image, run_id="unit-gpu-probe")
    if reason is None:
        pytest.skip("this engine gives containers GPUs; the refusal path cannot be seen here")
    assert reason.startswith('could not select device driver "" with capabilities: [[gpu]]')
    assert "NVIDIA Container Toolkit" in reason and "*.gpus=none" in reason
    assert gpu_hint(reason) is not None and gpu_hint("port is already allocated") is None
    assert not client.containers.list(all=True, filters={"label": "proofdiff.run=unit-gpu-probe"})


def _engine() -> docker.DockerClient:
    try:
        client = docker.from_env()
        client.ping()
    except Exception as exc:  # noqa: BLE001 - any failure means: no engine here
        pytest.skip(f"no Docker engine reachable ({exc}); start dockerd")
    return client
