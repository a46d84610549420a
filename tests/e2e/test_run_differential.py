"""The core called as a library: ``run_differential`` with no pytest in its call path (the same
call the CLI and every workflow make), on wpost-2k with partition-race on bench and a copy of
prod; the divergence comes from the returned object, not from files. The run is the one
tests/e2e/test_bench_vs_prod.py reads too (:func:`tests.e2e.conftest.validity_faults`)."""

from __future__ import annotations

import docker
import pytest

from proofdiff import Outcome, Verdict

from tests.e2e.conftest import CliRun

pytestmark = pytest.mark.e2e


def test_run_differential_returns_the_divergence(validity_faults: CliRun) -> None:
    result = validity_faults.result
    assert result.verdict is Verdict.DIVERGED and result.exit_code == 1, result.verdict_line
    (div,) = [d for d in result.divergences if d.profile == "prod-race"]
    assert (div.suite, div.oracle, div.baseline, div.profile) == ("validity", "proofs", "bench",
                                                                  "prod-race")
    assert div.baseline_outcome is Outcome.PASS and div.outcome is Outcome.FAIL
    # the switch is no part of the delta: the ranking names the config that triggers the race
    assert [s.path for s in div.suspects[:2]] == ["config.pipeline.enabled",
                                                  "config.synthesis.partition_workers"]
    assert div.suspects[0].right is True
    prod = result.run("prod-race", "wpost-2k")
    assert prod is not None and prod.workload_flow is not None
    assert [j.verdict.bad_partitions() for j in prod.workload_flow.jobs if j.verdict] == [[0, 1]] * 2
    assert result.images[0].digest.startswith("sha256:")
    assert (validity_faults.report_dir / "summary.json").is_file()  # the evidence is written too
    rid = result.run_id
    assert not docker.from_env().api.containers(all=True, filters={"label": f"proofdiff.run={rid}"})
