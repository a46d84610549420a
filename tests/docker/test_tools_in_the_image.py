"""Tools in the real reference image, through the one runner: the bench command-line dry parse
(the bench-cli driver's only one), the param files a workload needs as the image names them,
and the GPU probe on this engine."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from msgspec.structs import replace

from proofdiff.drivers.bench_cli import BenchCliDriver
from proofdiff.drivers.deadlines import Deadlines
from proofdiff.model.profile_file import load_profiles
from proofdiff.model.workload import load_workload
from proofdiff.core.probes import required_param_files
from proofdiff.model.choices import Runtime
from proofdiff.runtime.runner import Runner
from proofdiff.runtime.host import gpu_hint, probe_gpu_support


def _bench(artifacts: Any, runner: Runner, args: list[str],
           tool: str = "bench") -> BenchCliDriver:
    p = load_profiles("refprover", ['bench.driver="bench-cli"'])["bench"]
    return BenchCliDriver(runner, replace(p, image=artifacts.image_tag, bench_args=tuple(args),
                                          bench_tool=tool))


def test_the_dry_parse_rejects_n_with_the_tools_usage_line(artifacts: Any,
                                                           runner: Runner) -> None:
    wl = load_workload(artifacts.workloads["wpost-2k"])
    problem = _bench(artifacts, runner, ["-n", "3"]).check_command_line(wl, Deadlines())
    assert problem is not None
    assert "error: unexpected argument '-n' found" in problem
    assert "Usage: bench batch [OPTIONS] --type <PROOF_TYPE>" in problem
    assert "fix bench_args" in problem
    assert _bench(artifacts, runner, []).check_command_line(wl, Deadlines()) is None
    # a flag the driver already passes, given twice, is rejected too (clap), with its name
    twice = _bench(artifacts, runner, ["-j", "2"]).check_command_line(wl, Deadlines())
    assert twice is not None and "'--concurrency <CONCURRENCY>'" in twice


def test_a_missing_bench_tool_says_which(artifacts: Any, runner: Runner) -> None:
    wl = load_workload(artifacts.workloads["wpost-2k"])
    problem = _bench(artifacts, runner, [], tool="nope").check_command_line(wl, Deadlines())
    assert problem is not None and "the bench tool ('nope' on" in problem
    assert "set bench_tool" in problem


def test_required_param_files_are_named_by_the_image(artifacts: Any,
                                                     runner: Runner) -> None:
    files, source = required_param_files(runner, Path(artifacts.param_cache),
                                         program=artifacts.image_tag, runtime=Runtime.DOCKER,
                                         workload="wpost-2k", profile="bench", timeout_s=60)
    assert sorted(f.rsplit(".", 1)[1] for f in files) == ["params", "vk"], files
    assert all("proof-of-spacetime-fallback" in f for f in files)
    assert "paramgen --print-cache-id" in source


def test_this_engine_gives_gpus_or_says_exactly_why_not(artifacts: Any,
                                                         runner: Runner) -> None:
    reason = probe_gpu_support(runner, artifacts.image_tag)
    if reason is None:
        pytest.skip("this engine gives containers GPUs; the refusal path cannot be seen here")
    assert 'could not select device driver "" with capabilities: [[gpu]]' in reason
    assert "NVIDIA Container Toolkit" in reason and "*.gpus=none" in reason
    assert gpu_hint(reason) is not None and gpu_hint("port is already allocated") is None
