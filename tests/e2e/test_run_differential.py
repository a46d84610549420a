"""The core called as a library: ``run_differential`` with no pytest in its call path (the same
call the CLI and every workflow make), on wpost-2k with partition-race switched on in both
profiles (latent in bench's monolithic config); the divergence and its top suspect come from the
returned object, not from files."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import docker
import msgspec
import pytest

from proofdiff import Outcome, RunOptions, Verdict, run_differential

from tests.e2e.conftest import unique

pytestmark = pytest.mark.e2e


def test_run_differential_returns_the_divergence(run_opts: RunOptions, tmp_path: Path) -> None:
    rid = unique("e2e-core")
    result = run_differential(msgspec.structs.replace(
        run_opts, overrides=("*.env.REFPROVER_FAULTS=partition-race",), suites=("validity",),
        run_id=rid))
    assert result.verdict is Verdict.DIVERGED and result.exit_code == 1, result.verdict_line
    (div,) = result.divergences
    assert (div.suite, div.oracle, div.baseline, div.profile) == ("validity", "proofs", "bench",
                                                                  "prod")
    assert div.baseline_outcome is Outcome.PASS and div.outcome is Outcome.FAIL
    # the switch is no part of the delta: the ranking names the config that triggers the race
    assert [s.path for s in div.suspects[:2]] == ["config.pipeline.enabled",
                                                  "config.synthesis.partition_workers"]
    assert div.suspects[0].right is True
    prod = result.run("prod", "wpost-2k")
    assert prod is not None and prod.workload_flow is not None
    assert [j.verdict.bad_partitions() for j in prod.workload_flow.jobs if j.verdict] == [[0, 1]] * 4
    assert result.images[0].digest.startswith("sha256:")
    assert (tmp_path / rid / "summary.json").is_file()  # the evidence is written too
    assert not docker.from_env().api.containers(all=True, filters={"label": f"proofdiff.run={rid}"})
