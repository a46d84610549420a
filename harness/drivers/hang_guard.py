"""The hang guard: one deadline and one stall watchdog around every flow on a daemon.

    with guarded(address, deadline_s=600, stall_s=15, clock=clock) as guard:
        guard.add(4)              # four jobs now wait for an answer
        ...                       # each wait polls guard.expired() between short slices
        guard.answered(record)    # the daemon answered one request (progress; its wall time)
        guard.done()              # one job no longer waits

The watchdog thread polls ``GetStatus`` (and ``GetMetrics``) every ``poll_s`` seconds and keeps
each answer as a :class:`~proofdiff.model.jobs.StatusSample`: what the daemon *says* it is doing
(work items pending and in progress, ``cuzk_running_jobs``), for the behaviour oracles to
cross-check, with how long the call took to be answered; a poll that got no answer is kept as a
:class:`~proofdiff.model.jobs.PollFailure` (behaviour/control-plane judges both). Each poll has
:data:`~proofdiff.drivers.deadlines.STATUS_DEADLINE_S` to be answered, curio's own deadline for
``GetStatus``. With a ``probe``, the daemon's process is read before the first request, every
``poll_s`` on a thread of its own (a slow status answer never thins the readings) and when the
block ends (:class:`~proofdiff.model.jobs.UsageSample`: memory, handles, CPU
time, as the operating system counts them). Whether it is stalled is decided from what proofdiff observes itself
(:mod:`proofdiff.drivers.stall_rule`): no answer for far longer than its proofs take (the
:class:`~proofdiff.drivers.stall_rule.AnswerClock` of the daemon, kept across its flows), no
CPU used while requests wait (``cpu``, the runtime's resource sampling), or no answer to
``GetStatus`` at all. The deadline stops the flow too. Waiters see ``guard.expired()`` turn
true and give up: their jobs come back ``STUCK`` (a stall) or ``LOST`` (the deadline), with
:attr:`Guard.reason`, which quotes the daemon's last claims beside the observation.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from proofdiff.model import interrupt
from proofdiff.model.jobs import JobRecord, PollFailure, StatusSample, UsageSample
from proofdiff.model.status import JobStatus
from proofdiff.drivers.deadlines import STATUS_DEADLINE_S
from proofdiff.drivers.stall_rule import IDLE_CORES, AnswerClock, Observed, stall_reason

if TYPE_CHECKING:  # gRPC's stack loads on the guard's thread, never with a session's import
    from proofdiff.drivers.cuzk_client import ClientError, ProverClient
    from proofdiff.runtime.process_probe import ProcessProbe

_RUNNING = re.compile(r"^cuzk_running_jobs(?:\{[^}]*\})?\s+([0-9.eE+-]+)\s*$", re.M)

__all__ = ["INTERRUPTED", "CpuProbe", "Guard", "guarded"]

#: The reason of a guard tripped by an interrupt (Ctrl-C, SIGTERM) of the flow's caller: a
#: driver trips it before it waits for its worker threads, so that they give up at once.
INTERRUPTED = "the flow was interrupted (Ctrl-C or SIGTERM)"

#: ``cpu()`` -> the daemon's latest CPU sample ``(time.monotonic() s, cores)``, or ``None``
#: before the first (:attr:`proofdiff.runtime.resources.ResourceSampler.latest`).
CpuProbe = Callable[[], "tuple[float, float] | None"]


class Guard:
    """Stop flag, deadline (``deadline_s`` seconds from now), count of waiting jobs, and when
    the daemon last answered (``clock``: its answers over every flow; a fresh one if ``None``);
    ``on_done(n)`` hears of each job answered or given up (the flow's progress), and
    ``on_answer(record)`` of each record :meth:`answered` is shown."""

    def __init__(self, deadline_s: float, clock: AnswerClock | None = None,
                 on_done: Callable[[int], None] | None = None,
                 on_answer: Callable[[JobRecord], None] | None = None) -> None:
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self.deadline = time.monotonic() + deadline_s
        self.deadline_s = deadline_s
        self.reason = ""
        self.stalled = False
        self.outstanding = 0
        self.started, self.started_unix_s = time.monotonic(), time.time()
        self.last_progress = self.started
        self.clock = clock if clock is not None else AnswerClock()
        self.samples: list[StatusSample] = []
        self.poll_failures: list[PollFailure] = []
        self.usage: list[UsageSample] = []
        self.answered_n = 0
        self.on_done = on_done
        self.on_answer = on_answer
        #: the interrupt of the work this flow belongs to (:mod:`proofdiff.model.interrupt`):
        #: kept here, so the driver's threads and the watch thread see it too
        self.interrupt = interrupt.scope()

    def add(self, n: int = 1) -> None:
        """``n`` more jobs wait for an answer (the quiet clock starts when the first does)."""
        with self._lock:
            if self.outstanding == 0:
                self.last_progress = time.monotonic()
            self.outstanding += n

    def answered(self, record: JobRecord) -> None:
        """The daemon answered one request (``record``): progress, and its wall time on the
        clock. Records that are not the daemon's answer (a transport error, a give-up) are not."""
        if self.clock.answered(record):
            with self._lock:
                self.last_progress = time.monotonic()
        with self._lock:
            self.answered_n += 1
        if self.on_answer is not None:
            self.on_answer(record)

    def quiet_since(self) -> float:
        """The last answer, or when the requests went out (``time.monotonic()`` seconds)."""
        with self._lock:
            return self.last_progress

    def done(self, n: int = 1) -> None:
        """``n`` waiting jobs were answered (or given up); ``on_done(n)`` is told."""
        with self._lock:
            self.outstanding = max(0, self.outstanding - n)
        if self.on_done is not None:
            self.on_done(n)

    def waiting(self) -> int:
        """Jobs waiting now."""
        with self._lock:
            return self.outstanding

    def trip(self, reason: str, *, stall: bool) -> None:
        """Stop every waiter; the first reason wins."""
        with self._lock:
            if not self.reason:
                self.reason, self.stalled = reason, stall
        self._stop.set()

    @property
    def tripped(self) -> bool:
        """True once the guard stopped the waits (stall or deadline)."""
        return bool(self.reason)

    def expired(self) -> bool:
        """True when waiters must give up (the deadline passed, the flow's work was
        interrupted, or the guard tripped)."""
        if not self._stop.is_set() and self.interrupt.is_set():
            self.trip(INTERRUPTED, stall=False)
        if not self._stop.is_set() and time.monotonic() >= self.deadline:
            self.trip(f"the deadline of {self.deadline_s:.0f} s passed", stall=False)
        return self._stop.is_set()

    @property
    def interrupted(self) -> bool:
        """True when the guard stopped the flow for an interrupt (Ctrl-C, SIGTERM, the
        caller's interrupt of a unit)."""
        return self.reason == INTERRUPTED

    def given_up(self) -> JobStatus:
        """The status of a job given up: STUCK after a stall, LOST after the deadline."""
        return JobStatus.STUCK if self.stalled else JobStatus.LOST

    def wait(self, timeout_s: float) -> bool:
        """Sleep up to ``timeout_s`` seconds, or until the guard trips; True if it tripped."""
        return self._stop.wait(timeout_s)

    def elapsed_ms(self) -> float:
        """Milliseconds since the guard started (the flow's clock)."""
        return (time.monotonic() - self.started) * 1000.0

    def look(self, probe: ProcessProbe | None) -> None:
        """Read the daemon's process through ``probe`` and keep it (nothing when there is no
        probe or the process is gone)."""
        got = probe.read() if probe is not None else None
        if got is not None:
            with self._lock:
                answered = self.answered_n
            self.usage.append(UsageSample(self.elapsed_ms(), answered, got.rss_bytes, got.fds,
                                          got.threads, got.cpu_s))


def running_jobs(metrics_text: str) -> int | None:
    """The ``cuzk_running_jobs`` gauge of a Prometheus text (``None`` when absent)."""
    m = _RUNNING.search(metrics_text)
    return int(float(m.group(1))) if m else None


def _sample(client: ProverClient, guard: Guard, metrics: list[bool]) -> StatusSample:
    """One poll of the daemon's claims, kept on the guard: work items pending (its queues) and
    in progress (its queues, or the GPUs it says are busy, whichever says more: cuzk lists a
    queue only for kinds with waiting jobs, so a lone running job shows only on its GPU), and
    ``cuzk_running_jobs``, with the ``GetStatus`` call's latency. A ``GetStatus`` that fails is
    kept as a :class:`PollFailure` and raised again."""
    from proofdiff.drivers.cuzk_client import ClientError

    t0 = time.monotonic()
    try:
        st = client.get_status()
    except ClientError as exc:
        _failed(guard, "GetStatus", t0, exc)
        raise
    latency_ms = (time.monotonic() - t0) * 1000.0
    pending = sum(q.pending for q in st.queues)
    active = max(sum(q.in_progress for q in st.queues),
                 sum(1 for g in st.gpus if g.current_job_id))
    running = None
    if metrics[0]:
        t1 = time.monotonic()
        try:
            running = running_jobs(client.get_metrics())
        except ClientError as exc:
            metrics[0] = False  # a daemon without GetMetrics: stop asking
            if exc.code != "UNIMPLEMENTED":  # one that has it and did not answer is a failure
                _failed(guard, "GetMetrics", t1, exc)
    sample = StatusSample(guard.elapsed_ms(), pending, active, running, round(latency_ms, 3))
    guard.samples.append(sample)
    return sample


def _failed(guard: Guard, rpc: str, t0: float, exc: ClientError) -> None:
    now = time.monotonic()
    guard.poll_failures.append(PollFailure(guard.elapsed_ms(), round((now - t0) * 1000.0, 3),
                                           rpc, exc.code))


def _claims(sample: StatusSample | None) -> str:
    if sample is None:
        return "it reported nothing"
    return (f"it claims {sample.pending} pending, {sample.in_progress} in progress"
            + (f", cuzk_running_jobs {sample.running_jobs}" if sample.running_jobs is not None
               else ""))


def _read(guard: Guard, poll_s: float, finished: threading.Event, probe: ProcessProbe) -> None:
    """Reads the daemon's process every ``poll_s`` until the block ends: on a thread of its
    own, so that a status poll the daemon is slow to answer never thins the readings."""
    while not finished.wait(poll_s) and not guard.expired():
        guard.look(probe)


def _watch(address: str, guard: Guard, stall_s: float, poll_s: float,
           finished: threading.Event, cpu: CpuProbe | None) -> None:
    unreachable: float | None = None
    code = ""
    idle_since: float | None = None
    seen_cpu = 0.0
    last: StatusSample | None = None
    metrics = [True]
    # gRPC's stack is imported here, on the guard's thread, not with the session
    from proofdiff.drivers.cuzk_client import ClientError, ProverClient

    with ProverClient(address, default_timeout_s=STATUS_DEADLINE_S) as client:
        while not finished.wait(poll_s) and not guard.expired():
            now = time.monotonic()
            try:
                last = _sample(client, guard, metrics)
                unreachable = None
            except ClientError as exc:
                unreachable, code = unreachable or now, exc.code
            now = time.monotonic()  # a slow answer took its time: the stall rule counts from now
            got = cpu() if cpu is not None else None
            if got is not None and got[0] > seen_cpu:  # a new CPU sample
                seen_cpu = got[0]
                idle_since = (idle_since or got[0]) if got[1] < IDLE_CORES else None
            why = stall_reason(Observed(
                now=now, waiting=guard.waiting(), quiet_since=guard.quiet_since(),
                longest_s=guard.clock.longest_s, stall_s=stall_s, unreachable_since=unreachable,
                unreachable_code=code, cpu_idle_since=idle_since,
                cpu_idle_until=seen_cpu if idle_since is not None else None))
            if why:
                guard.trip(f"{why}; meanwhile {_claims(last)}", stall=True)


@contextmanager
def guarded(address: str, *, deadline_s: float, stall_s: float = 15.0, poll_s: float = 0.5,
            clock: AnswerClock | None = None, cpu: CpuProbe | None = None,
            probe: ProcessProbe | None = None,
            on_done: Callable[[int], None] | None = None,
            on_answer: Callable[[JobRecord], None] | None = None) -> Iterator[Guard]:
    """A :class:`Guard` whose watchdog thread polls ``address`` until the block ends.

    Args:
        address: the daemon's ``127.0.0.1:PORT``. deadline_s: deadline of the block, seconds.
        stall_s: the shortest stall, seconds (default 15; :mod:`proofdiff.drivers.stall_rule`).
        poll_s: the ``GetStatus`` period, seconds (default 0.5).
        clock: the daemon's answers over its earlier flows (default: none seen yet).
        cpu: the daemon's CPU samples, for a daemon that proves on the CPU (default: not
            watched).
        probe: reads the daemon's process (default: not read): before the block, every
            poll period on a thread of its own, and when the block ends.
        on_done: told ``n`` each time ``n`` jobs were answered or given up (default: nobody).
        on_answer: told each record a driver shows as answered, on the driver's thread
            (default: nobody; the flow's early verification).
    """
    guard = Guard(deadline_s, clock, on_done, on_answer)
    guard.look(probe)  # idle: before the first request of the block
    finished = threading.Event()
    thread = threading.Thread(target=_watch, args=(address, guard, stall_s, poll_s, finished, cpu),
                              name="proofdiff-hang-guard", daemon=True)
    reader = threading.Thread(target=_read, args=(guard, poll_s, finished, probe),
                              name="proofdiff-process-reader", daemon=True) if probe else None
    thread.start()
    if reader is not None:
        reader.start()
    try:
        yield guard
    finally:
        finished.set()
        if reader is not None:
            reader.join(timeout=poll_s * 8 + 5)
        # a poll in flight may wait for its whole deadline (a daemon that answers slowly)
        thread.join(timeout=STATUS_DEADLINE_S * 2 + poll_s * 8 + 5)
        guard.look(probe)
