"""Verifying a flow's proofs while the flow is still in flight.

Verified in one batch once a flow's last job is answered, the proofs would make the run's main
thread wait for the verifier between one flow and the next. :class:`VerifyAhead` sends each proof to the verifier as
its job is answered, on one thread of its own, while the rest of the flow proves; at the
flow's end :func:`~proofdiff.verify.tool_verifier.attach_verdicts` finds those verdicts made
and asks only for the rest. Verdicts are the verifier's own, item for item: the same item (its
id, public inputs and proof) gets the same verdict whenever it is asked.

Only where a batch is cheap: one ``verify --serve`` process
(:class:`~proofdiff.verify.served_verifier.ServedVerifier`, a small fraction of one core
beside the proof's own time). A verifier container per batch
(the docker runtime) would start one container per proof: there the flow's batch stays one.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import CancelledError, Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any

import msgspec

from proofdiff.model.jobs import FlowRecord, JobRecord, ProofVerdict
from proofdiff.model.workload import Workload
from proofdiff.verify.served_verifier import ServedVerifier
from proofdiff.verify.tool_verifier import Verifier, VerifyError, attach_verdicts, job_items

__all__ = ["VerifyAhead", "ahead_of", "verified"]

#: ``send(on_answer)``: a flow sent with its answers told to ``on_answer`` (or to nobody)
Send = Callable[[Callable[[JobRecord], None] | None], FlowRecord]


class VerifyAhead:
    """A :class:`~proofdiff.verify.tool_verifier.Verifier` over ``inner`` whose verdicts can
    be asked for early, for one flow.

    :meth:`answered` queues a job's items (its proof against its own inputs and, for a
    ``cross`` flow, against every job of ``names``) on one worker thread; :meth:`verify` takes
    the verdicts of items asked for before (waiting for those in flight) and asks ``inner`` for
    the others in one batch. An early batch that failed (or is later than ``timeout_s``, the
    verifier's deadline, per batch queued) is asked again there, so a verifier error is raised
    where it was before (:meth:`verify`), never lost. :meth:`close` ends the worker (queued
    batches not started are dropped).
    """

    def __init__(self, inner: Verifier, workload: Workload, names: Sequence[str] = (), *,
                 timeout_s: float = 300.0) -> None:
        self.inner, self.workload, self.names = inner, workload, list(names)
        self.timeout_s = timeout_s
        #: items queued while the flow went on, and items asked for at its end
        self.early = self.late = 0
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="proofdiff-verify-ahead")
        self._asked: dict[bytes, tuple[str, Future[dict[str, ProofVerdict]]]] = {}
        self._lock = threading.Lock()

    def answered(self, job: JobRecord) -> None:
        """``job`` was answered: queue its proof's items, if it has a whole proof (any thread).
        A driver that sends each partition as a request of its own shows each partition's
        answer: those parts are verified as one job's proof, at the flow's end."""
        if not (job.completed and job.proof) or (
                len(job.proof) != self.workload.job(job.job).shape.proof_bytes):
            return
        items = job_items(job, self.workload, self.names)
        try:
            future = self._pool.submit(self.inner.verify, items)
        except RuntimeError:  # closed: the flow has ended, and its end asks for every item
            return
        with self._lock:  # driver threads answer at once
            self.early += len(items)
            self._asked.update({_key(item): (item["id"], future) for item in items})

    def verify(self, items: Sequence[dict[str, Any]]) -> dict[str, ProofVerdict]:
        """Verdicts keyed by item ``id``, every id of ``items`` included.

        Raises:
            VerifyError: ``inner`` could give no verdicts for the items not verified early,
                or for those whose early batch failed.
        """
        got: dict[str, ProofVerdict] = {}
        rest = []
        # each early batch waits behind those before it, each within the verifier's deadline
        wait_s = self.timeout_s * (len({id(f) for _, f in self._asked.values()}) + 1)
        for item in items:
            asked = self._asked.get(_key(item))
            verdict = _result(asked[1], wait_s).get(asked[0]) if asked is not None else None
            if verdict is None:
                rest.append(item)
            else:
                got[item["id"]] = verdict
        self.late += len(rest)
        return {**got, **(self.inner.verify(rest) if rest else {})}

    def close(self) -> None:
        """End the worker thread; batches still queued are dropped (idempotent)."""
        self._pool.shutdown(wait=False, cancel_futures=True)


def ahead_of(verifier: Verifier, workload: Workload,
             names: Sequence[str] = ()) -> VerifyAhead | None:
    """A :class:`VerifyAhead` over ``verifier`` where early batches are cheap (a served
    verifier with ``--serve``), else ``None`` (module docstring)."""
    if isinstance(verifier, ServedVerifier) and verifier.fallback is None:
        return VerifyAhead(verifier, workload, names, timeout_s=verifier.timeout_s)
    return None


def verified(send: Send, verifier: Verifier, workload: Workload, *,
             cross: bool = False, names: Sequence[str] = (), ahead: bool = True) -> FlowRecord:
    """``send``'s flow with every proof's verdict attached
    (:func:`~proofdiff.verify.tool_verifier.attach_verdicts`; ``cross``: against each job of
    ``names`` too), each proof verified as its job is answered where ``verifier`` allows and
    ``ahead`` (else all of them after the flow's last answer: a timed flow)."""
    early = ahead_of(verifier, workload, names if cross else ()) if ahead else None
    try:
        flow = send(early.answered if early is not None else None)
        return attach_verdicts(flow, workload, early or verifier, cross=cross)
    finally:
        if early is not None:
            early.close()


def _key(item: dict[str, Any]) -> bytes:
    # the whole item: the same id with another proof or inputs is another question
    return msgspec.json.encode(item)


def _result(future: Future[dict[str, ProofVerdict]], wait_s: float) -> dict[str, ProofVerdict]:
    """The early batch's verdicts, waiting for it ``wait_s`` seconds at most if it is in
    flight; ``{}`` when it failed, was dropped or is late (its items are then asked again)."""
    try:
        return future.result(timeout=wait_s)
    except (VerifyError, CancelledError, FutureTimeout):
        return {}
