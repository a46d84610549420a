"""The isolation flows (SubmitProof / AwaitProof through the grpc driver) and the jobs-in-progress
measure against real refprover daemons run on the host; faults via REFPROVER_FAULTS."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import msgspec
import pytest

from proofdiff.drivers.protocol import Mode
from proofdiff.drivers.deadlines import Deadlines
from proofdiff.drivers.flow import prove_many
from proofdiff.drivers.grpc_driver import GrpcDriver
from proofdiff.model.jobs import FlowRecord, JobRecord, JobSpec
from proofdiff.model.status import JobStatus
from proofdiff.model.workload import Workload
from proofdiff.model.choices import Runtime
from proofdiff.runtime.daemon import Daemon as RunningDaemon
from proofdiff.runtime.runner import Runner
from proofdiff.stats.concurrency import in_progress_of
from proofdiff.verify.served_verifier import ServedVerifier
from proofdiff.verify.tool_verifier import (ToolVerifier, VerifyError, attach_verdicts, job_items,
                                            verify_item)
from proofdiff.verify.verify_ahead import VerifyAhead, verified
from tests.host.conftest import process_profile

Daemon = Callable[..., AbstractContextManager[str]]
DUP = "iso-test-dup"


def _burst(workload: Workload) -> list[JobSpec]:
    rids = [DUP, DUP, "iso-test-u2", "iso-test-u3"]
    specs = [JobSpec(index=i, job=j.name, request_id=r)
             for i, (j, r) in enumerate(zip(workload.jobs, rids))]
    return specs + [JobSpec(index=4, job="wpost-0", request_id=DUP, await_only=True)]


def test_submit_await_on_a_clean_pipelined_daemon(daemon: Daemon, workload: Workload,
                                                 runner: Runner, artifacts: Any) -> None:
    served = ServedVerifier(runner, "verify", artifacts.param_cache, profile="host")
    told: list[Any] = []

    def send(on_answer: Any) -> FlowRecord:
        told.append(on_answer)
        return prove_many(GrpcDriver(addr), addr, workload, _burst(workload), name="burst",
                          concurrency=5, mode=Mode.SUBMIT_AWAIT,
                          deadlines=Deadlines(job_s=120.0, stall_s=10.0), log=lambda _l: None,
                          on_answer=on_answer)
    with daemon() as addr:
        flow = verified(send, served, workload)  # as every flow of a session is sent
    # each proof went to the verifier as its job was answered, and the flow's verdicts are
    # those of one batch after the flow
    (on_answer,) = told
    ahead = on_answer.__self__
    assert isinstance(ahead, VerifyAhead) and (ahead.early, ahead.late) == (4, 0)
    assert all(j.verdict is not None for j in flow.jobs[:4])
    assert flow == attach_verdicts(msgspec.structs.replace(flow, jobs=tuple(
        msgspec.structs.replace(j, verdict=None) for j in flow.jobs)), workload, served)
    jobs = {j.index: j for j in flow.jobs}
    assert all(jobs[i].status is JobStatus.COMPLETED and len(jobs[i].proof) == 384 for i in range(4))
    assert len({jobs[i].proof for i in range(4)}) == 4  # colliding ids, distinct proofs
    assert jobs[0].request_id == jobs[1].request_id == DUP
    extra = jobs[4]
    assert extra.await_only and extra.status is JobStatus.LOST and "NOT_FOUND" in extra.error
    assert not flow.stall
    # the run's one `verify --serve`: per proof and per partition verdicts, batch after batch,
    # a malformed proof's error its own; the same verdicts as `verify --input`
    items = [verify_item(workload.job(jobs[i].job), str(i), jobs[i].proof) for i in range(4)]
    other = workload.job(jobs[1].job)
    bad = [{**verify_item(workload.job(jobs[0].job), "not-hex", b""), "proof": "zz"},
           verify_item(other, "truncated", jobs[1].proof[:200]),
           verify_item(other, "someone-else's", jobs[0].proof)]
    first, second = served.verify(items[:2]), served.verify([*items[2:], *bad])
    assert served.starts == 1 and served.fallback is None
    got = {**first, **second}
    assert all(got[str(i)].valid and got[str(i)].partitions == (True, True) for i in range(4))
    assert not got["not-hex"].valid and "not hex" in (got["not-hex"].error or "")
    assert not got["truncated"].valid
    assert got["someone-else's"].partitions == (False, False) and not got["someone-else's"].valid
    once = ToolVerifier(runner, "verify", artifacts.param_cache, runtime=Runtime.PROCESS)
    assert once.verify([*items, *bad]) == got
    served.close()


def test_the_await_only_probe_asks_for_the_ids_a_per_partition_job_went_out_as(
        daemon: Daemon, workload: Workload) -> None:
    """A cuzk daemon is sent a WindowPoSt job per partition (ids ``<id>-p<k>``), so the
    probe that awaits the shared id once more after both answers asks for those ids: an
    ``AwaitProof`` of the bare id asks about an id the daemon was never sent, and its
    NOT_FOUND says nothing (on cuzk-daemon, which keeps answered jobs, the partition ids are
    answered again)."""
    specs = [JobSpec(index=0, job="wpost-0", request_id=DUP),
             JobSpec(index=1, job="wpost-1", request_id=DUP),
             JobSpec(index=2, job="wpost-0", request_id=DUP, await_only=True)]
    with daemon() as addr:
        flow = prove_many(GrpcDriver(addr, per_partition=True), addr, workload, specs,
                          name="burst", concurrency=3, mode=Mode.SUBMIT_AWAIT,
                          deadlines=Deadlines(job_s=120.0, stall_s=10.0), log=lambda _l: None)
    jobs = {j.index: j for j in flow.jobs}
    assert jobs[0].job_id == jobs[1].job_id == f"{DUP}-p0,{DUP}-p1"
    probe = jobs[2]
    assert probe.await_only and probe.status is JobStatus.LOST and probe.request_id == DUP
    assert f"AwaitProof('{DUP}-p0'): NOT_FOUND" in probe.error
    assert f"AwaitProof('{DUP}-p1'): NOT_FOUND" in probe.error


def test_a_verifier_that_fails_early_fails_the_flow_where_it_always_did(
        runner: Runner, workload: Workload, tmp_path: Path) -> None:
    """An early batch that failed is asked again at the flow's end, so the error is raised
    there, as from a batch after the flow: never lost, never a proof left without a verdict."""
    broken = ServedVerifier(runner, "/bin/false", tmp_path, profile="host", timeout_s=10.0)
    ahead = VerifyAhead(broken, workload)
    job = workload.jobs[0]
    record = JobRecord(index=0, job=job.name, request_id="r0", status=JobStatus.COMPLETED,
                       proof=b"\1" * job.shape.proof_bytes)
    ahead.answered(record)
    assert ahead.early == 1
    with pytest.raises(VerifyError, match="exited with code 1"):
        ahead.verify(job_items(record, workload))
    assert ahead.late == 1
    ahead.close()


def test_queue_deadlock_names_the_stuck_ids(
        started: Callable[..., AbstractContextManager[RunningDaemon]], workload: Workload) -> None:
    with started(process_profile(faults="queue-deadlock")) as d:
        flow = prove_many(GrpcDriver(d.address), d.address, workload, _burst(workload),
                          name="burst", concurrency=5, mode=Mode.SUBMIT_AWAIT,
                          deadlines=Deadlines(job_s=300.0, stall_s=3.0), log=lambda _l: None,
                          cpu=d.sampler.latest if d.sampler else None)
    # four submitted together: two accepted and proved, two parked (which two depends on
    # arrival order); the parked ones come back STUCK with the guard's reason: once the two
    # were answered, the process proved nothing (the runtime's CPU samples)
    stuck = flow.stuck()
    assert len(stuck) == 2 and sum(j.completed for j in flow.jobs if not j.await_only) == 2, flow
    assert flow.stall.startswith("no answer for ") and "it proves nothing" in flow.stall
    assert all(j.error.endswith(flow.stall) for j in stuck)


def test_jobs_in_progress_is_one_under_serialize_pipeline(daemon: Daemon,
                                                          workload: Workload) -> None:
    specs = [JobSpec(index=i, job=workload.jobs[i].name) for i in range(3)]
    runs = {}
    for faults in ("serialize-pipeline", ""):
        with daemon(faults=faults) as addr:
            runs[faults] = prove_many(GrpcDriver(addr), addr, workload, specs, name="timing",
                                      concurrency=3, deadlines=Deadlines(job_s=120.0),
                                      log=lambda _l: None)
    serial, clean = runs["serialize-pipeline"], runs[""]
    assert len(serial.completed()) == len(clean.completed()) == 3
    assert max(in_progress_of(serial.jobs)) < 1.1, in_progress_of(serial.jobs)
    assert max(in_progress_of(clean.jobs)) > 1.0, in_progress_of(clean.jobs)  # any overlap
