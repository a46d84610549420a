"""The gRPC client and driver, through the one prove-many flow, against real refprover daemons
run on the host: real proofs (2 KiB WindowPoSt), real transport, real deadlines."""

from __future__ import annotations

import base64
import json
import uuid
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import pytest
from msgspec.structs import replace

from proofdiff.drivers.protocol import plan_workload
from proofdiff.drivers.stall_rule import AnswerClock
from proofdiff.drivers.deadlines import Deadlines
from proofdiff.drivers.flow import prove_many
from proofdiff.drivers.grpc_driver import GrpcDriver
from proofdiff.model import progress
from proofdiff.model.jobs import FlowRecord, JobSpec
from proofdiff.model.progress import ProgressEvent
from proofdiff.model.profile_file import load_profiles
from proofdiff.model.status import JobStatus
from proofdiff.model.workload import Workload, load_workload
from proofdiff.drivers.cuzk_client import ClientError, ProverClient

from proofdiff.runtime.daemon import Daemon as RunningDaemon
from tests.host.conftest import BENCH_CONFIG, process_profile

Daemon = Callable[..., AbstractContextManager[str]]


def _flow(addr: str, wl: Workload, specs: list[JobSpec], conc: int,
          deadlines: Deadlines | None = None, **watch: Any) -> FlowRecord:
    return prove_many(GrpcDriver(addr), addr, wl, specs, name="workload", concurrency=conc,
                      deadlines=deadlines or Deadlines(job_s=120.0), log=lambda _l: None,
                      **watch)


def _overlap(flow: FlowRecord) -> bool:
    spans = sorted((j.started_unix_s, j.started_unix_s + j.wall_ms / 1000) for j in flow.jobs)
    return any(b[0] < a[1] for a, b in zip(spans, spans[1:]))


def test_status_metrics_and_not_found(daemon: Daemon) -> None:
    with daemon() as addr, ProverClient(addr) as c:
        st = c.get_status(timeout_s=5)
        assert {q.proof_kind for q in st.queues} == {"POREP_SEAL_COMMIT", "WINDOW_POST_PARTITION"}
        assert "cuzk_proofs_completed_total" in c.get_metrics(timeout_s=5)
        with pytest.raises(ClientError) as ei:
            c.await_proof("no-such-job", timeout_s=5)
    assert ei.value.code == "NOT_FOUND" and addr in str(ei.value)


def test_unreachable_address_is_a_clear_transport_error() -> None:
    with ProverClient("127.0.0.1:1") as c, pytest.raises(ClientError) as ei:
        c.get_status(timeout_s=2)
    assert ei.value.code in ("UNAVAILABLE", "DEADLINE_EXCEEDED")
    assert "is the daemon running" in str(ei.value) or "did not answer" in str(ei.value)


def test_prod_runs_four_jobs_at_once_with_colliding_ids(daemon: Daemon,
                                                       workload: Workload) -> None:
    prod = load_profiles("refprover", ['prod.job_ids="fixed"'])["prod"]
    events: list[ProgressEvent] = []
    with daemon() as addr, progress.reporting(events.append):
        flow = _flow(addr, workload, plan_workload(prod, workload), prod.concurrency,
                     profile="prod")
    # the flow's progress: one quiet task of prod's proofs, each answer counted once
    assert {(e.topic, e.name, e.total, e.quiet) for e in events} == {
        ("proofs", "[prod] workload", 4, True)}
    assert [e.kind for e in events] == ["start", "advance", "advance", "advance", "advance",
                                        "end"]
    assert [e.done for e in events] == [0, 1, 2, 3, 4, 4] and events[-1].ok
    assert [j.job for j in flow.jobs] == ["wpost-0", "wpost-1", "wpost-2", "wpost-3"]
    assert {j.request_id for j in flow.jobs} == {"proofdiff-fixed"}  # one id for all four
    assert all(j.status is JobStatus.COMPLETED and len(j.proof) == 384 for j in flow.jobs)
    assert len({j.proof for j in flow.jobs}) == 4  # each job got its own proof back
    assert _overlap(flow)  # concurrency 4 really overlapped
    assert all(j.timings.total_ms > 0 and j.wall_ms >= j.timings.total_ms for j in flow.jobs)


def test_bench_is_one_at_a_time_with_fresh_uuids(daemon: Daemon, workload: Workload) -> None:
    bench = replace(load_profiles("refprover")["bench"], jobs=2)
    with daemon(BENCH_CONFIG) as addr:
        flow = _flow(addr, workload, plan_workload(bench, workload), 1)
    ids = [j.request_id for j in flow.jobs]
    assert len(set(ids)) == 2 and all(uuid.UUID(i).version == 4 for i in ids)
    assert all(j.status is JobStatus.COMPLETED for j in flow.jobs) and not _overlap(flow)


def test_bad_input_comes_back_failed_with_the_daemons_reason(daemon: Daemon, artifacts: Any,
                                                             tmp_path: Path) -> None:
    doc = json.loads(Path(artifacts.workloads["wpost-2k"]).read_text())
    doc["jobs"] = doc["jobs"][:1]
    doc["jobs"][0]["vanilla_proofs"][0] = base64.b64encode(b"not a vanilla proof").decode()
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(doc))
    wl = load_workload(bad)
    with daemon() as addr:
        (j,) = _flow(addr, wl, [JobSpec(index=0, job="wpost-0")], 1).jobs
    assert j.status is JobStatus.FAILED and j.proof == b""
    assert "vanilla proof 0 is not a bincode FallbackPoStSectorProof" in j.error


def test_a_wedged_daemon_that_claims_work_in_progress_is_stalled_long_before_its_deadline(
        started: Callable[..., AbstractContextManager[RunningDaemon]],
        one_partition_jobs: Workload) -> None:
    """queue-deadlock: jobs submitted while 2 are unfinished are accepted and never answered,
    and the daemon goes on counting them in cuzk_running_jobs (a claim of work in progress).
    The guard gives up from its own observations, long before the flow's 630 s deadline: the
    jobs come back STUCK (the stall rule), not LOST (the deadline). One partition a job: the
    rule's wait scales with the longest proof seen, so cheaper proofs make it shorter."""
    workload = one_partition_jobs
    specs = [JobSpec(index=i, job=j.name) for i, j in enumerate(workload.jobs)]
    deadlines = Deadlines(job_s=600.0, stall_s=3.0)
    # one worker: the two accepted jobs are proved one after the other, the other two parked
    # (so that later requests are parked at once too: 2 stay unfinished)
    with started(process_profile(BENCH_CONFIG, faults="queue-deadlock")) as d:
        clock = AnswerClock()
        flow = _flow(d.address, workload, specs, 4, deadlines, clock=clock)
        # the same wedged daemon, a request that is parked at once, and nothing yet that says
        # how long its proofs take (a fresh clock): its idle CPU gives it away
        idle = _flow(d.address, workload, specs[:1], 1, deadlines, clock=AnswerClock(),
                     cpu=d.sampler.latest if d.sampler else None)
    stuck = flow.stuck()
    assert len(stuck) == 2 and sum(j.completed for j in flow.jobs) == 2, flow
    assert clock.longest_s is not None
    limit = 6 * 2 * clock.longest_s  # STALL_FACTOR x 2 waiting x the longest proof it took
    assert flow.stall.startswith("no answer for ") and \
        f"longer than 6 x 2 x the longest proof this daemon took ({clock.longest_s:.1f} s) = " \
        f"{max(3.0, limit):.0f} s" in flow.stall, flow.stall
    assert "cuzk_running_jobs 2" in flow.stall  # what it claimed meanwhile, quoted, not believed
    assert all(j.error.endswith(flow.stall) for j in stuck)
    (parked,) = idle.jobs
    assert parked.status is JobStatus.STUCK, parked
    assert idle.stall.startswith("no answer for ") and "and its process used under 0.05 CPU " \
        "cores for the last " in idle.stall and idle.stall.count("it proves nothing") == 1, \
        idle.stall


def test_a_job_past_its_deadline_is_lost_with_the_deadline_named(daemon: Daemon,
                                                                 workload: Workload) -> None:
    specs = [JobSpec(index=i, job=j.name) for i, j in enumerate(workload.jobs)]
    with daemon(faults="queue-deadlock") as addr:
        flow = _flow(addr, workload, specs, 4, Deadlines(job_s=3.0, stall_s=600.0))
    # the two jobs that arrive while two are unfinished are parked and never answered: LOST at
    # the deadline, named, also when the daemon's own gRPC server ended the call at that
    # deadline (tonic answers CANCELLED "Timeout expired"): never an ERROR of the daemon
    lost = [j for j in flow.jobs if j.status is JobStatus.LOST]
    assert len(lost) >= 2 and all("DEADLINE_EXCEEDED" in j.error for j in lost), "\n".join(
        f"{j.status.value}: {j.error}" for j in flow.jobs)
    assert all(j.status in (JobStatus.LOST, JobStatus.COMPLETED) for j in flow.jobs), "\n".join(
        f"{j.status.value}: {j.error}" for j in flow.jobs)
