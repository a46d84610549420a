"""Request flows for the isolation oracle, with a hang guard on every wait.

Flows (SubmitProof / AwaitProof, DESIGN.md section 3), on ``k`` distinct workload inputs:

* ``burst``: all ``k`` jobs submitted together. Slots 0 and 1 share ONE request id (colliding
  ids, distinct inputs, as curio retries make them); the other slots get unique ids. Unique ids
  are awaited concurrently; the shared id is awaited twice, one after the other (cuzk's
  AwaitProof hands out one unclaimed job per call), then once more, which must answer
  ``NOT_FOUND`` (nothing is returned twice).
* ``reuse``: once the burst is answered, the id of slot 2 is submitted again with slot 3's
  inputs; the answer must be the proof of the NEW inputs.

Hang guard: every AwaitProof is sliced (server ``timeout_ms`` = ``slice_s``, client deadline a
little longer) and the whole flow has a deadline; a watchdog polls ``GetStatus`` and declares
the daemon stuck when jobs are outstanding but it reports nothing pending or in progress (or
does not answer) for ``stall_s`` seconds. Stuck jobs come back ``LOST`` with their ids named.
"""

from __future__ import annotations

import concurrent.futures as cf
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .client import ClientError, ProverClient
from .hang_guard import Guard, guarded
from .proto import cuzk_pb2
from .records import JobStatus
from .workload import Workload, build_request

__all__ = ["IsoJob", "IsolationRun", "run_isolation"]

_STATUS = {cuzk_pb2.AwaitProofResponse.COMPLETED: JobStatus.COMPLETED,
           cuzk_pb2.AwaitProofResponse.FAILED: JobStatus.FAILED,
           cuzk_pb2.AwaitProofResponse.CANCELLED: JobStatus.CANCELLED}


@dataclass(frozen=True)
class IsoJob:
    """One submitted job of a flow: ``flow`` (burst | reuse), ``slot``, the ``request_id`` sent,
    the workload job (``input``) whose public inputs were sent, and the answer (status, proof,
    error, ``job_id``, ``wall_ms`` from submit to answer, daemon ``total_ms``)."""

    flow: str
    slot: int
    request_id: str
    input: str
    status: JobStatus
    job_id: str = ""
    proof: bytes = b""
    error: str = ""
    wall_ms: float = 0.0
    total_ms: int = 0

    @property
    def key(self) -> str:
        """``flow:slot``, unique in a run."""
        return f"{self.flow}:{self.slot}"

    def to_json(self) -> dict[str, Any]:
        """JSON-ready dict (proof as hex)."""
        return {"flow": self.flow, "slot": self.slot, "request_id": self.request_id,
                "input": self.input, "status": self.status.value, "job_id": self.job_id,
                "proof": self.proof.hex(), "error": self.error, "wall_ms": round(self.wall_ms, 3),
                "total_ms": self.total_ms}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> IsoJob:
        """Inverse of :meth:`to_json`."""
        return cls(d["flow"], int(d["slot"]), d["request_id"], d["input"],
                   JobStatus(d["status"]), d.get("job_id", ""), bytes.fromhex(d.get("proof", "")),
                   d.get("error", ""), float(d.get("wall_ms", 0)), int(d.get("total_ms", 0)))


@dataclass(frozen=True)
class IsolationRun:
    """All flows on one daemon: the jobs (the shared-id answers are in answer order, their
    ``input`` is the one SENT in that slot, not necessarily the one answered), what the extra
    AwaitProof of the shared id returned (``extra_await``), the stall reason ('' when none), the
    ids of stuck jobs, and errors. ``wall_ms``: the whole flow set, ms."""

    profile: str
    workload: str
    partitions: int
    jobs: tuple[IsoJob, ...]
    dup_id: str = ""
    extra_await: str = ""
    stall: str = ""
    stuck_ids: tuple[str, ...] = ()
    errors: tuple[str, ...] = ()
    wall_ms: float = 0.0
    verdicts: dict[str, dict[str, bool]] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """JSON-ready dict."""
        return {"profile": self.profile, "workload": self.workload, "partitions": self.partitions,
                "jobs": [j.to_json() for j in self.jobs], "dup_id": self.dup_id,
                "extra_await": self.extra_await, "stall": self.stall,
                "stuck_ids": list(self.stuck_ids), "errors": list(self.errors),
                "wall_ms": round(self.wall_ms, 3), "verdicts": self.verdicts}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> IsolationRun:
        """Inverse of :meth:`to_json`."""
        return cls(d["profile"], d["workload"], int(d["partitions"]),
                   tuple(IsoJob.from_json(j) for j in d["jobs"]), d.get("dup_id", ""),
                   d.get("extra_await", ""), d.get("stall", ""), tuple(d.get("stuck_ids", [])),
                   tuple(d.get("errors", [])), float(d.get("wall_ms", 0)),
                   {k: dict(v) for k, v in (d.get("verdicts") or {}).items()})


def _await(client: ProverClient, rid: str, guard: Guard,
           slice_s: float) -> tuple[JobStatus, Any, str]:
    """AwaitProof in slices until an answer, NOT_FOUND, or the guard trips."""
    while not guard.expired():
        try:
            resp = client.await_proof(rid, timeout_s=slice_s + 10.0,
                                      server_timeout_ms=int(slice_s * 1000))
        except ClientError as exc:
            if exc.code == "NOT_FOUND":
                return JobStatus.LOST, None, f"AwaitProof({rid!r}): NOT_FOUND: {exc.details}"
            if exc.code == "DEADLINE_EXCEEDED":
                continue  # a daemon that ignores timeout_ms: the guard bounds us
            return JobStatus.ERROR, None, str(exc)
        if resp.status == cuzk_pb2.AwaitProofResponse.TIMEOUT:
            continue
        return _STATUS.get(resp.status, JobStatus.UNKNOWN), resp, resp.error_message
    return JobStatus.LOST, None, f"stuck: no answer for id {rid!r} ({guard.reason})"


def _job(flow: str, slot: int, rid: str, inp: str, t0: float,
         res: tuple[JobStatus, Any, str]) -> IsoJob:
    status, resp, err = res
    return IsoJob(flow, slot, rid, inp, status, resp.job_id if resp else "",
                  bytes(resp.proof) if resp else b"", err, (time.monotonic() - t0) * 1000,
                  resp.total_ms if resp else 0)


def run_isolation(address: str, workload: Workload, *, profile: str, k: int = 4,
                  timeout_s: float = 600.0, stall_s: float = 15.0, poll_s: float = 0.5,
                  slice_s: float = 2.0, log: Callable[[str], None] | None = None) -> IsolationRun:
    """Run the burst and reuse flows (module docstring) on the daemon at ``address``.

    Args:
        address: ``127.0.0.1:PORT``. workload: needs >= 2 jobs (distinct inputs); ``k`` of them
            are used (default 4). profile: label for records.
        timeout_s: deadline of all flows together, seconds (default 600). stall_s: a daemon idle
            with jobs waiting for this long is stuck (default 15 s). poll_s: GetStatus period
            (0.5 s). slice_s: server-side AwaitProof slice (2 s).

    Returns:
        The :class:`IsolationRun`; never raises for a job's failure or a stuck daemon.
    """
    inputs = list(workload.jobs[:max(2, k)])
    if len(inputs) < 2:
        return IsolationRun(profile, workload.name, workload.partitions, (), errors=(
            f"isolation needs >= 2 distinct inputs; workload {workload.name} has "
            f"{len(workload.jobs)}",))
    token = secrets.token_hex(3)
    dup = f"iso-{token}-dup"
    rids = [dup, dup] + [f"iso-{token}-u{i}" for i in range(2, len(inputs))]
    t_all = time.monotonic()
    jobs: list[IsoJob] = []
    extra = ""
    with ProverClient(address, default_timeout_s=30.0) as client, \
            guarded(address, deadline_s=timeout_s, stall_s=stall_s, poll_s=poll_s) as guard:
        t0 = time.monotonic()

        def submit(i: int, rid: str) -> str:
            try:
                client.submit(build_request(workload, inputs[i], rid), timeout_s=30.0)
                return ""
            except ClientError as exc:
                return f"SubmitProof failed: {exc}"

        guard.add(len(inputs))
        with cf.ThreadPoolExecutor(len(inputs), thread_name_prefix="iso-submit") as ex:
            sub_err = list(ex.map(submit, range(len(inputs)), rids))

        def answer(i: int) -> IsoJob:
            res = _await(client, rids[i], guard, slice_s)
            guard.done()
            return _job("burst", i, rids[i], inputs[i].name, t0, res)

        with cf.ThreadPoolExecutor(len(inputs), thread_name_prefix="iso-await") as ex:
            def answers(slots: tuple[int, ...]) -> list[IsoJob]:
                return [answer(i) for i in slots]  # one after the other (shared id)

            futs = [ex.submit(answers, (0, 1))]
            futs += [ex.submit(answers, (i,)) for i in range(2, len(inputs))]
            for fut in futs:
                jobs += fut.result()
        jobs = [j if not sub_err[j.slot] else IsoJob(
            "burst", j.slot, j.request_id, j.input, JobStatus.ERROR, error=sub_err[j.slot])
            for j in jobs]
        if not guard.tripped:
            try:
                resp = client.await_proof(dup, timeout_s=slice_s + 10.0,
                                          server_timeout_ms=int(slice_s * 1000))
                extra = (f"{cuzk_pb2.AwaitProofResponse.Status.Name(resp.status)} "
                         f"job_id={resp.job_id!r} proof={len(resp.proof)} B")
            except ClientError as exc:
                extra = exc.code
        if not guard.tripped and len(inputs) >= 4:
            t0 = time.monotonic()
            guard.add()
            err = submit(3, rids[2])
            res = (JobStatus.ERROR, None, err) if err else _await(client, rids[2], guard, slice_s)
            guard.done()
            jobs.append(_job("reuse", 0, rids[2], inputs[3].name, t0, res))
        reason = guard.reason
    stuck = tuple(dict.fromkeys(j.request_id for j in jobs if j.error.startswith("stuck:")))
    if log:
        log(f"[{profile}] isolation: {len(jobs)} jobs in {time.monotonic() - t_all:.1f} s"
            + (f"; STUCK ids {list(stuck)}: {reason}" if stuck else ""))
    return IsolationRun(profile, workload.name, workload.partitions, tuple(jobs), dup, extra,
                        reason if stuck else "", stuck, wall_ms=(time.monotonic() - t_all) * 1000)
