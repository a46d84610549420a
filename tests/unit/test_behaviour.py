"""The behaviour oracles on canned runs (tests/unit/fakes.py): each passes on what a correct
daemon shows, fails on the property's violation, and is an error, not a pass, on no input."""

from __future__ import annotations

from pathlib import Path

from msgspec.structs import replace

from proofdiff.model.jobs import FlowRecord, JobRecord, NO_TIMINGS, StatusSample
from proofdiff.model.runs import ResourceUsage
from proofdiff.model.status import JobStatus, Outcome
from proofdiff.oracles import behaviour, in_flight
from proofdiff.oracles.observed_overlap import max_overlap, observed_floor, proving_interval
from proofdiff.oracles.evidence import Recorder
from tests.conftest import job, run
from tests.unit.fakes import FakeDriver, FakeEvidence, refprover_profiles


def _samples(*in_progress: int) -> tuple[StatusSample, ...]:
    return tuple(StatusSample(250.0 * i, 4, n, 4) for i, n in enumerate(in_progress))


def _ev(workload_file: Path, prod_in_progress: tuple[int, ...] = (1, 3, 3, 2),
        bench_in_progress: tuple[int, ...] = (1, 1, 1), **kw: object) -> FakeEvidence:
    runs = {}
    for name, seen in (("bench", bench_in_progress), ("prod", prod_in_progress)):
        r = run(name, [job(i) for i in range(4)])  # sent at once: more items than any limit
        runs[name] = replace(r, flows=(replace(r.flows[0], samples=_samples(*seen),
                                               concurrency=4),))
    return FakeEvidence(profiles=refprover_profiles("prod.config.pipeline.max_parallel_synthesis=3"),
                        workload_file=workload_file, runs=runs, **kw)  # type: ignore[arg-type]


def _one(ev: FakeEvidence, fn: object, profile: str, *extra: object) -> list:  # type: ignore[type-arg]
    rec = Recorder(ev, "behaviour", "wpost-2k")  # type: ignore[arg-type]
    fn(ev, rec, profile, "wpost-2k", *extra)  # type: ignore[operator]
    return rec.records


def test_mode_passes_as_asked_and_fails_on_one_partition_at_a_time(workload_file: Path) -> None:
    ev = _ev(workload_file)
    (ok,) = _one(ev, behaviour._mode, "prod")
    assert ok.outcome is Outcome.PASS and ok.evidence["requested"]["expected"] == 3
    serial = _ev(workload_file, prod_in_progress=(1, 1, 1, 1))
    (bad,) = _one(serial, behaviour._mode, "prod")
    assert bad.outcome is Outcome.FAIL
    assert "asked for pipeline.enabled=True, 4 partition worker(s), at most 3 in flight" in bad.message
    assert "seen proving one work item at a time (4 samples)" in bad.message
    assert "env" in bad.names and "config.pipeline.enabled" in bad.names
    (bench,) = _one(ev, behaviour._mode, "bench")
    assert bench.outcome is Outcome.PASS  # it asked for one at a time


def test_mode_fails_when_the_daemon_reports_another_path(workload_file: Path) -> None:
    ev = _ev(workload_file, status={"prod": {"pipeline_enabled": False, "partition_workers": 1}})
    (bad,) = _one(ev, behaviour._mode, "prod")
    assert bad.outcome is Outcome.FAIL
    assert "reports pipeline_enabled=False" in bad.message and "1 partition worker" in bad.message
    # what was observed points first at the env var that mentions the path, then the key
    assert bad.names[:3] == ("env.REFPROVER_DISABLE_PIPELINE", "config.pipeline.enabled",
                             "config.synthesis.partition_workers"), bad.names


def _untimed(ev: FakeEvidence, profile: str = "prod") -> FakeEvidence:
    """The profile's answers without timings (total_ms 0): no proving interval to observe."""
    r = ev.runs[profile]
    f = r.flows[0]
    ev.runs[profile] = replace(r, flows=(replace(f, jobs=tuple(
        replace(j, timings=NO_TIMINGS) for j in f.jobs)),))
    return ev


def test_mode_and_in_flight_without_samples_are_errors(workload_file: Path) -> None:
    ev = _untimed(_ev(workload_file, prod_in_progress=()))
    assert _one(ev, behaviour._mode, "prod")[0].outcome is Outcome.ERROR
    assert _one(ev, in_flight.check, "prod")[0].outcome is Outcome.ERROR


def test_in_flight_fails_past_the_configured_limit(workload_file: Path) -> None:
    (ok,) = _one(_ev(workload_file), in_flight.check, "prod")
    assert ok.outcome is Outcome.PASS and "within pipeline.max_parallel_synthesis = 3" in ok.message
    (bad,) = _one(_ev(workload_file, prod_in_progress=(3, 4, 4)), in_flight.check, "prod")
    assert bad.outcome is Outcome.FAIL
    assert "4 work items in progress (workload at 0.2 s) but pipeline.max_parallel_synthesis = 3" \
        in bad.message


def test_in_flight_with_no_limit_configured_or_reported_is_skipped(workload_file: Path) -> None:
    (free,) = _one(_ev(workload_file), in_flight.check, "bench")
    assert free.outcome is Outcome.SKIPPED
    assert "no limit to judge against: the profile sets no pipeline.max_parallel_synthesis" \
        in free.message


def test_in_flight_takes_the_limit_the_daemon_logged_at_start(workload_file: Path) -> None:
    """refprover's scheduler line: bench (no status port) reports its limit in its log."""
    ev = _ev(workload_file, bench_in_progress=(1, 2, 1))
    r = ev.runs["bench"]
    ev.runs["bench"] = replace(r, daemon=replace(r.daemon, log_tail=(
        "2026-12-02T06:00:00Z INFO refprover::engine: scheduler workers=1 max_concurrent=1 "
        "inflight_limit=None budget_slots=None by_priority=true\n")))
    (bad,) = _one(ev, in_flight.check, "bench")
    assert bad.outcome is Outcome.FAIL
    assert "but the daemon's start log (max_concurrent=) = 1" in bad.message


def _priority_flows(high_start_s: float, low_starts_s: list[float]) -> dict[str, FlowRecord]:
    t0 = 1_700_000_000.0
    lows = [JobRecord(index=i, job="wpost-0", request_id=f"low-{i}", status=JobStatus.COMPLETED,
                      priority="NORMAL", started_unix_s=t0 + 0.001 * i,
                      timings=replace(NO_TIMINGS, queue_wait_ms=int(s * 1000)),
                      wall_ms=3000.0)
            for i, s in enumerate(low_starts_s)]
    n = len(lows)
    high = JobRecord(index=n, job="wpost-1", request_id="high", status=JobStatus.COMPLETED,
                     priority="HIGH", started_unix_s=t0 + 0.01,
                     timings=replace(NO_TIMINGS, queue_wait_ms=int((high_start_s - 0.01) * 1000)),
                     wall_ms=6000.0)
    return {"priority": FlowRecord(name="priority", jobs=(*lows, high))}


#: The lone-request check's requests, the priority check's solo latency (median 2500 ms).
SOLO = tuple(JobRecord(index=i, job="wpost-0", request_id=f"lone-{i}", status=JobStatus.COMPLETED,
                       wall_ms=w) for i, w in enumerate((2400.0, 2600.0, 2500.0)))


def test_priority_passes_when_the_high_job_goes_first(workload_file: Path) -> None:
    # bench proves one item at a time: 1 NORMAL job runs, 1 waits, the HIGH one is sent last
    ev = _ev(workload_file, sent=_priority_flows(3.0, [0.0, 6.0]))
    (ok,) = _one(ev, behaviour._priority, "bench", SOLO)
    assert ok.outcome is Outcome.PASS, ok.message
    assert "started before all 1 NORMAL job(s) still queued" in ok.message
    assert ok.evidence["solo_ms"] == 2500.0 and ok.evidence["ratio"] == 2.4, ok.evidence
    assert [c[0] for c in ev.calls] == ["priority"]  # the lone requests are its solo
    (name, specs), = [c for c in ev.calls if c[0] == "priority"]
    assert [s.priority for s in specs] == ["NORMAL", "NORMAL", "HIGH"]  # HIGH submitted last


def test_priority_fails_on_fifo_and_on_a_blown_bound(workload_file: Path) -> None:
    fifo = _ev(workload_file, sent=_priority_flows(6.0, [0.0, 3.0]))
    (bad,) = _one(fifo, behaviour._priority, "bench", SOLO)
    assert bad.outcome is Outcome.FAIL and "started before it (low-1 at +2.99 s" in bad.message
    slow = _priority_flows(3.0, [0.0, 6.0])
    slow["priority"] = replace(slow["priority"], jobs=(*slow["priority"].jobs[:-1], replace(
        slow["priority"].jobs[-1], wall_ms=2500.0 * (behaviour.PRIORITY_BOUND + 1))))
    (late,) = _one(_ev(workload_file, sent=slow), behaviour._priority, "bench", SOLO)
    assert late.outcome is Outcome.FAIL and "beyond the bound" in late.message
    lost = tuple(replace(j, status=JobStatus.FAILED, error="boom") for j in SOLO)
    (err,) = _one(_ev(workload_file, sent=_priority_flows(3.0, [0.0, 6.0])), behaviour._priority,
                  "bench", lost)
    assert err.outcome is Outcome.ERROR and "no lone request came back with a proof" in err.message


def test_priority_without_queued_work_or_through_bench_cli_is_not_a_pass(
        workload_file: Path) -> None:
    none_queued = _ev(workload_file, sent=_priority_flows(0.0, [0.0, 0.0]))
    (err,) = _one(none_queued, behaviour._priority, "bench", SOLO)
    assert err.outcome is Outcome.ERROR and "no NORMAL job was still queued" in err.message
    tool = _ev(workload_file, drivers={"bench": FakeDriver(name="bench-cli", chooses_ids=False)})
    (skip,) = _one(tool, behaviour._priority, "bench", SOLO)
    assert skip.outcome is Outcome.SKIPPED and "cuzk-bench sends UNSPECIFIED" in skip.message


def _with_use(ev: FakeEvidence, use: ResourceUsage | None, state: dict[str, object]) -> FakeEvidence:
    r = ev.runs["prod"]
    ev.runs["prod"] = replace(r, daemon=replace(r.daemon, resources=use, state=state))
    return ev


def test_resources_oom_warning_and_no_samples(workload_file: Path) -> None:
    mib = 2 ** 20
    oom = _with_use(_ev(workload_file), ResourceUsage(mem_limit_bytes=512 * mib,
                    peak_mem_bytes=500 * mib, peak_cpu_cores=1.9, samples=7),
                    {"Status": "exited", "ExitCode": 137, "OOMKilled": True})
    (bad,) = _one(oom, behaviour._resources, "prod")
    assert bad.outcome is Outcome.FAIL
    assert "OOM-killed; peak memory 500 MiB of 512 MiB" in bad.message
    warm = _with_use(_ev(workload_file), ResourceUsage(mem_limit_bytes=512 * mib,
                     peak_mem_bytes=480 * mib, samples=7), {"Status": "running"})
    (warn,) = _one(warm, behaviour._resources, "prod")
    assert warn.outcome is Outcome.PASS and "above 90 % of the limit" in warn.evidence["warning"]


def test_resources_with_nothing_sampled_are_skipped(workload_file: Path) -> None:
    mib = 2 ** 20
    none = _with_use(_ev(workload_file), ResourceUsage(mem_limit_bytes=512 * mib, samples=0),
                     {"Status": "running"})
    (no_sample,) = _one(none, behaviour._resources, "prod")
    assert no_sample.outcome is Outcome.SKIPPED
    assert "nothing was sampled to judge: no memory or CPU sample" in no_sample.message
    empty = _with_use(_ev(workload_file), ResourceUsage(mem_limit_bytes=512 * mib, samples=9),
                      {"Status": "running"})
    (blank,) = _one(empty, behaviour._resources, "prod")
    assert blank.outcome is Outcome.SKIPPED
    assert "9 sample(s), each with no memory or CPU figure" in blank.message


def test_an_oom_kill_before_any_sample_still_fails(workload_file: Path) -> None:
    killed = _with_use(_ev(workload_file), ResourceUsage(mem_limit_bytes=2 ** 29, samples=0),
                       {"Status": "exited", "ExitCode": 137, "OOMKilled": True})
    (bad,) = _one(killed, behaviour._resources, "prod")
    assert bad.outcome is Outcome.FAIL and "OOM-killed before any memory sample" in bad.message


def test_a_daemon_that_never_reports_work_in_progress_is_not_a_pass(workload_file: Path) -> None:
    ev = _ev(workload_file)
    r = ev.runs["prod"]
    quiet = tuple(StatusSample(250.0 * i, 0, 0, 0) for i in range(5))
    ev.runs["prod"] = replace(r, flows=(replace(r.flows[0], samples=quiet),))
    (mode,) = _one(ev, behaviour._mode, "prod")
    (inflight,) = _one(_untimed(ev), in_flight.check, "prod")
    assert mode.outcome is Outcome.ERROR and "reported no work in progress" in mode.message
    assert inflight.outcome is Outcome.ERROR and "no sample showed any work" in inflight.message


def _overlapping(ev: FakeEvidence, priorities: tuple[str, ...] = ("", "", "", "")) -> FakeEvidence:
    """prod's four workload jobs sent together and answered after ~2 s, each proving from 5 ms
    after its send (its answer's queue_wait) to its answer: all four proving at once."""
    r = ev.runs["prod"]
    f = r.flows[0]
    jobs = tuple(replace(j, started_unix_s=1_700_000_000.0 + 0.001 * j.index, wall_ms=2010.0,
                         priority=priorities[j.index],
                         timings=replace(j.timings, queue_wait_ms=5, srs_load_ms=0,
                                         total_ms=2000)) for j in f.jobs)
    ev.runs["prod"] = replace(r, flows=(replace(f, jobs=jobs, concurrency=4),))
    return ev


def test_in_flight_fails_on_the_observed_overlap_though_the_daemons_count_is_within(
        workload_file: Path) -> None:
    # the daemon counts at most 3 items in progress (its limit), but its own answers put four
    # one-priority jobs in proving at once: each held at least one work item (FIFO, never
    # pre-empted), so at least 4 items were in progress
    ev = _overlapping(_ev(workload_file, prod_in_progress=(1, 3, 3, 2)))
    (bad,) = _one(ev, in_flight.check, "prod")
    assert bad.outcome is Outcome.FAIL, bad.message
    assert "show at most 4 job(s) proving at once (workload) over 4 answer(s): id-0, id-1, " \
        "id-2, id-3 at once" in bad.message
    assert "own count never went past 3" in bad.message
    assert bad.evidence["observed_floor"] == 4 and bad.names[0] == \
        "config.pipeline.max_parallel_synthesis"


def test_the_observed_floor_leaves_out_mixed_priorities_and_gpu_daemons(
        workload_file: Path) -> None:
    # a NORMAL job may wait, holding nothing, behind a later HIGH one: no floor from that flow
    mixed = _overlapping(_ev(workload_file), ("NORMAL", "NORMAL", "NORMAL", "HIGH"))
    (ok,) = _one(mixed, in_flight.check, "prod")
    assert ok.outcome is Outcome.PASS and ok.evidence["observed_intervals"] == 0, ok.message
    # cuzk's limit counts syntheses, a proving interval holds the GPU phase too: not judged
    gpu = _overlapping(_ev(workload_file))
    gpu.profiles = refprover_profiles("prod.config.pipeline.max_parallel_synthesis=3",
                                      'prod.gpus="all"')
    (ok_gpu,) = _one(gpu, in_flight.check, "prod")
    assert ok_gpu.outcome is Outcome.PASS and ok_gpu.evidence["floor_judged"] is False
    assert "not a bound on a GPU daemon's synthesis limit" in ok_gpu.message


def test_a_daemon_that_reports_nothing_is_judged_from_its_answers(workload_file: Path) -> None:
    # cuzk shows no queue for a job running alone: its count says nothing, its answers do
    ev = _overlapping(_ev(workload_file, prod_in_progress=(0, 0, 0)))
    r = ev.runs["prod"]
    quiet = tuple(StatusSample(250.0 * i, 0, 0, None) for i in range(3))
    ev.runs["prod"] = replace(r, flows=(replace(r.flows[0], samples=quiet),))
    (bad,) = _one(ev, in_flight.check, "prod")
    assert bad.outcome is Outcome.FAIL and "own count never went past 0" in bad.message


def test_proving_intervals_end_at_the_observed_answer_and_touching_ones_do_not_overlap() -> None:
    t0 = 1_700_000_000.0

    def answered(i: int, sent: float, queue_ms: int, total_ms: int, wall_ms: float) -> JobRecord:
        return JobRecord(index=i, job=f"wpost-{i}", request_id=f"id-{i}", proof=b"p",
                         status=JobStatus.COMPLETED, started_unix_s=t0 + sent, wall_ms=wall_ms,
                         timings=replace(NO_TIMINGS, queue_wait_ms=queue_ms, total_ms=total_ms))

    one_after_other = [answered(0, 0.0, 0, 1000, 1001.0), answered(1, 0.0, 1000, 2000, 2001.0)]
    assert max_overlap(one_after_other)[0] == 1  # a FIFO daemon, one at a time
    # only what is certain counts: an answer read 1 s late (the client awaited another id
    # first) leaves the 1 s the daemon may have been done; a claimed total the client could not
    # have seen (60 s in a 1 s wall) gives no interval at all
    late = answered(0, 0.0, 0, 1000, 2000.0)
    assert proving_interval(late) is None  # receipt anywhere in [0, 1 s]: nothing certain
    assert proving_interval(answered(0, 0.0, 0, 60_000, 1000.0)) is None
    pair = [answered(0, 0.0, 0, 1000, 1000.0), answered(1, 0.5, 0, 1000, 1000.0)]
    assert max_overlap(pair)[:3] == (2, t0 + 0.501, ("id-0", "id-1"))


def test_jobs_sent_without_a_priority_are_of_their_kinds_priority() -> None:
    # a PoRep (NORMAL by default) and a WindowPoSt (HIGH) sent with no priority are two
    # priorities to the daemon: the later HIGH one may leave the earlier PoRep holding nothing
    t0 = 1_700_000_000.0
    jobs = tuple(JobRecord(index=i, job=name, request_id=f"id-{i}", proof=b"p",
                           status=JobStatus.COMPLETED, started_unix_s=t0, wall_ms=1000.0,
                           timings=replace(NO_TIMINGS, total_ms=1000))
                 for i, name in enumerate(("porep-0", "wpost-0")))
    flow = FlowRecord(name="workload", jobs=jobs)
    mixed = observed_floor([flow], lambda job: job.split("-")[0])
    assert (mixed.jobs, mixed.flows, mixed.mixed) == (0, 0, 1)
    one_kind = observed_floor([flow], lambda _job: "WINDOW_POST_PARTITION")
    assert (one_kind.jobs, one_kind.flows, one_kind.mixed) == (2, 1, 0)
