"""behaviour/growth (proofdiff.oracles.daemon_growth) on flows shaped like a default run's: a
floor that moves with an allocator's ups and downs passes; a floor that climbs with every job
served, or a descriptor kept per job, fails with the figures; too little repeated work and a
process that cannot be read are skipped with the reason, never a pass."""

from __future__ import annotations

from pathlib import Path

from msgspec.structs import replace

from proofdiff.model.jobs import FlowRecord, UsageSample
from proofdiff.model.status import Outcome
from proofdiff.oracles import daemon_growth
from proofdiff.oracles.evidence import Recorder
from proofdiff.runtime.process_probe import Reading
from tests.conftest import job, run
from tests.unit.fakes import FakeEvidence, refprover_profiles

MIB = 2 ** 20
#: A default run's flows after the workload on prod: (name, jobs sent).
FLOWS = (("burst", 4), ("reuse", 1), ("lone", 2), ("priority", 5))


def _flow(name: str, n: int, before_mib: float, busiest_mib: float, fds: int = 12,
          threads: int = 11) -> FlowRecord:
    jobs = tuple(job(i) for i in range(n))
    return FlowRecord(name=name, jobs=jobs, concurrency=n, wall_ms=3000.0, usage=(
        UsageSample(0.0, 0, int(before_mib * MIB), fds, threads, 10.0),
        UsageSample(250.0, 0, int(busiest_mib * MIB), fds, threads + 4, 10.5),
        UsageSample(3000.0, n, int((before_mib + 5) * MIB), fds, threads, 12.0)))


def _ev(workload_file: Path, idle_mib: list[float], *, per_flow_fds: int = 0) -> FakeEvidence:
    r = run("prod", [job(i) for i in range(4)])
    warm = replace(r.flows[0], concurrency=4,  # prod's: as many items at once as later
                   usage=(UsageSample(0.0, 0, 7 * MIB, 10, 7, 0.0),
                          UsageSample(250.0, 0, 60 * MIB, 12, 11, 1.0)))
    sent = {name: _flow(name, n, idle_mib[k], idle_mib[k] + 25, fds=12 + per_flow_fds * k)
            for k, (name, n) in enumerate(FLOWS)}
    ev = FakeEvidence(profiles=refprover_profiles(), workload_file=workload_file,
                      runs={"prod": replace(r, flows=(warm,))}, sent=sent)
    ev.calls = [(name, []) for name, _ in FLOWS]
    ev.reading["prod"] = Reading(rss_bytes=int(idle_mib[-1] * MIB), fds=12, threads=11,
                                 cpu_s=30.0)
    return ev


def _judge(ev: FakeEvidence) -> list:  # type: ignore[type-arg]
    rec = Recorder(ev, "behaviour", "wpost-2k")  # type: ignore[arg-type]
    daemon_growth.check(ev, rec, "prod", "wpost-2k")  # type: ignore[arg-type]
    return rec.records


def test_an_allocators_ups_and_downs_pass(workload_file: Path) -> None:
    # floors like a clean prod daemon's here: 40 -> 51 -> 47 -> 52 MiB, after a warm-up that
    # reached 60 MiB: an allocator may keep up to 20 MiB above the lowest floor
    (ok,) = _judge(_ev(workload_file, [40.0, 51.0, 47.0, 52.0]))
    assert ok.outcome is Outcome.PASS, ok.message
    assert ok.evidence["window_jobs"] == 7 and ok.evidence["bound_mib"] == 20.0
    assert "level: 4 flows after the warm-up over 7 jobs" in ok.message
    assert ok.evidence["now"]["rss_mib"] == 52.0  # quoted, not judged


def test_a_floor_that_rises_to_the_warm_ups_high_water_mark_and_stops_passes(
        workload_file: Path) -> None:
    # floors as a clean bench daemon's (process runtime, fresh-clone CI): the allocator gave
    # back less after each flow, up to the most the warm-up held, and never more; Theil-Sen's
    # slope over the four floors extrapolates past that mark, the readings do not reach it
    ev = _ev(workload_file, [37.3, 37.5, 43.8, 49.9])
    warm = ev.runs["prod"].flows[0]
    ev.runs["prod"] = replace(ev.runs["prod"], flows=(replace(warm, usage=(
        UsageSample(0.0, 0, 7 * MIB, 10, 7, 0.0), UsageSample(250.0, 0, 50 * MIB, 12, 11, 1.0))),))
    (ok,) = _judge(ev)
    assert ok.evidence["rss_growth_mib"] > ok.evidence["bound_mib"], ok.evidence  # the slope's
    assert ok.evidence["rss_reached_mib"] <= ok.evidence["bound_mib"], ok.evidence
    assert ok.outcome is Outcome.PASS, ok.message


def test_a_rise_within_the_floors_own_noise_passes_whatever_the_warm_up_held(
        workload_file: Path) -> None:
    # floors as a clean bench daemon's on a fleet host (fresh-clone CI): the warm-up's readings
    # caught it 0.3 MiB above its lowest floor, and the floor rose 2.5 MiB over 6 jobs
    ev = _ev(workload_file, [40.4, 40.6, 41.9, 42.9])
    warm = ev.runs["prod"].flows[0]
    ev.runs["prod"] = replace(ev.runs["prod"], flows=(replace(warm, usage=(
        UsageSample(0.0, 0, 7 * MIB, 10, 7, 0.0), UsageSample(250.0, 0, int(40.7 * MIB), 12, 11,
                                                              1.0))),))
    (ok,) = _judge(ev)
    assert ok.evidence["bound_mib"] < ok.evidence["rss_reached_mib"] < 8, ok.evidence
    assert ok.outcome is Outcome.PASS, ok.message


def test_memory_that_climbs_with_every_job_fails_with_the_figures(workload_file: Path) -> None:
    # about 7 MiB kept per job: a partition's witness per partition, never freed
    (bad,) = _judge(_ev(workload_file, [45.0, 74.0, 81.0, 95.0]))
    assert bad.outcome is Outcome.FAIL, bad.message
    assert "its floor grew" in bad.message and "per job" in bad.message
    assert "more than the 15.0 MiB the warm-up held at its busiest above it" in bad.message
    assert [p["served"] for p in bad.evidence["floors"]] == [4, 8, 9, 11]
    assert bad.evidence["rss_slope_kib_per_job"] > 5 * 1024
    assert bad.names and bad.names[0] == "config.pipeline.enabled"


def test_the_bound_grows_with_the_items_a_later_flow_had_at_once(workload_file: Path) -> None:
    # a warm-up of one job at a time (2 items) and later bursts of 3 items at once: an
    # allocator may keep half as much again
    ev = _ev(workload_file, [40.0, 51.0, 47.0, 52.0])
    ev.runs["prod"] = replace(ev.runs["prod"], flows=(replace(ev.runs["prod"].flows[0],
                                                              concurrency=1),))
    (ok,) = _judge(ev)
    assert ok.evidence["bound_scale"] == 1.5 and ok.evidence["bound_mib"] == 30.0, ok.evidence


def test_a_descriptor_kept_per_job_fails(workload_file: Path) -> None:
    (bad,) = _judge(_ev(workload_file, [40.0, 41.0, 40.0, 42.0], per_flow_fds=3))
    assert bad.outcome is Outcome.FAIL, bad.message
    assert "open file descriptors at rest grew from 12 to 21" in bad.message


def test_too_little_work_and_an_unreadable_process_are_skipped(workload_file: Path) -> None:
    ev = _ev(workload_file, [40.0, 41.0, 40.0, 42.0])
    ev.calls = ev.calls[2:]  # lone and priority only (`--suite behaviour`): 2 flows, 2 jobs
    (short,) = _judge(ev)
    assert short.outcome is Outcome.SKIPPED
    assert "too little repeated work to judge: 2 flow(s) after the warm-up" in short.message
    blind = _ev(workload_file, [40.0, 41.0, 40.0, 42.0])
    blind.reading.clear()
    blind.sent = {k: replace(f, usage=()) for k, f in blind.sent.items()}
    blind.runs["prod"] = replace(blind.runs["prod"], flows=(replace(
        blind.runs["prod"].flows[0], usage=()),))
    (skip,) = _judge(blind)
    assert skip.outcome is Outcome.SKIPPED and "cannot be read here" in skip.message
