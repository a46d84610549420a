"""The fault catalog self-test: real containers, real proofs, faults on the prod profile only
through `--set prod.env.REFPROVER_FAULTS=...`.

Tier split (2 cores: one WindowPoSt proof ~3.5 s alone; a run of every suite 2-4 min):

* `make test`: two faults each with the suite meant for it, asserting that exact oracle FAILs
  on prod (not an ERROR: an oracle that could not judge caught nothing), its evidence, the top
  suspect, and that bench stays clean. The other rows of the catalog that `make test` runs are
  tests/e2e/test_process_target.py's (as processes, one run), with the clean build through
  every suite but timing; the behaviour faults and the clean daemon under a memory limit are
  tests/e2e/test_behaviour_and_params.py's.
* `-m slow` (`make test-slow`): `proofdiff catch-matrix`, every fault through every suite, its
  rows asserted one by one.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from proofdiff.cli.cmd_catch_matrix import cells_of
from proofdiff.model.status import Outcome, Verdict

from tests.e2e.conftest import REPO, unique

pytestmark = pytest.mark.e2e

#: fault -> (extra --set, suites to run, suite and oracle that must fail on prod, evidence
#: text, the top suspect: what the evidence names, else the first key of the subsystem the
#: check exercises; never the fault switch, which has no rank of its own)
CASES = {
    "param-path-default": ((), ("preflight",), "preflight", "params",
                           "does NOT read the configured srs.param_cache", "config.srs.param_cache"),
    "serialize-pipeline": ((), ("timing",), "timing", "concurrency", "serializes jobs",
                           "config.pipeline.enabled"),
}


# serialize-pipeline in the slow tier: its timing run is the longest row; the timing oracle's
# failing paths are tests/unit/test_timing.py's, the fault's serialized jobs
# tests/host/test_flows_host.py's
@pytest.mark.parametrize("fault", [pytest.param(f, marks=pytest.mark.slow)
                                   if f == "serialize-pipeline" else f for f in CASES])
def test_fault_on_prod_is_caught_by_the_suite_meant_for_it(cli_run: Any, fault: str,
                                                           one_partition_workload: str) -> None:
    sets, suites, suite, oracle, evidence, top = CASES[fault]
    # two jobs of one partition: prod still has both in flight at once, which
    # serialize-pipeline takes in turn (what it breaks is jobs side by side, not partitions)
    args = ["--workload-file", one_partition_workload, "--set", f"prod.env.REFPROVER_FAULTS={fault}"]
    for x in sets:
        args += ["--set", x]
    for x in suites:
        args += ["--suite", x]
    r = cli_run(*args, run_id=f"e2e-{fault}")
    res = r.result
    assert r.rc == 1 and res.verdict is Verdict.DIVERGED, (r.rc, res.verdict_line, r.output[-3000:])
    cells = cells_of(res)
    assert r.record(suite, oracle, "prod").outcome is Outcome.FAIL, cells
    assert not [c for cs in cells.values() for c in cs if c["profile"] == "bench"], cells
    assert evidence in r.record(suite, oracle, "prod").message
    (div,) = [d for d in res.divergences if d.suite == suite and d.oracle == oracle]
    assert div.suspects[0].path == top, div.suspects
    assert f"{suite}/{oracle} diverged" in r.output
    if suite == "timing":  # the samples in pytest-benchmark's format, whatever the verdict
        _benchmark_json_reads_back(r.report_dir / "benchmarks" / "timing-wpost-2k.json")


def _benchmark_json_reads_back(bench_json: Path) -> None:
    names = [b["name"] for b in json.loads(bench_json.read_text())["benchmarks"]]
    assert "wpost-2k/warmup[prod]" in names and "wpost-2k/per-proof-cost[bench]" in names
    cli = Path(sys.executable).with_name("pytest-benchmark")
    cmp = subprocess.run([str(cli), "compare", str(bench_json)], capture_output=True, text=True,
                         timeout=60)
    assert cmp.returncode == 0 and "per-proof-cost[prod]" in cmp.stdout, cmp.stdout + cmp.stderr


@pytest.mark.slow
def test_catch_matrix_every_fault_through_every_suite(artifacts: Any, tmp_path: Path) -> None:
    rid = unique("e2e-matrix")
    proc = subprocess.run([sys.executable, "-m", "proofdiff", "catch-matrix", "--report-dir",
                           str(tmp_path), "--run-id", rid], cwd=REPO, capture_output=True,
                          text=True, timeout=3 * 3600)
    doc = json.loads((tmp_path / rid / "summary.json").read_text())
    rows = {r["fault"]: r for r in doc["extra"]["catch_matrix"]["cases"]}
    assert set(rows) == {"clean", "partition-race", "shared-assembler", "no-self-check",
                         "param-path-default", "serialize-pipeline", "queue-deadlock",
                         "shared-witness", "ignore-priority", "exceed-inflight", "env-bool",
                         "ignore-deprecated", "host-memory", "missing-library",
                         "no-first-run-artifact", "retain-witness", "serialize-partitions",
                         "compute-micros", "status-waits", "early-release"}, rows.keys()
    bad = {k: r["verdict"] for k, r in rows.items() if not r["ok"]}
    assert not bad and proc.returncode == 0, (bad, proc.stdout[-4000:])
    assert rows["partition-race"]["verdict"] == "caught by validity/proofs"
    assert rows["queue-deadlock"]["verdict"] == "caught by isolation/hang"
    assert rows["env-bool"]["verdict"] == "caught by behaviour/mode"
    assert "catch matrix" in proc.stdout
    assert "Catch matrix" in (tmp_path / rid / "index.html").read_text()
