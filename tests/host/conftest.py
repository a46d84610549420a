"""The host tier: refprover binaries built by harness.build, run on this host on free 127.0.0.1
ports (no container): real proofs, real transport, real deadlines."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import pytest

from harness.model.workload import Workload, load_workload

from .hostdaemon import host_daemon

#: The two profiles' daemon configs (harness/profiles/refprover.toml).
BENCH_CONFIG: dict[str, Any] = {"pipeline": {"enabled": False},
                                "synthesis": {"partition_workers": 1}}
PROD_CONFIG: dict[str, Any] = {"pipeline": {"enabled": True},
                               "synthesis": {"partition_workers": 4}}


@pytest.fixture(scope="session")
def binary(artifacts: Any) -> Path:
    path = Path(artifacts.cache_root) / "cargo-target" / "release" / "refprover"
    assert path.is_file(), f"{path} missing: run `python -m harness.build`"
    return path


@pytest.fixture(scope="session")
def workload(artifacts: Any) -> Workload:
    return load_workload(artifacts.workloads["wpost-2k"])


@pytest.fixture
def daemon(binary: Path, artifacts: Any, tmp_path: Path
           ) -> Iterator[Callable[..., AbstractContextManager[str]]]:
    """``daemon(config=PROD_CONFIG, faults="")``: a host daemon context yielding its address."""
    def start(config: dict[str, Any] | None = None,
              faults: str = "") -> AbstractContextManager[str]:
        return host_daemon(binary, artifacts.param_cache, tmp_path, config or PROD_CONFIG, faults)

    yield start
