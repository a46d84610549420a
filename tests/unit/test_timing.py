"""Timing comparisons (proofdiff.stats.unpaired), the timing oracles' judgement
(proofdiff.oracles.timing.judge) and their pytest-benchmark output (proofdiff.report.benchmark_json).

Pure statistics on seeded samples: scipy's Mann-Whitney U and the Hodges-Lehmann interval are
the real parts here. The false-alarm test draws many A/A pairs from one distribution and checks
that DIFFERENT stays within the stated alpha; `pytest-benchmark compare` is the real CLI.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from msgspec.structs import replace

from proofdiff.core.differential import assemble
from proofdiff.model.jobs import DaemonTimings, FlowRecord
from proofdiff.model.status import JobStatus, Outcome
from proofdiff.oracles import timing
from proofdiff.oracles.timing import judge
from proofdiff.report.benchmark_json import benchmark_files
from proofdiff.stats.unpaired import (DIFFERENT, INCONCLUSIVE, SAME, adaptive_compare, compare,
                                   summarize)
from proofdiff.stats.concurrency import in_progress
from tests.conftest import job, run
from tests.unit.fakes import FakeEvidence, refprover_profiles


def _lognormal(rng: np.random.Generator, median_ms: float, n: int, sigma: float = 0.05) -> list[float]:
    return list(median_ms * np.exp(rng.normal(0.0, sigma, n)))


def test_summary_median_and_iqr() -> None:
    s = summarize([1.0, 2.0, 3.0, 4.0, 100.0])
    assert (s.n, s.median, s.q1, s.q3, s.iqr, s.min, s.max) == \
        (5, 3.0, 2.0, 4.0, 2.0, 1.0, 100.0)
    assert summarize([]).n == 0


def test_same_within_the_floor_and_different_beyond_it() -> None:
    rng = np.random.default_rng(1)
    a, b = _lognormal(rng, 3700, 8), _lognormal(rng, 3750, 8)
    v = compare(a, b, arm="aa", left="A1", right="A2")
    assert v.verdict == SAME and 0.9 < v.ratio < 1.1, v.render()
    c = _lognormal(rng, 7400, 8)
    v = compare(a, c, arm="ab")
    assert v.verdict == DIFFERENT and v.ratio == pytest.approx(2.0, rel=0.1), v.render()
    assert v.p_value < 0.05 and v.effect_size == 1.0 and v.ratio_ci[0] > 1.25
    assert "ratio" in v.render() and "Mann-Whitney U" in v.render()


def test_a_significant_but_tiny_difference_is_same_not_different() -> None:
    a = [1000.0 + i for i in range(10)]
    b = [1050.0 + i for i in range(10)]  # +5 %: real, but under the 25 % floor
    v = compare(a, b)
    assert v.p_value < 0.01 and v.verdict == SAME, v.render()


def test_too_few_or_too_noisy_samples_are_inconclusive() -> None:
    assert compare([1.0, 2.0, 3.0], [1.0, 2.0, 3.0]).verdict == INCONCLUSIVE
    rng = np.random.default_rng(2)
    a, b = _lognormal(rng, 3700, 5, sigma=0.6), _lognormal(rng, 3700, 5, sigma=0.6)
    v = compare(a, b)
    assert v.verdict == INCONCLUSIVE and "floor" in v.reason, v.render()


def test_ties_everywhere_are_same() -> None:
    v = compare([1.0] * 6, [1.0] * 6, unit="jobs")
    assert v.verdict == SAME and v.p_value == 1.0 and "jobs" in v.render()


def test_bad_input_is_refused() -> None:
    with pytest.raises(ValueError, match="> 0 ms"):
        compare([0.0, 1.0, 1.0, 1.0], [1.0] * 4)
    with pytest.raises(ValueError, match="floor_rel"):
        compare([1.0] * 4, [1.0] * 4, floor_rel=0)


def _adaptive(sigma: float) -> tuple[Any, list[int]]:
    rng = np.random.default_rng(3)
    calls: list[int] = []

    def draw(n: int) -> tuple[list[float], list[float]]:
        calls.append(n)
        return _lognormal(rng, 3700, n, sigma), _lognormal(rng, 3700, n, sigma)

    return adaptive_compare(draw, initial=4, step=2, budget=12), calls


def test_adaptive_sampling_gives_up_only_at_the_budget() -> None:
    v, calls = _adaptive(0.15)  # too noisy for the 25 % floor in 12 samples
    assert v.verdict == INCONCLUSIVE and v.max_looks == 5, v.render()
    assert v.left_summary.n == sum(calls) == 12 and calls[0] == 4


def test_adaptive_sampling_stops_once_decided() -> None:
    v, calls = _adaptive(0.02)
    assert v.verdict == SAME and v.left_summary.n == sum(calls) < 12, v.render()


def test_aa_false_alarm_rate_stays_within_alpha() -> None:
    """400 A/A comparisons of one noisy distribution (sigma 20 %, a loaded 2-core host): the
    share judged DIFFERENT must stay within alpha (5 %)."""
    rng = np.random.default_rng(4)
    n, alarms = 400, 0
    for _ in range(n):
        a, b = _lognormal(rng, 3700, 6, 0.2), _lognormal(rng, 3700, 6, 0.2)
        alarms += compare(a, b).verdict == DIFFERENT
    assert alarms / n <= 0.05, alarms


def test_in_progress_counts_overlapping_proving_intervals() -> None:
    serial = [(0.0, 0, 1000), (0.0, 1000, 2000), (0.0, 2000, 3000)]
    assert in_progress(serial) == [1.0, 1.0, 1.0]
    assert in_progress([(0.0, 0, 2000), (0.0, 0, 2000)]) == [2.0, 2.0]
    assert in_progress([(0.0, 0, 0)]) == [1.0]


def test_judge_describes_and_fails_only_a_property_the_interval_shows_broken() -> None:
    rng = np.random.default_rng(5)
    a = _lognormal(rng, 3700, 8)
    same = compare(a, _lognormal(rng, 3700, 8), left="bench:A1", right="bench:A2")
    out, msg = judge("aa", same)
    assert out is Outcome.PASS and "described: the baseline against itself, ratio" in msg
    slow = compare(a, _lognormal(rng, 9000, 8), left="bench", right="prod")
    out, msg = judge("aa", slow)  # a within-run A/A is no claim about a build
    assert out is Outcome.PASS and "its two halves differ" in msg
    out, msg = judge("throughput:prod", slow, 4)
    assert out is Outcome.FAIL and "throughput of prod at concurrency 4 collapsed" in msg
    assert "at least" in msg
    out, msg = judge("throughput:prod", same, 4)
    assert out is Outcome.PASS and "described: per-proof cost of prod" in msg
    ones = compare([1.0] * 8, [1.0] * 8, unit="jobs")
    out, msg = judge("concurrency:prod", ones, 4)
    assert out is Outcome.FAIL and "serializes jobs" in msg
    side_by_side = compare([1.0] * 8, [2.9, 3.0, 3.1, 2.8, 3.0, 3.2, 2.9, 3.0], unit="jobs")
    out, msg = judge("concurrency:prod", side_by_side, 4)
    assert out is Outcome.PASS and "described: jobs in progress at once on prod" in msg


def test_the_concurrency_arm_with_nothing_to_overlap_is_skipped() -> None:
    ones = compare([1.0] * 8, [1.0] * 8, unit="jobs")
    out, msg = judge("concurrency:prod", ones, 1)
    assert out is Outcome.SKIPPED and "prod has concurrency 1: nothing to overlap" in msg
    out, msg = judge("concurrency:prod", ones, 4, allowed=1)
    assert out is Outcome.SKIPPED
    assert "prod is allowed 1 job at a time by its config: nothing to overlap" in msg


def test_the_concurrency_arm_follows_what_the_config_allows() -> None:
    ones = compare([1.0] * 8, [1.0] * 8, unit="jobs")
    out, msg = judge("concurrency:prod", ones, 4, allowed=3,
                     seen="the daemon reports pipeline_enabled=False, partition_workers=1")
    assert out is Outcome.FAIL and "(its config allows 3)" in msg
    assert "observed: the daemon reports pipeline_enabled=False, partition_workers=1" in msg
    assert "per-job lock" not in msg  # no guess: what was seen


def test_judge_on_no_samples_is_an_error_and_noise_is_described_never_undecided() -> None:
    empty = compare([], [3700.0] * 5)
    out, msg = judge("throughput:prod", empty, 4)
    assert out is Outcome.ERROR and "no samples" in msg
    rng = np.random.default_rng(2)
    noisy = compare(_lognormal(rng, 3700, 5, 0.6), _lognormal(rng, 3700, 5, 0.6))
    assert noisy.verdict == "INCONCLUSIVE"  # the two-sided comparison is undecided ...
    for arm in ("aa", "throughput:prod", "concurrency:prod"):  # ... and the suite describes it
        out, msg = judge(arm, noisy, 4)
        assert out is Outcome.PASS and "described:" in msg and "ratio" in msg, (arm, msg)


def test_benchmark_json_is_read_by_pytest_benchmark_compare(tmp_path: Path) -> None:
    def timed(profile: str, walls: list[list[float]]):  # type: ignore[no-untyped-def]
        r = run(profile, [job(0, wall_ms=4000.0)])
        batches = tuple(FlowRecord(name="timing", label=f"{profile}#{i}", wall_ms=sum(w),
                                   jobs=tuple(job(k, wall_ms=x) for k, x in enumerate(w)))
                        for i, w in enumerate(walls))
        return replace(r, flows=(*r.flows, *batches))

    from msgspec.structs import replace
    result = assemble(run_id="r-bench", profiles={}, records=[], created_unix_s=1.7e9,
                      runs=[timed("bench", [[3700.0], [3650.0], [3800.0]]),
                            timed("prod", [[14000.0, 13500.0]])])
    ((rel, data),) = benchmark_files(result).items()
    assert rel == "benchmarks/timing-wpost-2k.json"
    p1 = tmp_path / "timing-wpost-2k.json"
    p1.write_bytes(data)
    doc = json.loads(data)
    names = [b["name"] for b in doc["benchmarks"]]
    assert names == ["wpost-2k/warmup[bench]", "wpost-2k/latency[bench]",
                     "wpost-2k/per-proof-cost[bench]", "wpost-2k/warmup[prod]",
                     "wpost-2k/latency[prod]", "wpost-2k/per-proof-cost[prod]"]
    lat = doc["benchmarks"][1]["stats"]
    assert lat["median"] == pytest.approx(3.7) and lat["data"] == [3.7, 3.65, 3.8]
    assert {"machine_info", "commit_info", "datetime", "version"} <= set(doc)
    assert doc["machine_info"]["cpu"] and "id" in doc["commit_info"]
    cli = Path(sys.executable).with_name("pytest-benchmark")
    out = subprocess.run([str(cli), "compare", str(p1), "--columns=median,iqr,rounds"],
                         capture_output=True, text=True, timeout=60, check=True).stdout
    assert "wpost-2k/latency[bench]" in out and "wpost-2k/per-proof-cost[prod]" in out, out
    assert "3.7000" in out, out


def test_a_batch_stuck_on_prod_fails_prod_and_skips_the_baselines_aa(workload_file: Path) -> None:
    class Ev(FakeEvidence):
        def send(self, profile: str, workload: str, specs: Any, *, name: str, label: str = "",
                 concurrency: int, **_kw: Any) -> FlowRecord:
            if profile == "prod":  # the hang guard's verdict on a deadlocked daemon
                return FlowRecord(name=name, label=label, concurrency=concurrency,
                                  jobs=tuple(job(i, JobStatus.STUCK) for i in range(len(specs))),
                                  stall="nothing pending or in progress for 15 s")
            return FlowRecord(name=name, label=label, concurrency=1, wall_ms=2000.0,
                              jobs=(job(0, wall_ms=2000.0),))

    ev = Ev(profiles=refprover_profiles(), workload_file=workload_file,
            runs={p: run(p, [job(i) for i in range(4)]) for p in ("bench", "prod")})
    recs = {(r.oracle, r.profile): r for r in timing.evaluate(ev, "wpost-2k")}  # type: ignore[arg-type]
    assert recs[("throughput", "prod")].outcome is Outcome.FAIL
    assert "stopped on 'prod'" in recs[("throughput", "prod")].message
    aa = recs[("aa", "bench")]  # bench had its A1 sample only: nothing to compare, not its fault
    assert aa.outcome is Outcome.SKIPPED and "stopped on 'prod'" in aa.message, aa.message


def test_the_lone_request_is_timed_on_every_profile_and_a_held_one_fails(
        workload_file: Path) -> None:
    """prod proves its batches of 4 promptly but holds a request that comes alone for 10 s (a
    batch waiting to fill): invisible in the batches, the lone side of every round shows it."""
    def answered(i: int, wall_ms: float, queue_ms: int) -> Any:
        return replace(job(i, wall_ms=wall_ms), timings=DaemonTimings(
            queue_wait_ms=queue_ms, srs_load_ms=0, synthesis_ms=40, gpu_compute_ms=700,
            total_ms=int(wall_ms) - 5))

    class Ev(FakeEvidence):
        def send(self, profile: str, workload: str, specs: Any, *, name: str, label: str = "",
                 concurrency: int, **_kw: Any) -> FlowRecord:
            self.calls.append((label, list(specs)))
            held = label.startswith("prod:lone")
            jobs = tuple(answered(i, 12_000.0 if held else 2000.0, 10_000 if held else 5)
                         for i in range(len(specs)))
            return FlowRecord(name=name, label=label, concurrency=concurrency, jobs=jobs,
                              wall_ms=12_000.0 if held else 2000.0 * len(specs) / concurrency)

    ev = Ev(profiles=refprover_profiles(), workload_file=workload_file,
            runs={p: run(p, [job(i) for i in range(4)]) for p in ("bench", "prod")})
    recs = {(r.oracle, r.profile): r for r in timing.evaluate(ev, "wpost-2k")}  # type: ignore[arg-type]
    lone_sends = [specs for label, specs in ev.calls if label.startswith("prod:lone")]
    assert lone_sends and all(len(specs) == 1 for specs in lone_sends)  # one per round, alone
    assert not any(label.startswith("bench:lone") for label, _ in ev.calls)  # A1/A2 are lone
    held = recs[("lone-request", "prod")]
    assert held.outcome is Outcome.FAIL, held.message
    assert held.evidence["median_lone_ms"] == 12_000.0 and held.evidence["bound_ms"] < 12_000.0
    assert recs[("lone-request", "bench")].outcome is Outcome.PASS
    assert recs[("throughput", "prod")].outcome is Outcome.PASS  # the batches never showed it
