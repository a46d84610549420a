"""behaviour/parallel (proofdiff.oracles.lone_parallel): a lone two-partition job on prod (four
workers, a limit of three) has both partitions in progress at once, judged from the log's
partition events where they fit the request, else from the answer's compute against the
client's clock; one after another fails, whatever the daemon's status claims."""

from __future__ import annotations

from pathlib import Path

from msgspec.structs import replace

from proofdiff.model.jobs import DaemonTimings, FlowRecord, JobRecord, StatusSample
from proofdiff.model.status import JobStatus, Outcome
from proofdiff.oracles import lone_parallel
from proofdiff.oracles.evidence import Recorder
from proofdiff.oracles.suite_table import applies
from tests.conftest import job, run
from tests.unit.fakes import FakeEvidence, refprover_profiles

T0 = 1796665155.8  # the first log line's time, Unix seconds


def _lone(rid: str, sent: float, gpu_ms: int, wall_ms: float = 2600.0) -> JobRecord:
    return JobRecord(index=0, job="wpost-0", request_id=rid, status=JobStatus.COMPLETED,
                     proof=b"p" * 384, started_unix_s=sent, wall_ms=wall_ms,
                     timings=DaemonTimings(queue_wait_ms=1, srs_load_ms=0, synthesis_ms=2,
                                           gpu_compute_ms=gpu_ms, total_ms=int(wall_ms) - 2))


def _line(at: str, what: str, rid: str, k: int) -> str:
    return f"2026-12-07T17:39:{at}Z DEBUG partition {what} job_id={rid} seq=9 partition={k} worker={k}"


def _ev(workload_file: Path, jobs: list[JobRecord], log: str = "",
        claims: tuple[int, ...] = (2, 2)) -> FakeEvidence:
    r = run("prod", [job(i) for i in range(4)])
    r = replace(r, daemon=replace(r.daemon, log_tail=log))
    lone = FlowRecord(name="lone", jobs=tuple(jobs), started_unix_s=T0 - 0.01,
                      samples=tuple(StatusSample(250.0 * (i + 1), 0, n) for i, n in
                                    enumerate(claims)))
    ev = FakeEvidence(profiles=refprover_profiles("prod.config.pipeline.max_parallel_synthesis=3"),
                      workload_file=workload_file, runs={"prod": r}, sent={"lone": lone})
    ev.calls = [("lone", [])]
    return ev


def _judge(ev: FakeEvidence) -> list:  # type: ignore[type-arg]
    rec = Recorder(ev, "behaviour", "wpost-2k")  # type: ignore[arg-type]
    lone_parallel.check(ev, rec, "prod", "wpost-2k")  # type: ignore[arg-type]
    return rec.records


def test_it_applies_where_the_config_promises_side_by_side() -> None:
    ps = refprover_profiles()
    assert not applies("behaviour", "parallel", profile=ps["bench"], baseline=True)
    assert applies("behaviour", "parallel", profile=ps["prod"], baseline=False)
    one = refprover_profiles("prod.config.pipeline.max_parallel_synthesis=1")["prod"]
    assert not applies("behaviour", "parallel", profile=one, baseline=False)


def test_partitions_side_by_side_in_the_log_pass(workload_file: Path) -> None:
    log = "\n".join([_line("15.816610", "start", "L1", 0), _line("15.816696", "start", "L1", 1),
                     _line("18.388093", "done", "L1", 1), _line("18.372117", "done", "L1", 0)])
    (ok,) = _judge(_ev(workload_file, [_lone("L1", T0, 5100)], log))
    assert ok.outcome is Outcome.PASS, ok.message
    assert "the log's partition events show 2 at once" in ok.message
    assert ok.evidence["decided_by"] == "log"


def test_one_after_another_fails_though_the_daemon_claims_two(workload_file: Path) -> None:
    log = "\n".join([_line("15.816610", "start", "L1", 0), _line("17.100000", "done", "L1", 0),
                     _line("17.100100", "start", "L1", 1), _line("18.380000", "done", "L1", 1)])
    (bad,) = _judge(_ev(workload_file, [_lone("L1", T0, 2560)], log, claims=(2, 2, 2)))
    assert bad.outcome is Outcome.FAIL, bad.message
    assert "show 1 at once" in bad.message and "one after another" in bad.message
    assert "GetStatus at most 2 in progress" in bad.message  # quoted, not believed
    assert bad.names[0] == "config.pipeline.enabled"


def test_without_log_events_the_answers_compute_against_the_wall_decides(
        workload_file: Path) -> None:
    (ok,) = _judge(_ev(workload_file, [_lone("a", T0, 5000), _lone("b", T0 + 5, 4900)]))
    assert ok.outcome is Outcome.PASS and ok.evidence["decided_by"] == "timings", ok.message
    (bad,) = _judge(_ev(workload_file, [_lone("a", T0, 2550), _lone("b", T0 + 5, 2500)]))
    assert bad.outcome is Outcome.FAIL and "0.97x the proving time" in bad.message, bad.message
    # figures that do not add up (a partition's share beyond the job) decide nothing
    (err,) = _judge(_ev(workload_file, [_lone("a", T0, 2_550_000)]))
    assert err.outcome is Outcome.ERROR and "nothing to judge" in err.message


def test_one_partition_jobs_have_nothing_to_put_side_by_side(tmp_path: Path) -> None:
    import json

    from tests.conftest import workload_doc

    doc = workload_doc(sectors=2)
    doc["partitions"] = 1
    path = tmp_path / "one.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    (skip,) = _judge(_ev(path, [_lone("a", T0, 2500)]))
    assert skip.outcome is Outcome.SKIPPED and "one partition" in skip.message
