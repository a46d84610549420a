"""Timing samples drawn from live daemons, interleaved, with the hang guard on every wait.

A *batch* is ``n`` proofs of the workload (fresh UUID request ids, inputs cycling through the
workload's jobs) sent with ``Prove`` at a given concurrency; it yields per-job latencies, its
per-proof cost (batch wall / n: the inverse of throughput at that concurrency) and, from the
daemon's own ``queue_wait_ms`` / ``total_ms``, how many jobs the daemon was really proving at
once (:func:`in_progress`). A *round* runs one batch per side in turn (A B A B ...), so every
side sees the same machine conditions; an A/A arm is two sides on the same daemon.
"""

from __future__ import annotations

import concurrent.futures as cf
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .client import ClientError, ProverClient
from .hang_guard import guarded
from .proto import cuzk_pb2
from .records import JobStatus
from .workload import Workload, build_request

__all__ = ["Batch", "JobTiming", "Side", "Sampling", "in_progress", "run_batch", "run_rounds"]


@dataclass(frozen=True)
class JobTiming:
    """One proof of a batch: request id, status, ``start_s`` (client time of the call, s since
    an arbitrary epoch shared by the batch), client ``wall_ms`` and the daemon's
    ``queue_wait_ms``, ``total_ms``, ``srs_load_ms``; ``error`` when not COMPLETED."""

    request_id: str
    status: str
    start_s: float
    wall_ms: float
    queue_wait_ms: int = 0
    total_ms: int = 0
    srs_load_ms: int = 0
    error: str = ""


@dataclass(frozen=True)
class Batch:
    """One batch on one side: ``side`` label, ``round``, ``concurrency``, its jobs, its
    ``wall_ms``; ``stuck`` names the request ids the hang guard gave up on, with ``why``."""

    side: str
    round: int
    concurrency: int
    jobs: tuple[JobTiming, ...]
    wall_ms: float
    stuck: tuple[str, ...] = ()
    why: str = ""

    @property
    def ok(self) -> bool:
        """Every job COMPLETED."""
        return bool(self.jobs) and all(j.status == "COMPLETED" for j in self.jobs)

    @property
    def cost_ms(self) -> float:
        """Per-proof cost: batch wall / proofs, ms (throughput = 60000 / cost proofs/min)."""
        return self.wall_ms / max(1, len(self.jobs))

    def to_json(self) -> dict[str, Any]:
        """JSON-ready dict."""
        return {"side": self.side, "round": self.round, "concurrency": self.concurrency,
                "wall_ms": round(self.wall_ms, 3), "stuck": list(self.stuck), "why": self.why,
                "jobs": [j.__dict__ for j in self.jobs]}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Batch:
        """Inverse of :meth:`to_json`."""
        return cls(d["side"], int(d["round"]), int(d["concurrency"]),
                   tuple(JobTiming(**j) for j in d["jobs"]), float(d["wall_ms"]),
                   tuple(d.get("stuck", ())), d.get("why", ""))


def in_progress(jobs: Sequence[tuple[float, float, float]]) -> list[float]:
    """Per job, how many jobs (itself included) the daemon was proving on average during its
    own proving interval: ``[start + queue_wait, start + total]`` from ``(start_s,
    queue_wait_ms, total_ms)``. 1.0 = alone; a daemon that runs jobs one at a time gives 1.0
    to every job whatever the concurrency it was offered."""
    iv = [(s + q / 1000.0, s + max(q, t) / 1000.0) for s, q, t in jobs]
    out = []
    for a0, a1 in iv:
        span = a1 - a0
        if span <= 0:
            out.append(1.0)
            continue
        covered = sum(max(0.0, min(a1, b1) - max(a0, b0)) for b0, b1 in iv)
        out.append(max(1.0, covered / span))
    return out


def run_batch(address: str, workload: Workload, *, side: str, rnd: int, n: int,
              concurrency: int, offset: int = 0, timeout_s: float = 600.0,
              stall_s: float = 15.0) -> Batch:
    """``n`` proofs at ``concurrency`` on ``address``; never raises for a job's failure.

    Deadline: every call has ``timeout_s`` (default 600) and the batch ``ceil(n / concurrency)
    x timeout_s``; a daemon idle with proofs outstanding for ``stall_s`` s (default 15) ends
    the batch and the unanswered ids are listed as stuck.
    """
    jobs = [workload.jobs[(offset + i) % len(workload.jobs)] for i in range(n)]
    rounds = -(-n // max(1, concurrency))
    t_epoch = time.monotonic()
    with ProverClient(address, default_timeout_s=timeout_s) as client, \
            guarded(address, deadline_s=rounds * timeout_s, stall_s=stall_s) as guard:
        def one(job_i: int) -> JobTiming:
            rid = str(uuid.uuid4())
            fut_t0 = time.monotonic()
            guard.add()
            # the call runs on its own thread so this one can watch the guard; a call given
            # up on is cancelled when the channel closes at the end of the batch
            ex = cf.ThreadPoolExecutor(1, thread_name_prefix=f"timing-{side}-call")
            try:
                fut = ex.submit(client.prove, build_request(workload, jobs[job_i], rid),
                                timeout_s)
                while True:
                    try:
                        resp = fut.result(timeout=0.5)
                        break
                    except cf.TimeoutError:
                        if guard.expired():
                            return JobTiming(rid, JobStatus.LOST.value, fut_t0 - t_epoch,
                                             (time.monotonic() - fut_t0) * 1000,
                                             error=f"stuck: {guard.reason}")
            except ClientError as exc:
                return JobTiming(rid, JobStatus.ERROR.value, fut_t0 - t_epoch,
                                 (time.monotonic() - fut_t0) * 1000, error=str(exc))
            finally:
                guard.done()
                ex.shutdown(wait=False)
            status = cuzk_pb2.AwaitProofResponse.Status.Name(resp.status)
            return JobTiming(rid, status, fut_t0 - t_epoch, (time.monotonic() - fut_t0) * 1000,
                             resp.queue_wait_ms, resp.total_ms, resp.srs_load_ms,
                             resp.error_message)

        t0 = time.monotonic()
        pool = cf.ThreadPoolExecutor(max(1, concurrency), thread_name_prefix=f"timing-{side}")
        try:
            out = list(pool.map(one, range(n)))
        finally:
            pool.shutdown(wait=False, cancel_futures=True)
        wall = (time.monotonic() - t0) * 1000
        why = guard.reason if guard.tripped else ""
    stuck = tuple(j.request_id for j in out if j.error.startswith("stuck:"))
    return Batch(side, rnd, concurrency, tuple(out), wall, stuck, why)


@dataclass(frozen=True)
class Side:
    """One side of a comparison: its label, daemon address, batch size and concurrency."""

    label: str
    address: str
    n: int
    concurrency: int
    timeout_s: float = 600.0


@dataclass
class Sampling:
    """Batches of every side so far (all rounds), plus why sampling stopped early ('') and on
    which side's batch (its label)."""

    batches: list[Batch] = field(default_factory=list)
    stopped: str = ""
    stopped_side: str = ""

    def of(self, side: str) -> list[Batch]:
        """Batches of ``side`` that completed fully."""
        return [b for b in self.batches if b.side == side and b.ok]

    def costs(self, side: str) -> list[float]:
        """Per-proof cost samples (ms), one per batch."""
        return [b.cost_ms for b in self.of(side)]

    def latencies(self, side: str) -> list[float]:
        """Per-job client latency samples (ms)."""
        return [j.wall_ms for b in self.of(side) for j in b.jobs]

    def concurrency(self, side: str) -> list[float]:
        """Per-job in-progress concurrency samples (see :func:`in_progress`)."""
        return [c for b in self.of(side) for c in in_progress(
            [(j.start_s, j.queue_wait_ms, j.total_ms) for j in b.jobs])]

    @property
    def rounds(self) -> int:
        """Rounds run so far."""
        return 1 + max((b.round for b in self.batches), default=-1)

    def to_json(self) -> dict[str, Any]:
        """JSON-ready dict."""
        return {"batches": [b.to_json() for b in self.batches], "stopped": self.stopped,
                "stopped_side": self.stopped_side}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Sampling:
        """Inverse of :meth:`to_json`."""
        return cls([Batch.from_json(b) for b in d["batches"]], d.get("stopped", ""),
                   d.get("stopped_side", ""))


def run_rounds(workload: Workload, sides: Sequence[Side], *, initial: int, budget: int,
               done: Callable[[Sampling], bool], stall_s: float = 15.0,
               log: Callable[[str], None] | None = None) -> Sampling:
    """Rounds of one batch per side, in the order given, until ``done(sampling)`` after at least
    ``initial`` rounds, or ``budget`` rounds. A batch with stuck or failed jobs stops sampling
    (``stopped`` says why): timing a broken daemon measures nothing."""
    s = Sampling()
    for rnd in range(budget):
        for side in sides:
            b = run_batch(side.address, workload, side=side.label, rnd=rnd, n=side.n,
                          concurrency=side.concurrency, offset=rnd * side.n,
                          timeout_s=side.timeout_s, stall_s=stall_s)
            s.batches.append(b)
            if log:
                log(f"timing round {rnd} {side.label}: {len(b.jobs)} proofs in "
                    f"{b.wall_ms:.0f} ms" + ("" if b.ok else " (NOT all completed)"))
            if not b.ok:
                bad = [f"{j.request_id} {j.status}: {j.error}" for j in b.jobs
                       if j.status != "COMPLETED"]
                s.stopped_side = side.label
                s.stopped = (f"side {side.label} round {rnd}: " + (
                    f"stuck ids {list(b.stuck)} ({b.why})" if b.stuck else "; ".join(bad[:3])))
                return s
        if rnd + 1 >= initial and done(s):
            break
    return s
