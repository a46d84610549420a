"""The slow tier end to end: PoRep C2 differential runs on the real refprover image.

Real C1 outputs of sealed 2 KiB sectors (`porep-2k`: 1 partition; `porep-2k-2p`: 2 partitions,
so per-partition work items and the per-job assembler run), proved for real on the CPU (about a
minute or more per proof on 2 cores) and verified per partition by the independent verifier.
Every test is one `proofdiff run`; faults go on prod only, through `--set`. Where a test needs
only a baseline, bench proves one job per workload (`bench.jobs=1`) to keep the tier short.
Run: `make test-slow` (or `pytest tests -m slow`).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from harness.driver_bench_cli import BENCH_REQUEST_ID

from tests.e2e.conftest import REPO, CliRun

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

#: Deadline of one PoRep `proofdiff run`, seconds: two workloads x two profiles of C2 proofs
#: on 2 cores take about 10 minutes; the first run may also build the params (~20 min cold).
RUN_TIMEOUT_S = 3600
#: Per-job deadline for these runs: 4 PoRep jobs in flight on 2 shared cores took up to 10 min
#: each (beyond refprover.toml's 600 s) while other runs used the same machine.
SLOW_JOB_TIMEOUT = ("--set", "*.timeout_s=1800")
#: The validity suite alone: these tests are about PoRep validity verdicts; the other suites
#: (isolation, warmup, timing, ...) would add minutes of PoRep proving per run.
VALIDITY_ONLY = ("--pytest-arg=-k", "--pytest-arg=test_validity")


@pytest.fixture
def porep_run(artifacts: Any, tmp_path: Path) -> Callable[..., CliRun]:
    """Runs `proofdiff run ARGS` with a one-hour deadline and reads its summary."""

    def run(*args: str, run_id: str) -> CliRun:
        cmd = [sys.executable, "-m", "harness.cli", "run", "--report-dir", str(tmp_path),
               "--run-id", run_id, *VALIDITY_ONLY, *SLOW_JOB_TIMEOUT, *args]
        proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True,
                              timeout=RUN_TIMEOUT_S)
        out = proc.stdout + proc.stderr
        path = tmp_path / run_id / "summary.json"
        assert path.is_file(), f"no report written by {cmd}:\n{out}"
        return CliRun(proc.returncode, out, json.loads(path.read_text()), tmp_path / run_id)

    return run


def _outcome(summary: dict[str, Any], profile: str, workload: str) -> dict[str, Any]:
    return next(o for o in summary["outcomes"]
                if o["profile"] == profile and o["workload"] == workload)


def _divergence(summary: dict[str, Any], workload: str) -> dict[str, Any]:
    found: list[dict[str, Any]] = [d for d in summary["divergences"]
                                   if d["workload"] == workload]
    assert len(found) == 1, summary["verdict_line"]
    return found[0]


def test_clean_image_bench_cli_and_prod_agree_on_1_and_2_partitions(porep_run: Any) -> None:
    # bench through the bench-cli driver (refprover's cuzk-bench-compatible client), prod
    # through gRPC with curio ids, 4 workers and the pipeline: every proof must verify.
    r = porep_run("--workload", "porep-2k", "--workload", "porep-2k-2p",
                  "--set", 'bench.driver="bench-cli"', run_id="e2e-porep-clean")
    assert r.rc == 0, r.output
    s = r.summary
    assert s["verdict"] == "pass" and not s["divergences"], s["verdict_line"]
    runs = {(x["profile"], x["workload"]): x for x in s["runs"]}
    for workload, partitions in (("porep-2k", 1), ("porep-2k-2p", 2)):
        for profile in ("bench", "prod"):
            o = _outcome(s, profile, workload)
            assert o["outcome"] == "valid" and o["total"] == o["valid"] == 2, o
            assert o["unverified"] == 0, o
            run = runs[(profile, workload)]
            assert all(len(j["proof"]) == partitions * 192 * 2 for j in run["jobs"]), workload
            for v in run["verdicts"].values():
                assert v["partitions"] == [True] * partitions, v
        assert {j["request_id"] for j in runs[("prod", workload)]["jobs"]} == {
            "porep-1000-1", "porep-1000-2"}
        assert {j["request_id"] for j in runs[("bench", workload)]["jobs"]} == {BENCH_REQUEST_ID}


def test_partition_race_on_prod_names_the_failing_partitions(porep_run: Any) -> None:
    # prod's 4 partition workers pass finished partition proofs through one shared scratch
    # buffer, so partitions come back with another partition's (or job's) bytes.
    r = porep_run("--workload", "porep-2k", "--workload", "porep-2k-2p", "--set", "bench.jobs=1",
                  "--set", "prod.env.REFPROVER_FAULTS=partition-race", run_id="e2e-porep-race")
    assert r.rc == 1, r.output
    for workload, partitions in (("porep-2k", 1), ("porep-2k-2p", 2)):
        div = _divergence(r.summary, workload)
        assert div["left"]["outcome"] == "valid" and div["right"]["outcome"] == "invalid", div
        bad = [b for b in div["right"]["bad"] if b["kind"] == "invalid"]
        assert bad, div
        for b in bad:
            assert b["bad_partitions"], b
            assert set(b["bad_partitions"]) <= set(range(partitions)), b
            assert "do not verify" in b["reason"], b
        suspects = [x["path"] for x in div["suspects"]]
        assert suspects[0] == "env.REFPROVER_FAULTS", suspects
        assert "config.pipeline.enabled" in suspects, suspects
        assert "config.synthesis.partition_workers" in suspects, suspects
    assert "partitions [0] do not verify" in r.output, r.output  # the CLI names them too


def test_shared_assembler_with_retried_sectors_on_prod_is_caught(porep_run: Any) -> None:
    # prod proves each sector twice at once (jobs=4 cycles the 2 sectors), as a retried C2
    # does: curio ids collide (porep-1000-1 twice), the two jobs share one assembler, and the
    # second partition proof for a slot is refused ("partition N already inserted"), or, with
    # 2 partitions, one job may be assembled from the other's partitions.
    r = porep_run("--workload", "porep-2k", "--workload", "porep-2k-2p", "--set", "bench.jobs=1",
                  "--set", "prod.jobs=4", "--set", "prod.env.REFPROVER_FAULTS=shared-assembler",
                  run_id="e2e-porep-asm")
    assert r.rc == 1, r.output
    for workload, partitions in (("porep-2k", 1), ("porep-2k-2p", 2)):
        div = _divergence(r.summary, workload)
        right = div["right"]
        assert div["left"]["outcome"] == "valid", div
        assert right["outcome"] in ("failed", "invalid"), div
        assert {b["request_id"] for b in right["bad"]} <= {"porep-1000-1", "porep-1000-2"}
        for b in right["bad"]:  # each failure names its partition: in the error or the verdict
            assert b["bad_partitions"] or "partition " in b["reason"], b
            assert set(b["bad_partitions"]) <= set(range(partitions)), b
        assert any("already inserted" in b["reason"] or b["bad_partitions"] for b in right["bad"])
        assert div["suspects"][0]["path"] == "env.REFPROVER_FAULTS", div["suspects"]
    assert "porep-1000-1" in r.output and "already inserted" in r.output, r.output
