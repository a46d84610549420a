"""The slow tier end to end: PoRep C2 differential runs on the real refprover image.

Real C1 outputs of sealed 2 KiB sectors (`porep-2k`: 1 partition; `porep-2k-2p`: 2 partitions,
so per-partition work items and the per-job assembler run), proved for real on the CPU (about a
minute or more per proof on 2 cores) and verified per partition by the independent verifier.
Every test is one `proofdiff run`; faults go on prod only, through `--set`. Where a test needs
only a baseline, bench proves one job per workload (`bench.jobs=1`) to keep the tier short.
Run: `make test-slow` (or `pytest tests -m slow`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from proofdiff.model.oracle_records import Divergence
from proofdiff.model.status import Outcome, Verdict

from tests.e2e.conftest import CliRun

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

#: Deadline of one PoRep `proofdiff run`, seconds: two workloads x two profiles of C2 proofs
#: on 2 cores take about 10 minutes; the first run may also build the params (~20 min cold).
RUN_TIMEOUT_S = 3600
#: Per-job deadline for these runs: 4 PoRep jobs in flight on 2 shared cores, with other runs
#: on the same machine, can take longer than refprover.toml's 600 s each.
SLOW_JOB_TIMEOUT = ("--set", "*.timeout_s=1800")
#: The validity suite alone: these tests are about PoRep validity verdicts; the other suites
#: (isolation, warmup, timing, ...) would add minutes of PoRep proving per run.
VALIDITY = ("--suite", "validity")


@pytest.fixture
def porep_run(cli_run: Any) -> Callable[..., CliRun]:
    """`proofdiff run ARGS` on the validity suite with a one-hour deadline."""
    def run(*args: str, run_id: str) -> CliRun:
        result: CliRun = cli_run(*VALIDITY, *SLOW_JOB_TIMEOUT, *args, run_id=run_id,
                                 timeout_s=RUN_TIMEOUT_S)
        return result
    return run


def _divergence(r: CliRun, workload: str) -> Divergence:
    found = [d for d in r.result.divergences if d.workload == workload and d.oracle == "proofs"]
    assert len(found) == 1, r.result.verdict_line
    return found[0]


def test_clean_image_bench_cli_and_prod_agree_on_1_and_2_partitions(porep_run: Any) -> None:
    # bench through the bench-cli driver (refprover's cuzk-bench-compatible client), prod
    # through gRPC with curio ids, 4 workers and the pipeline: every proof must verify.
    r = porep_run("--workload", "porep-2k", "--workload", "porep-2k-2p",
                  "--set", 'bench.driver="bench-cli"', run_id="e2e-porep-clean")
    assert r.rc == 0, r.output
    assert r.result.verdict is Verdict.SAME and not r.result.divergences, r.result.verdict_line
    for workload, partitions in (("porep-2k", 1), ("porep-2k-2p", 2)):
        for profile in ("bench", "prod"):
            proofs = r.record("validity", "proofs", profile, workload)
            assert proofs.outcome is Outcome.PASS
            assert (proofs.counts.total, proofs.counts.valid) == (2, 2), proofs.evidence
            assert proofs.counts.unverified == 0
            run = r.result.run(profile, workload)
            assert run is not None and run.workload_flow is not None
            for j in run.workload_flow.jobs:
                assert len(j.proof) == partitions * 192 and j.verdict is not None
                assert j.verdict.partitions == (True,) * partitions, j.verdict
        prod = r.result.run("prod", workload)
        bench = r.result.run("bench", workload)
        assert prod and prod.workload_flow and bench and bench.workload_flow
        assert {j.request_id for j in prod.workload_flow.jobs} == {"porep-1000-1", "porep-1000-2"}
        assert {j.request_id for j in bench.workload_flow.jobs} == {"(bench tool uuid)"}


def test_partition_race_on_prod_names_the_failing_partitions(porep_run: Any) -> None:
    # prod's 4 partition workers pass finished partition proofs through one shared scratch
    # buffer, so partitions come back with another partition's (or job's) bytes.
    r = porep_run("--workload", "porep-2k", "--workload", "porep-2k-2p", "--set", "bench.jobs=1",
                  "--set", "*.env.REFPROVER_FAULTS=partition-race", run_id="e2e-porep-race")
    assert r.rc == 1, r.output
    for workload, partitions in (("porep-2k", 1), ("porep-2k-2p", 2)):
        div = _divergence(r, workload)
        assert div.baseline_outcome is Outcome.PASS and div.outcome is Outcome.FAIL, div
        bad = r.record("validity", "proofs", "prod", workload).evidence["bad"]
        assert bad, div
        for b in bad:
            assert b["bad_partitions"] and set(b["bad_partitions"]) <= set(range(partitions)), b
            assert "do not verify" in b["reason"], b
        suspects = [x.path for x in div.suspects]
        assert suspects[:2] == ["config.pipeline.enabled",
                                "config.synthesis.partition_workers"], suspects
    assert "partitions [0] do not verify" in r.output, r.output  # the CLI names them too


def test_shared_assembler_with_retried_sectors_on_prod_is_caught(porep_run: Any) -> None:
    # prod proves each sector twice at once (jobs=4 cycles the 2 sectors), as a retried C2
    # does: curio ids collide (porep-1000-1 twice), the two jobs share one assembler, and the
    # second partition proof for a slot is refused ("partition N already inserted"), or, with
    # 2 partitions, one job may be assembled from the other's partitions.
    r = porep_run("--workload", "porep-2k", "--workload", "porep-2k-2p", "--set", "bench.jobs=1",
                  "--set", "prod.jobs=4", "--set", "*.env.REFPROVER_FAULTS=shared-assembler",
                  run_id="e2e-porep-asm")
    assert r.rc == 1, r.output
    for workload, partitions in (("porep-2k", 1), ("porep-2k-2p", 2)):
        assert r.record("validity", "proofs", "bench", workload).outcome is Outcome.PASS
        bad = [b for o in ("proofs", "jobs")
               for b in r.record("validity", o, "prod", workload).evidence.get("bad", [])]
        assert bad and {b["request_id"] for b in bad} <= {"porep-1000-1", "porep-1000-2"}
        for b in bad:  # each failure names its partition: in the error or the verdict
            assert b["bad_partitions"] or "partition " in b["reason"], b
            assert set(b["bad_partitions"]) <= set(range(partitions)), b
        assert any("already inserted" in b["reason"] or b["bad_partitions"] for b in bad)
        divs = [d for d in r.result.divergences if d.workload == workload]
        # the colliding ids are named in the evidence (the switch is on both profiles)
        assert divs and all(d.suspects[0].path == "job_ids" for d in divs), divs
    assert "porep-1000-1" in r.output and "already inserted" in r.output, r.output
