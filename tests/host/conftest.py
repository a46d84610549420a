"""The host tier: refprover binaries built by proofdiff.artifacts, run on this host as proofdiff's
process runtime (no container, free 127.0.0.1 ports): real proofs, real transport, real
deadlines."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

import pytest

from proofdiff.model.choices import Runtime
from proofdiff.core.plan import new_run_id
from proofdiff.model.profile import Profile
from proofdiff.model.workload import Workload, load_workload
from proofdiff.drivers.cuzk_client import status_probe
from proofdiff.runtime.daemon import Daemon, start_daemon
from proofdiff.runtime.runner import Runner
from proofdiff.runtime.watchdog import Watchdog

from tests.conftest import smaller_workload

#: The two profiles' daemon configs (harness/profiles/refprover.toml).
BENCH_CONFIG: dict[str, Any] = {"pipeline": {"enabled": False},
                                "synthesis": {"partition_workers": 1}}
PROD_CONFIG: dict[str, Any] = {"pipeline": {"enabled": True},
                               "synthesis": {"partition_workers": 4}}


@pytest.fixture(scope="session")
def binary(artifacts: Any) -> Path:
    path = Path(artifacts.cache_root) / "cargo-target" / "release" / "refprover"
    assert path.is_file(), f"{path} missing: run `proofdiff build`"
    return path


@pytest.fixture(scope="session")
def workload(artifacts: Any) -> Workload:
    return load_workload(artifacts.workloads["wpost-2k"])


@pytest.fixture(scope="session")
def one_partition_jobs(artifacts: Any, tmp_path_factory: pytest.TempPathFactory) -> Workload:
    """The build's wpost-2k jobs with one partition each (tests/conftest.py
    ``smaller_workload``): half the proving, for facts about jobs, not partitions."""
    return load_workload(smaller_workload(Path(artifacts.workloads["wpost-2k"]),
                                          tmp_path_factory.mktemp("one-partition-jobs"),
                                          jobs=4, partitions=1))


@pytest.fixture
def runner(binary: Path) -> Iterator[Runner]:
    """A runner for process runtimes (the build's bin dir), watched; nothing of it is left."""
    dog = Watchdog().start()
    r = Runner(f"t-{new_run_id()}", tracker=dog, tool_dirs=[binary.parent])
    yield r
    r.close()
    dog.close()


def process_profile(config: dict[str, Any] | None = None, faults: str = "",
                    **keys: Any) -> Profile:
    """A process-target profile of the build's refprover with ``config`` (default prod's)."""
    return Profile(name="host", workload="wpost-2k", runtime=Runtime.PROCESS,
                   config=config if config is not None else PROD_CONFIG,
                   env={"REFPROVER_FAULTS": faults} if faults else {},
                   **keys)


@pytest.fixture
def started(runner: Runner, artifacts: Any) -> Callable[..., AbstractContextManager[Daemon]]:
    """``started(profile)``: the profile's daemon, started by proofdiff's process runtime."""
    @contextmanager
    def start(profile: Profile) -> Iterator[Daemon]:
        d = start_daemon(runner, profile, artifacts.param_cache, probe=status_probe)
        try:
            yield d
        finally:
            d.remove()
    return start


@pytest.fixture
def daemon(started: Callable[..., AbstractContextManager[Daemon]]
           ) -> Callable[..., AbstractContextManager[str]]:
    """``daemon(config=PROD_CONFIG, faults="")``: a host daemon context yielding its address."""
    @contextmanager
    def start(config: dict[str, Any] | None = None, faults: str = "") -> Iterator[str]:
        with started(process_profile(config, faults)) as d:
            yield d.address

    return start
