"""harness/profiles/cuzk.toml, the profile set for a real curio-cuzk image on a GPU host.

It cannot run here (no cuzk image, no GPU): these tests check what can be checked without
them: that it loads, that bench and prod differ the way the incidents need, that the launch
checks find nothing wrong with it and do find a param path mismatch, and what the GPU request
looks like (tests/docker/test_gpu_probe.py asks this engine for GPUs; running the set against
refprover with ``*.gpus=none`` is in tests/e2e/test_bench_cli.py).
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from docker.types import DeviceRequest
from msgspec.structs import replace

from proofdiff.core.profile_delta import profile_delta
from proofdiff.core.suspects import rank
from proofdiff.model.oracle_records import OracleRecord
from proofdiff.model.profile import Profile
from proofdiff.model.profile_file import load_profiles
from proofdiff.model.status import Outcome
from proofdiff.runtime.hardening import container_settings
from proofdiff.runtime.daemon import daemon_spec

CUZK = "cuzk"


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
        assert p.launch_problems() == []


def test_config_delta_ranks_the_incident_switches_first() -> None:
    ps = load_profiles(CUZK)
    delta = profile_delta(ps["bench"], ps["prod"])
    paths = [i.path for i in delta.items]
    # cuzk has no [synthesis] default, so the whole table is prod's alone
    for expected in ("config.pipeline.enabled", "concurrency", "job_ids", "driver",
                     "config.synthesis"):  # gpu_workers_per_device 2 is cuzk's default
        assert expected in paths, paths
    failed = OracleRecord(suite="validity", oracle="proofs", profile="prod", workload="porep-2k",
                          outcome=Outcome.FAIL)
    ranked = [s.path for s in rank(delta, failed)]
    # proof assembly first (pipeline, then the [synthesis] table prod alone has), then the
    # jobs that meet in the daemon before the scheduler, the params and what validity does
    # not exercise (docs/design/cuzk-interface.md, "What each key controls")
    assert ranked[:2] == ["config.pipeline.enabled", "config.synthesis"], ranked
    assert ranked.index("concurrency") < ranked.index("config.scheduler.max_batch_size") \
        < ranked.index("env.FIL_PROOFS_PARAMETER_CACHE") < ranked.index("driver"), ranked


def test_preflight_catches_params_mounted_where_cuzk_does_not_read() -> None:
    ps = load_profiles(CUZK, ["prod.mounts.params=/var/tmp/filecoin-proof-parameters"])
    ((problem, fix),) = ps["prod"].launch_problems()
    assert "mounted at '/var/tmp/filecoin-proof-parameters'" in problem
    assert "srs.param_cache='/data/zk/params'" in problem
    assert "mounts.params = '/data/zk/params'" in fix


def test_gpu_request_is_one_device_request_for_all_gpus(tmp_path: Path) -> None:
    def kwargs(profile: Profile) -> dict[str, Any]:
        workdir, kw = container_settings(daemon_spec(replace(profile, image="cuzk:t"), tmp_path),
                                         labels={}, image_labels={}, network="run-net",
                                         tracker=None)
        shutil.rmtree(workdir or tmp_path / "none", ignore_errors=True)
        return kw

    ps = load_profiles(CUZK, ['prod.gpus=["GPU-0b1c", "GPU-77aa"]'])
    (req,) = kwargs(load_profiles(CUZK)["bench"])["device_requests"]
    assert isinstance(req, DeviceRequest)
    assert (req.count, req.device_ids, req.capabilities) == (-1, [], [["gpu"]])
    (pinned,) = kwargs(ps["prod"])["device_requests"]
    assert (pinned.count, pinned.device_ids) == (0, ["GPU-0b1c", "GPU-77aa"])  # never both
    assert "device_requests" not in kwargs(load_profiles(CUZK, ["*.gpus=none"])["prod"])
