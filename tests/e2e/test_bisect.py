"""``proofdiff bisect`` on the real image, every probe a real run: the catalog faults that need
a config combination are isolated to exactly that combination, confirmed 1-minimal by fresh
probes (the change fails again, and each of its units removed passes). The fault is switched on
in both profiles (``*.env``), so the switch itself is no part of the delta: what is found is the
config change that triggers it. ``proofdiff run --bisect`` bisects the run's first divergence
and puts the proven change in place of its ranked suspects; ``proofdiff nightly`` bisects each
new divergence within its budget, and not one still failing the next night."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from proofdiff.bisect import BisectResult
from proofdiff.model import serde
from proofdiff.nightly.nightly_result import NightlyResult

from tests.e2e.conftest import REPO, CliRun, unique
from tests.report_page import open_page

pytestmark = pytest.mark.e2e


def _command(command: str, tmp_path: Path, run_id: str, args: tuple[str, ...],
             timeout_s: float) -> tuple[int, str]:
    """``proofdiff COMMAND`` in a subprocess; (exit code, output), its summary.json written."""
    cmd = [sys.executable, "-m", "proofdiff", command, "--report-dir", str(tmp_path),
           "--run-id", run_id, "--bisect-jobs", "1", *args]
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=timeout_s)
    out = proc.stdout + proc.stderr
    assert (tmp_path / run_id / "summary.json").is_file(), f"no report from {cmd}:\n{out}"
    return proc.returncode, out


def bisect(tmp_path: Path, *args: str) -> tuple[int, str, BisectResult]:
    rid = unique("bisect")
    rc, out = _command("bisect", tmp_path, rid, args, 1500)
    assert (tmp_path / rid / "index.html").is_file()
    return rc, out, serde.read(tmp_path / rid / "summary.json", BisectResult)


def assert_confirmed_1_minimal(r: BisectResult) -> None:
    """The confirmation: the change afresh fails, and so does nothing less by one unit."""
    units = list(dict.fromkeys(c.unit for c in r.change))
    fresh = [p for p in r.probes if p.fresh]
    assert r.confirmed_probes == len(fresh) == 1 + len(units), [(p.units, p.outcome) for p in fresh]
    assert set(fresh[0].units) == set(units) and fresh[0].outcome == "FAIL", fresh[0]
    removed = [set(units) - set(p.units) for p in fresh[1:]]
    assert sorted(map(sorted, removed)) == sorted([u] for u in units), removed
    assert all(p.outcome == "PASS" for p in fresh[1:]), [(p.units, p.outcome) for p in fresh]
    assert f"1-minimal, confirmed with {1 + len(units)} probes" in r.line, r.line
    # the cache: dd never runs one configuration twice (only the confirmation re-runs)
    cached = [p.config for p in r.probes if not p.fresh]
    assert len(cached) == len(set(cached)), cached


def test_partition_race_needs_the_pipeline_and_more_than_one_partition_worker(
        one_partition_workload: str, tmp_path: Path) -> None:
    # one partition a job is enough: the race is between the partitions in flight, of any job
    # (refprover README, the fault catalog), and prod has both jobs in flight at once
    rc, out, r = bisect(tmp_path, "--workload-file", one_partition_workload,
                        "--set", "*.env.REFPROVER_FAULTS=partition-race",
                        "--oracle", "validity/proofs")
    assert rc == 0 and r.status == "found", out
    assert {c.path for c in r.change} == {"config.pipeline.enabled",
                                          "config.synthesis.partition_workers"}, r.steps
    by = {c.path: c for c in r.change}
    assert by["config.pipeline.enabled"].good is False and by["config.pipeline.enabled"].bad
    assert by["config.synthesis.partition_workers"].bad > 1
    assert_confirmed_1_minimal(r)
    assert "minimal failure-inducing change" in out and "config.pipeline.enabled" in out


# slow: a second two-key bisection; test_partition_race_needs_the_pipeline_and_more_than_one_
# partition_worker shows a two-key minimal change in make test
@pytest.mark.slow
def test_shared_assembler_needs_one_job_id_for_all_and_concurrency(
        one_partition_workload: str, tmp_path: Path) -> None:
    # one partition a job: the second job with the id inserts partition 0 again
    rc, out, r = bisect(tmp_path, "--workload-file", one_partition_workload,
                        "--set", "*.env.REFPROVER_FAULTS=shared-assembler",
                        "--set", 'prod.job_ids="fixed"', "--oracle", "validity")
    assert rc == 0 and r.status == "found", out
    # one id for every job, jobs in flight together, and the partitioned pipeline: refprover's
    # per-job assembler, where the partitions of jobs with one id meet, is the pipeline's
    assert {c.path for c in r.change} == {"job_ids", "concurrency",
                                          "config.pipeline.enabled"}, r.steps
    assert_confirmed_1_minimal(r)


def test_run_bisect_replaces_the_ranking_with_the_param_path_change(cli_run: Any) -> None:
    # --bisect-jobs 2: the confirmation's two probes run side by side (threads, two daemons)
    r: CliRun = cli_run("--suite", "preflight", "--set",
                        "*.env.REFPROVER_FAULTS=param-path-default", "--bisect",
                        "--bisect-jobs", "2", run_id="e2e-run-bisect")
    assert r.rc == 1, r.output  # the run's verdict (DIVERGED) decides the exit code
    note = r.result.extra["bisect"]
    assert note["status"] == "found", note
    div = r.result.divergences[0]
    assert (div.suite, div.oracle) == ("preflight", "params"), div
    paths = {s.path for s in div.suspects}
    assert paths == {"mounts.params", "config.srs.param_cache",
                     "env.FIL_PROOFS_PARAMETER_CACHE"}, div.suspects  # one unit: they move together
    assert all(s.why.startswith("bisected: the 1-minimal") for s in div.suspects), div.suspects
    bis = serde.read(r.report_dir.parent / note["run_id"] / "summary.json", BisectResult)
    assert len(bis.difference) == 1 and bis.oracle == "preflight/params"
    assert_confirmed_1_minimal(bis)
    assert "minimal failure-inducing change" in r.output


def test_a_good_profile_that_already_fails_stops_at_once_and_says_so(
        artifacts: Any, tmp_path: Path) -> None:
    rc, out, r = bisect(tmp_path, "--set", "*.env.REFPROVER_FAULTS=param-path-default",
                        "--good", "prod", "--bad", "bench", "--oracle", "preflight/params")
    assert rc == 1 and r.status == "good-fails", out
    assert r.n_probes == 2 and "'prod' already fails preflight/params" in r.reason, r.reason


def nightly(tmp_path: Path, run_id: str, *args: str) -> tuple[int, str, NightlyResult]:
    rc, out = _command("nightly", tmp_path, run_id, args, 900)
    return rc, out, serde.read(tmp_path / run_id / "summary.json", NightlyResult)


def test_the_nightly_bisects_a_new_divergence_and_not_one_still_failing(
        artifacts: Any, tmp_path: Path) -> None:
    # the fault on both profiles, so what differs is config: prod's params path (preflight
    # only, the cheapest real divergence with a known minimal change: 5 probes)
    args = ("--suite", "preflight", "--set", "*.env.REFPROVER_FAULTS=param-path-default",
            "--history", str(tmp_path / "h.sqlite"))
    rc, out, r = nightly(tmp_path, unique("night-1"), *args)
    assert rc == 1 and r.decision.value == "new", out
    (b,) = r.bisections
    assert (b.check, b.baseline, b.profile, b.status) == ("preflight/params", "bench", "prod",
                                                          "found"), b
    paths = {"mounts.params", "config.srs.param_cache", "env.FIL_PROOFS_PARAMETER_CACHE"}
    assert {c.path for c in b.change} == paths, b.change
    assert "bisected preflight/params on prod: " in r.decision_line, r.decision_line
    assert all(p in r.decision_line for p in paths), r.decision_line
    assert 0 < b.wall_s < r.bisect_budget_s == 1800 and b.probes >= 5, b
    bis = serde.read(tmp_path / r.run_id / b.run_id / "summary.json", BisectResult)
    assert_confirmed_1_minimal(bis)
    page = (tmp_path / r.run_id / "index.html").read_text(encoding="utf-8")
    assert "<code>mounts.params</code>" in page and f'href="{b.run_id}/index.html"' in page
    # the divergence's cause is the proven change, not the ranking (as with run --bisect)
    block = page[page.index('<section id="divergences">'):page.index("</section>")]
    assert "Proven cause (bisection)" in block and "Most likely cause" not in block, block
    assert all(f"{p}:" in block for p in paths) and f"(report {b.run_id})" in block, block
    assert "bisected: preflight/params on prod/wpost-2k: " in out
    # the failing night's page in a real browser: no script error, the new failure on the
    # first screen, which is saved beside the page (screenshot.png)
    facts = open_page(tmp_path / r.run_id / "index.html")
    assert facts.severe == [] and facts.divergence_top is not None, facts
    assert facts.divergence_top < facts.inner_height, facts
    # allure's timeline: the new failure at its record's real times, the bisection after it,
    # both within the night
    got = {x["name"]: (x["start"], x["stop"]) for x in (
        json.loads(p.read_text()) for p in (tmp_path / r.run_id / "allure-results")
        .glob("*-result.json"))}
    night = got["nightly/decision"]
    fail, bis_span = got["preflight/params [prod]"], got["bisect/preflight/params [prod]"]
    assert night[0] <= fail[0] <= fail[1] <= bis_span[0] < bis_span[1] <= night[1], got
    assert bis_span[1] - bis_span[0] == pytest.approx(b.wall_s * 1000, abs=2000), got
    # the next night it still fails: not new, so not bisected again
    rc, out, r2 = nightly(tmp_path, unique("night-2"), *args)
    assert rc == 0 and r2.decision.value == "clean" and not r2.bisections, out
    assert [c.standing.value for c in r2.checks] == ["still-failing"], r2.checks
