"""behaviour/in-flight decides the same way every run (proofdiff.oracles.in_flight): it needs a
flow that offers more work items at once than the limit, sends one where no flow did, and
counts the log's work items (partitions of one job side by side, which the answers cannot show)
beside the daemon's count and the answers' floor."""

from __future__ import annotations

from pathlib import Path

from msgspec.structs import replace

from proofdiff.model.jobs import FlowRecord, JobRecord, StatusSample
from proofdiff.model.status import Outcome
from proofdiff.oracles import in_flight
from proofdiff.oracles.evidence import Recorder
from tests.conftest import job, run
from tests.unit.fakes import FakeEvidence, refprover_profiles

T0 = 1796665155.8  # the first log line's time, Unix seconds


def _items(spec: list[tuple[str, int, str, str]]) -> str:
    """Log lines of refprover partitions: (job id, partition, start s, end s) after 17:39:15."""
    out = []
    for rid, k, a, b in spec:
        out.append(f"2026-12-07T17:39:{a}Z DEBUG partition start job_id={rid} seq=1 partition={k}")
        out.append(f"2026-12-07T17:39:{b}Z DEBUG partition done job_id={rid} seq=1 partition={k}")
    return "\n".join(out)


def _pair(n: int) -> tuple[JobRecord, ...]:
    """``n`` jobs sent together at T0 and answered 4 s later, without timings (no floor)."""
    return tuple(replace(job(i), request_id=f"j{i}", started_unix_s=T0, wall_ms=4000.0,
                         timings=replace(job(i).timings, total_ms=0)) for i in range(n))


def _ev(workload_file: Path, flow: FlowRecord, log: str = "") -> FakeEvidence:
    r = run("prod", [job(i) for i in range(4)])
    r = replace(r, flows=(flow,), daemon=replace(r.daemon, log_tail=log))
    return FakeEvidence(profiles=refprover_profiles("prod.config.pipeline.max_parallel_synthesis=3"),
                        workload_file=workload_file, runs={"prod": r})


def _judge(ev: FakeEvidence) -> list:  # type: ignore[type-arg]
    rec = Recorder(ev, "behaviour", "wpost-2k")  # type: ignore[arg-type]
    in_flight.check(ev, rec, "prod", "wpost-2k")  # type: ignore[arg-type]
    return rec.records


def test_a_run_without_a_saturating_flow_gets_one(workload_file: Path) -> None:
    # one job at a time (2 items) never offers prod's limit of 3 more than it
    one_at_a_time = FlowRecord(name="workload", jobs=_pair(4), concurrency=1,
                               samples=(StatusSample(250.0, 0, 2),))
    ev = _ev(workload_file, one_at_a_time)
    ev.sent["admission"] = FlowRecord(name="admission", jobs=_pair(2), concurrency=2,
                                      samples=(StatusSample(250.0, 0, 3),))
    (ok,) = _judge(ev)
    assert [(name, len(specs)) for name, specs in ev.calls] == [("admission", 2)]
    assert ok.outcome is Outcome.PASS and "at once in admission" in ok.message, ok.message
    assert ok.evidence["saturating_flows"] == ["admission"]
    # a flow of the run that offers more than the limit already: nothing more is sent
    ev2 = _ev(workload_file, replace(one_at_a_time, concurrency=4))
    (ok2,) = _judge(ev2)
    assert ev2.calls == [] and ok2.evidence["saturating_flows"] == ["workload"]


def test_items_past_the_limit_in_the_log_fail_though_the_count_is_within(
        workload_file: Path) -> None:
    # two jobs' four partitions proving at once, the daemon counting at most 3 (a slot given
    # back before the proof): only the log's items show it
    log = _items([("j0", 0, "15.900", "17.900"), ("j0", 1, "15.901", "17.800"),
                  ("j1", 0, "15.902", "18.100"), ("j1", 1, "15.903", "18.000")])
    flow = FlowRecord(name="workload", jobs=_pair(2), concurrency=4,
                      samples=tuple(StatusSample(250.0 * i, 0, 3) for i in range(1, 8)))
    (bad,) = _judge(_ev(workload_file, flow, log))
    assert bad.outcome is Outcome.FAIL, bad.message
    assert "the log's work-item events show at most 4 item(s) in progress at once" in bad.message
    assert "but pipeline.max_parallel_synthesis = 3; the daemon's own count reached 3" in \
        bad.message
    assert bad.evidence["log_ids"] == ["j0#0", "j0#1", "j1#0", "j1#1"]
    # three at once, a fourth starting as one ends: within the limit
    within = _items([("j0", 0, "15.900", "17.900"), ("j0", 1, "15.901", "17.800"),
                     ("j1", 0, "15.902", "18.100"), ("j1", 1, "17.800", "18.900")])
    (ok,) = _judge(_ev(workload_file, flow, within))
    assert ok.outcome is Outcome.PASS and ok.evidence["log_max_at_once"] == 3, ok.message
