"""Timing (DESIGN.md section 5): per profile, warmup and steady-state latency and throughput at
the profile's concurrency; across profiles, throughput scaling (prod vs bench) and jobs really
proved at once, with an A/A arm on the baseline. Samples are interleaved (A B A B) on the two
daemons of this host, verdicts are three-valued (Mann-Whitney U + effect-size floor + extra
samples on INCONCLUSIVE up to a budget: ``harness.timing``, ``harness.oracle_timing``).

INCONCLUSIVE passes with a warning (never a false alarm); the figures also go to
``<run dir>/benchmarks/timing-<workload>.json`` for ``pytest-benchmark compare``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from fixtures.differential import timing_of
from fixtures.session import ProofdiffSession
from harness.oracle_timing import judge
from harness.records import JobStatus
from harness.timing import TimingVerdict, summarize
from harness.timing_sampler import Sampling

pytestmark = pytest.mark.proofdiff


def _verdict(doc: dict[str, Any], key: str) -> TimingVerdict | None:
    from harness.timing import Summary

    v = doc["verdicts"].get(key)
    if v is None:
        return None
    nan = float("nan")
    return TimingVerdict(
        arm=v["arm"], metric=v["metric"], left=v["left"], right=v["right"], verdict=v["verdict"],
        a=Summary(**v["a"]), b=Summary(**v["b"]),
        ratio=v["ratio"] if v["ratio"] is not None else nan,
        ratio_ci=tuple(x if x is not None else nan for x in v["ratio_ci"]),  # type: ignore[arg-type]
        p_value=v["p_value"] if v["p_value"] is not None else nan,
        u_stat=v["u_stat"] if v["u_stat"] is not None else nan,
        effect_size=v["effect_size"] if v["effect_size"] is not None else nan,
        floor_rel=v["floor_rel"], alpha=v["alpha"], looks=v["looks"], reason=v["reason"],
        a_ms=tuple(v["a_ms"]), b_ms=tuple(v["b_ms"]), unit=v.get("unit", "ms"))


def _timing(session: ProofdiffSession, gate: Callable[..., None], rec: Callable[..., None],
            workload: str, profile: str, oracle: str) -> dict[str, Any]:
    """The shared timing samples; a profile whose batch got stuck or failed fails here (the
    other sides are judged on the samples drawn before it stopped)."""
    gate(profile, workload, oracle)
    doc = timing_of(session, workload)
    s = doc["sampling"]
    if s.get("stopped") and s.get("stopped_side", "").split(":")[0] == profile:
        rec(oracle, profile, workload, "fail", f"timing sampling stopped on {profile!r}: "
            f"{s['stopped']}; a daemon that cannot finish a batch cannot be timed")
    return doc


def test_warmup_and_steady_state(proofdiff_session: ProofdiffSession,
                                 proofdiff_gate: Callable[..., None],
                                 proofdiff_record: Callable[..., None],
                                 proofdiff_profile_name: str, proofdiff_workload_name: str) -> None:
    """Latency (median, IQR), throughput at the profile's concurrency, warmup apart; a proof
    faster than its own SRS load is flagged."""
    name, wl = proofdiff_profile_name, proofdiff_workload_name
    doc = _timing(proofdiff_session, proofdiff_gate, proofdiff_record, wl, name,
                  "latency-throughput")
    s = Sampling.from_json(doc["sampling"])
    base = doc["base"]
    labels = [f"{base}:A1", f"{base}:A2"] if name == base else [name]
    if name != base and name not in doc["others"]:
        pytest.skip(f"profile {name!r} was not sampled: {doc['skipped'].get(name)}")
    lat = summarize([x for lb in labels for x in s.latencies(lb)])
    cost = summarize([x for lb in labels for x in s.costs(lb)])
    run = proofdiff_session.run(name, wl)
    first = next((j for j in run.jobs if j.index == 0), None)
    warm = f"{first.wall_ms:.0f} ms (SRS load {first.srs_load_ms} ms)" if first else "none"
    conc = proofdiff_session.profiles[name].concurrency
    text = (f"profile {name!r} on {wl} at concurrency {conc}: warmup {warm}; steady latency "
            f"{lat.render()}; per-proof cost {cost.render()} = throughput "
            f"{60000 / cost.median_ms if cost.median_ms else 0:.1f} proofs/min")
    odd = [f"{j.name} (id={j.request_id}): total {j.total_ms} ms < SRS load {j.srs_load_ms} ms"
           for j in run.jobs if j.status is JobStatus.COMPLETED and j.total_ms < j.srs_load_ms]
    odd += [f"round {b.round} {b.side}: {t.request_id} total {t.total_ms} ms < SRS load "
            f"{t.srs_load_ms} ms" for lb in labels for b in s.of(lb) for t in b.jobs
            if t.total_ms < t.srs_load_ms]
    if odd:
        text += "\nimplausible timings (a proof faster than its own SRS load): " + "; ".join(odd)
    proofdiff_record("latency-throughput", name, wl, "fail" if odd else "pass", text,
                     data={"latency": lat.to_json(), "cost": cost.to_json(),
                           "warmup_ms": first.wall_ms if first else None})


def test_aa_arm(proofdiff_session: ProofdiffSession, proofdiff_gate: Callable[..., None],
                proofdiff_record: Callable[..., None], proofdiff_workload_name: str) -> None:
    """The baseline against itself: a DIFFERENT here is a false alarm of the method."""
    base = next(iter(proofdiff_session.profiles))
    doc = _timing(proofdiff_session, proofdiff_gate, proofdiff_record, proofdiff_workload_name,
                  base, "aa")
    v = _verdict(doc, "aa")
    assert v is not None
    j = judge("aa", v)
    proofdiff_record("aa", base, proofdiff_workload_name, j.outcome, j.message, data=j.data)


@pytest.mark.parametrize("arm", ["throughput", "concurrency"])
def test_scaling_vs_baseline(proofdiff_session: ProofdiffSession,
                             proofdiff_gate: Callable[..., None],
                             proofdiff_record: Callable[..., None], proofdiff_profile_name: str,
                             proofdiff_workload_name: str, arm: str) -> None:
    """Throughput per proof and jobs in progress at once, this profile vs the baseline."""
    base = next(iter(proofdiff_session.profiles))
    name = proofdiff_profile_name
    if name == base:
        pytest.skip(f"{name!r} is the baseline; see test_aa_arm")
    doc = _timing(proofdiff_session, proofdiff_gate, proofdiff_record, proofdiff_workload_name,
                  name, arm)
    v = _verdict(doc, f"{arm}:{name}")
    if v is None:
        pytest.skip(f"profile {name!r} was not sampled: {doc['skipped'].get(name)}")
    j = judge(f"{arm}:{name}", v, proofdiff_session.profiles[name])
    proofdiff_record(arm, name, proofdiff_workload_name, j.outcome, j.message, data=j.data)
