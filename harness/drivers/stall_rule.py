"""When a daemon with requests outstanding is stalled, judged from what proofdiff observes itself.

The daemon's own figures (``GetStatus`` queues, ``cuzk_running_jobs``, ``/status``) are claims:
a daemon with a bug in its accounting reports what it believes, and a wedged one can go on
reporting work in progress, its figures even moving, while nothing is answered. And a correct
one can look idle: real cuzk lists a queue only for proof kinds with jobs *waiting*
(``Scheduler::stats`` in curio ``extern/cuzk/cuzk-core/src/scheduler.rs`` counts the queued
entries; ``get_status`` in ``cuzk-server/src/service.rs`` builds ``queues`` from them), so a
lone running job shows no queue at all. So the guard decides from observations only:

* **no answer for far longer than its proofs take.** Property (every correct cuzk-compatible
  daemon): a daemon holding ``N`` requests it has not answered answers one of them within ``N``
  times the longest send-to-answer time it has shown so far: each request needs at most that
  much of it even if it proves them one after another, and it never sits on pending work while
  able to prove it (cuzk's scheduler hands queued work to the next free worker:
  ``extern/cuzk/cuzk-core/src/engine.rs``; refprover's workers likewise, targets/refprover
  README "Scheduling"). Stalled when nothing was answered for :data:`STALL_FACTOR` x that
  (never less than the profile's ``stall_s``) since the last answer or since the requests went
  out. Needs one COMPLETED answer from the daemon first (this flow or an earlier one): before
  it, nothing says how long its proofs take (an SRS load can take minutes).
* **no CPU while requests wait**, on a daemon that proves on the CPU (the profile requests no
  GPU): proving is CPU work, so a process that used less than :data:`IDLE_CORES` in every
  sample for ``stall_s`` while requests wait and none is answered is proving nothing, whatever
  it reports. (A GPU daemon's host threads may idle while its GPU proves: the rule is off there.)
* **no answer to ``GetStatus`` at all** for ``stall_s``: the transport failing is proofdiff's own
  observation.

The daemon's figures are quoted in the reason beside what was observed, never used to decide.
"""

from __future__ import annotations

import threading

import msgspec

from proofdiff.model.jobs import JobRecord
from proofdiff.model.status import JobStatus

__all__ = ["IDLE_CORES", "STALL_FACTOR", "AnswerClock", "Observed", "stall_reason"]

#: How many times the bound of the first rule a daemon may take before it is stalled: the
#: property gives 1; the longest proof was timed under the load of its own time, and a later
#: one can meet more (a small proof on a shared 2-core machine beside another Docker-heavy job:
#: the oracle-bounds records of docs/measurements.md); half again the largest such ratio, as
#: behaviour/priority's bound.
STALL_FACTOR = 6.0
#: Less CPU than this, in cores, is a process that proves nothing (a proving 2 KiB partition
#: takes about one core; an idle refprover answering the guard's polls uses under 0.01).
IDLE_CORES = 0.05
#: The statuses that are the daemon's own answer (``AwaitProofResponse.Status``, less the
#: ``TIMEOUT`` of one AwaitProof slice): an answer is progress.
ANSWERS = frozenset({JobStatus.COMPLETED, JobStatus.FAILED, JobStatus.CANCELLED})


class AnswerClock:
    """What proofdiff saw of one daemon's answers, over all its flows (thread-safe): the
    longest a COMPLETED request took from send to answer (``longest_s``, seconds; ``None``
    before the first) and how many answers came."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.longest_s: float | None = None
        self.answers = 0

    def answered(self, record: JobRecord) -> bool:
        """Take one record; True when it is the daemon's answer (see :data:`ANSWERS`)."""
        if record.status not in ANSWERS or record.await_only:
            return False
        with self._lock:
            self.answers += 1
            if record.completed and record.wall_ms > 0:
                self.longest_s = max(self.longest_s or 0.0, record.wall_ms / 1000.0)
        return True


class Observed(msgspec.Struct, frozen=True, kw_only=True):
    """One moment of a flow as proofdiff observed it (``time.monotonic()`` seconds).

    Attributes:
        now: the moment. waiting: requests sent (or about to be) with no answer yet.
        quiet_since: the last answer, or when the requests went out if none came since.
        longest_s: the longest send-to-answer time of a COMPLETED request on this daemon so far
            (``None`` before the first).
        stall_s: the profile's stall floor (:class:`~proofdiff.drivers.deadlines.Deadlines`).
        unreachable_since: since when ``GetStatus`` has failed without a break (``None`` while
            it answers); ``unreachable_code``: the last failure's gRPC code.
        cpu_idle_since: since when every CPU sample of the daemon was under :data:`IDLE_CORES`
            (``None`` while it works, or when its CPU is not watched: a GPU daemon, an attached
            one); ``cpu_idle_until``: when the latest of those samples was taken (the idle time
            counts up to the last sample that showed it, never past it: samples that stop
            coming show nothing).
    """

    now: float
    waiting: int
    quiet_since: float
    longest_s: float | None
    stall_s: float
    unreachable_since: float | None = None
    unreachable_code: str = ""
    cpu_idle_since: float | None = None
    cpu_idle_until: float | None = None


def quiet_limit_s(o: Observed) -> float | None:
    """How long ``o.waiting`` requests may go unanswered (first rule), seconds; ``None`` before
    the daemon's first COMPLETED answer."""
    if o.longest_s is None:
        return None
    return max(o.stall_s, STALL_FACTOR * max(1, o.waiting) * o.longest_s)


def stall_reason(o: Observed) -> str | None:
    """Why the daemon is stalled at ``o`` (module docstring), or ``None``: never while no
    request waits."""
    if o.waiting <= 0:
        return None
    if o.unreachable_since is not None and o.now - o.unreachable_since >= o.stall_s:
        return (f"the daemon has not answered GetStatus ({o.unreachable_code or 'no answer'}) "
                f"for {o.now - o.unreachable_since:.0f} s while {o.waiting} request(s) wait")
    quiet = o.now - o.quiet_since
    head = f"no answer for {quiet:.0f} s while {o.waiting} request(s) wait"
    limit = quiet_limit_s(o)
    if limit is not None and quiet >= limit:
        return (f"{head}, longer than {STALL_FACTOR:g} x {o.waiting} x the longest proof this "
                f"daemon took ({o.longest_s:.1f} s) = {limit:.0f} s")
    if o.cpu_idle_since is not None and o.cpu_idle_until is not None:
        idle = o.cpu_idle_until - max(o.cpu_idle_since, o.quiet_since)
        if idle >= o.stall_s:
            return (f"{head}, and its process used under {IDLE_CORES} CPU cores for the last "
                    f"{idle:.0f} s: it proves nothing")
    return None
