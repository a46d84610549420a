"""``proofdiff bisect`` on the real image, every probe a real run: the catalog faults that need
a config combination are isolated to exactly that combination, in a stated number of probes.
The fault is switched on in both profiles (``*.env``), so the switch itself is no part of the
delta: what is found is the config change that triggers it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from proofdiff.bisect import BisectResult
from proofdiff.model import serde

from tests.e2e.conftest import REPO, unique

pytestmark = pytest.mark.e2e


def bisect(tmp_path: Path, *args: str) -> tuple[int, str, BisectResult]:
    rid = unique("bisect")
    cmd = [sys.executable, "-m", "proofdiff", "bisect", "--report-dir", str(tmp_path),
           "--run-id", rid, "--jobs", "1", *args]
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=1500)
    out = proc.stdout + proc.stderr
    summary = tmp_path / rid / "summary.json"
    assert summary.is_file(), f"no report from {cmd}:\n{out}"
    assert (tmp_path / rid / "index.html").is_file()
    return proc.returncode, out, serde.read(summary, BisectResult)


def test_partition_race_needs_the_pipeline_and_more_than_one_partition_worker(
        artifacts: Any, tmp_path: Path) -> None:
    rc, out, r = bisect(tmp_path, "--set", "*.env.REFPROVER_FAULTS=partition-race",
                        "--oracle", "validity/proofs")
    assert rc == 0 and r.status == "found", out
    assert {c.path for c in r.change} == {"config.pipeline.enabled",
                                          "config.synthesis.partition_workers"}, r.steps
    by = {c.path: c for c in r.change}
    assert by["config.pipeline.enabled"].good is False and by["config.pipeline.enabled"].bad
    assert by["config.synthesis.partition_workers"].bad > 1
    # good, bad, top-1 (pipeline: pass), top-2 (+ workers: fail), workers alone, 2 confirmations
    assert r.n_probes == 7, [(p.units, p.outcome) for p in r.probes]
    assert "minimal failure-inducing change" in out and "config.pipeline.enabled" in out


def test_shared_assembler_needs_one_job_id_for_all_and_concurrency(
        artifacts: Any, tmp_path: Path) -> None:
    rc, out, r = bisect(tmp_path, "--set", "*.env.REFPROVER_FAULTS=shared-assembler",
                        "--set", 'prod.job_ids="fixed"', "--oracle", "validity")
    assert rc == 0 and r.status == "found", out
    # one id for every job, jobs in flight together, and the partitioned pipeline: refprover's
    # per-job assembler, where the partitions of jobs with one id meet, is the pipeline's
    assert {c.path for c in r.change} == {"job_ids", "concurrency",
                                          "config.pipeline.enabled"}, r.steps
    # the validity record names job_ids and concurrency (ids shared in flight), so they are
    # tried first: top-1, top-2 pass, top-3 (+ pipeline) fails; then the context and the
    # confirmations
    assert r.n_probes == 10, [(p.units, p.outcome) for p in r.probes]


def test_param_path_default_is_the_param_path_change(artifacts: Any, tmp_path: Path) -> None:
    # --jobs 2: the confirmation's two probes run side by side (threads, two daemons)
    rc, out, r = bisect(tmp_path, "--set", "*.env.REFPROVER_FAULTS=param-path-default",
                        "--oracle", "preflight/params", "--jobs", "2")
    assert rc == 0 and r.status == "found", out
    paths = {c.path for c in r.change}
    assert paths == {"mounts.params", "config.srs.param_cache",
                     "env.FIL_PROOFS_PARAMETER_CACHE"}, r.steps  # one unit: they move together
    assert len(r.difference) == 1
    assert r.n_probes == 5, [(p.units, p.outcome) for p in r.probes]


def test_a_good_profile_that_already_fails_stops_at_once_and_says_so(
        artifacts: Any, tmp_path: Path) -> None:
    rc, out, r = bisect(tmp_path, "--set", "*.env.REFPROVER_FAULTS=param-path-default",
                        "--good", "prod", "--bad", "bench", "--oracle", "preflight/params")
    assert rc == 1 and r.status == "good-fails", out
    assert r.n_probes == 2 and "'prod' already fails preflight/params" in r.reason, r.reason
