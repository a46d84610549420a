"""Warmup, liveness, oracle records, the report sections and the catch matrix's cells, on records
shaped like real runs (tests/conftest.py builders); no Docker."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from harness.catch_matrix import CATALOG, cells_of, judge_row
from harness.oracle_liveness import liveness
from harness.oracle_records import OracleRecord, oracle_divergences, read_records, write_record
from harness.oracle_warmup import steady_jobs, warmup
from harness.profiles import load_profiles
from harness.records import JobStatus
from harness.report import build_summary, write_report
from harness.timing_sampler import in_progress
from tests.conftest import REPO, job, run

PROFILES = REPO / "profiles" / "refprover.toml"


def test_warmup_ok_failed_unverified_and_implausibly_fast() -> None:
    r = run("bench", [job(i, wall_ms=3700.0) for i in range(4)])
    out = warmup(r, [j.wall_ms for j in steady_jobs(r, 1)])
    assert out.ok and out.warmup["srs_load_ms"] == 200 and out.steady.n == 3
    failed = run("prod", [job(0, JobStatus.FAILED, error="SRS load failed: not found at "
                              "/data/zk/params")], errors=())
    failed = dataclasses.replace(failed, log_tail="2026 WARN job ended error=SRS load failed\n")
    out = warmup(failed)
    assert not out.ok and "FAILED: SRS load failed" in out.explain()
    assert "WARN job ended" in out.explain()  # the daemon's own log lines come along
    bad = run("prod", [job(0)], bad={0: [True, False]})
    assert "does not verify: bad partitions [1]" in warmup(bad).problems[0]
    fast = run("bench", [job(0, wall_ms=150.0)] + [job(i, wall_ms=3700.0) for i in (1, 2, 3)])
    probs = warmup(fast, [3700.0] * 3).problems
    assert any("implausibly fast warmup: 150 ms < floor 1850 ms" in p for p in probs), probs
    assert any("SRS load of 200 ms" in p for p in probs), probs


def test_liveness_explains_an_oom_kill_and_names_lost_jobs() -> None:
    r = run("prod", [job(0), job(1, JobStatus.ERROR, error="UNAVAILABLE")])
    alive = liveness(r, {"Status": "running", "ExitCode": 0, "OOMKilled": False})
    assert alive.alive and not alive.message
    dead = liveness(r, {"Status": "exited", "ExitCode": 137, "OOMKilled": True},
                    "INFO job queued\n")
    assert not dead.alive and "exit code 137 and OOMKilled=true" in dead.message
    assert "raise the profile's mem_limit" in dead.message and "wpost-1" in dead.message
    gone = liveness(r, {})
    assert not gone.alive and "is gone" in gone.message


def test_in_progress_counts_overlapping_proving_intervals() -> None:
    serial = [(0.0, 0, 1000), (0.0, 1000, 2000), (0.0, 2000, 3000)]
    assert in_progress(serial) == [1.0, 1.0, 1.0]
    both = [(0.0, 0, 2000), (0.0, 0, 2000)]
    assert in_progress(both) == [2.0, 2.0]
    assert in_progress([(0.0, 0, 0)]) == [1.0]


def test_records_roundtrip_and_divergences(tmp_path: Path) -> None:
    recs = [OracleRecord("isolation", "distinct-inputs", "bench", "wpost-2k", "pass"),
            OracleRecord("isolation", "distinct-inputs", "prod", "wpost-2k", "fail", "identical"),
            OracleRecord("timing", "concurrency", "prod", "wpost-2k", "fail", "one at a time"),
            OracleRecord("preflight", "params", "bench", "wpost-2k", "fail", "x"),
            OracleRecord("preflight", "params", "prod", "wpost-2k", "fail", "x")]
    for r in recs:
        write_record(tmp_path, r)
    back = read_records(tmp_path)
    assert sorted(r.key for r in back) == sorted(r.key for r in recs)
    ps = load_profiles(PROFILES)
    from harness.config_delta import profile_delta

    divs = oracle_divergences(back, "bench", [profile_delta(ps["bench"], ps["prod"])])
    assert sorted(d["headline"] for d in divs) == [
        "isolation/distinct-inputs diverged on wpost-2k: bench=pass, prod=fail",
        "timing/concurrency diverged on wpost-2k: bench=n/a, prod=fail"]
    timing = next(d for d in divs if d["suite"] == "timing")
    assert timing["suspects"][0]["path"] == "config.pipeline.enabled", timing["suspects"]


def test_summary_and_html_carry_oracles_and_the_catch_matrix(tmp_path: Path) -> None:
    ps = load_profiles(PROFILES)
    runs = [run("bench", [job(0)]), run("prod", [job(0)])]
    recs = [OracleRecord("isolation", "hang", "bench", "wpost-2k", "pass", "ok"),
            OracleRecord("isolation", "hang", "prod", "wpost-2k", "fail",
                         "the daemon stopped answering; stuck job ids: iso-1-u2")]
    s = build_summary(run_id="r-orc", profiles=ps, runs=runs, oracles=recs)
    assert s["verdict"] == "diverged" and "isolation/hang" in s["verdict_line"]
    assert s["oracle_divergences"][0]["suspects"], "config differences must be ranked"
    both = build_summary(run_id="r2", profiles=ps, runs=runs, oracles=[
        dataclasses.replace(recs[1], profile="bench"), recs[1]])
    assert both["verdict"] == "invalid" and not both["oracle_divergences"]
    clean = build_summary(run_id="r3", profiles=ps, runs=runs, oracles=recs[:1])
    assert clean["verdict"] == "pass"
    matrix = {"suites": ["preflight", "isolation"], "faulty_profile": "prod", "rows": [
        {"fault": "queue-deadlock", "meant": ["isolation", "hang"], "meant_oracles": ["hang"],
         "cells": {"isolation": [{"oracle": "hang", "profile": "prod"}]}, "ok": True,
         "verdict": "caught by isolation/hang", "wall_s": 61.0,
         "suites": ["isolation"], "validity_ran": True}]}
    s = build_summary(run_id="r-matrix", profiles=ps, runs=runs, oracles=recs,
                      catch_matrix=matrix)
    out = write_report(tmp_path, s)
    html = (out / "index.html").read_text()
    assert "Catch matrix" in html and "<b>hang</b> [prod]" in html and "stuck job ids" in html
    assert json.loads((out / "summary.json").read_text())["catch_matrix"]["rows"][0]["ok"]


def test_catch_matrix_cells_and_row_verdicts() -> None:
    summary = {"outcomes": [{"profile": "bench", "outcome": "valid"},
                            {"profile": "prod", "outcome": "invalid"}],
               "oracles": [{"suite": "isolation", "oracle": "distinct-inputs",
                            "profile": "prod", "outcome": "fail"},
                           {"suite": "timing", "oracle": "aa", "profile": "bench",
                            "outcome": "pass"}],
               "errors": []}
    cells = cells_of(summary)
    assert cells == {"validity": [{"oracle": "invalid", "profile": "prod"}],
                     "isolation": [{"oracle": "distinct-inputs", "profile": "prod"}]}
    case = {c.name: c for c in CATALOG}
    assert judge_row(case["shared-witness"], cells, baseline="bench", faulty="prod")[0]
    ok, why = judge_row(case["serialize-pipeline"], cells, baseline="bench", faulty="prod")
    assert not ok and why == "MISSED by timing/concurrency"
    ok, why = judge_row(case["clean"], cells, baseline="bench", faulty="prod")
    assert not ok and why.startswith("FALSE ALARM: validity/invalid [prod]")
    cells["preflight"] = [{"oracle": "params", "profile": "bench"}]
    ok, why = judge_row(case["shared-witness"], cells, baseline="bench", faulty="prod")
    assert not ok and "baseline failed too: preflight/params" in why
