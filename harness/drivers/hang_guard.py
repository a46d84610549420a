"""The hang guard: one deadline and one stall watchdog around every flow on a daemon.

    with guarded(address, deadline_s=600, stall_s=15) as guard:
        guard.add(4)              # four jobs now wait for an answer
        ...                       # each wait polls guard.expired() between short slices
        guard.done()              # one answered

The watchdog thread polls ``GetStatus`` (and ``GetMetrics``) every ``poll_s`` seconds and keeps
each answer as a :class:`~proofdiff.model.jobs.StatusSample` (what the daemon was really doing:
work items pending and in progress, ``cuzk_running_jobs``). While jobs wait, a daemon that
reports nothing pending and nothing in progress (its queues are empty: the jobs are parked or
forgotten), or does not answer at all, for ``stall_s`` seconds in a row trips the guard; so
does the deadline. Waiters see ``guard.expired()`` turn true and give up: their jobs come back
``STUCK`` (a stall) or ``LOST`` (the deadline), with :attr:`Guard.reason`. A real cuzk daemon
reports its queues the same way (``GetStatusResponse.queues``, docs/cuzk-interface.md).
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from proofdiff.model.jobs import StatusSample
from proofdiff.model.status import JobStatus
from proofdiff.drivers.cuzk_client import ClientError, ProverClient

_RUNNING = re.compile(r"^cuzk_running_jobs(?:\{[^}]*\})?\s+([0-9.eE+-]+)\s*$", re.M)

__all__ = ["INTERRUPTED", "Guard", "guarded"]

#: The reason of a guard tripped by an interrupt (Ctrl-C, SIGTERM) of the flow's caller: a
#: driver trips it before it waits for its worker threads, so that they give up at once.
INTERRUPTED = "the flow was interrupted (Ctrl-C or SIGTERM)"


class Guard:
    """Stop flag, deadline (``deadline_s`` seconds from now) and count of waiting jobs."""

    def __init__(self, deadline_s: float) -> None:
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self.deadline = time.monotonic() + deadline_s
        self.deadline_s = deadline_s
        self.reason = ""
        self.stalled = False
        self.outstanding = 0
        self.started = time.monotonic()
        self.samples: list[StatusSample] = []

    def add(self, n: int = 1) -> None:
        """``n`` more jobs wait for an answer."""
        with self._lock:
            self.outstanding += n

    def done(self, n: int = 1) -> None:
        """``n`` waiting jobs were answered (or given up)."""
        with self._lock:
            self.outstanding = max(0, self.outstanding - n)

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
        """True when waiters must give up (the deadline passed or the guard tripped)."""
        if not self._stop.is_set() and time.monotonic() >= self.deadline:
            self.trip(f"the deadline of {self.deadline_s:.0f} s passed", stall=False)
        return self._stop.is_set()

    def given_up(self) -> JobStatus:
        """The status of a job given up: STUCK after a stall, LOST after the deadline."""
        return JobStatus.STUCK if self.stalled else JobStatus.LOST

    def wait(self, timeout_s: float) -> bool:
        """Sleep up to ``timeout_s`` seconds, or until the guard trips; True if it tripped."""
        return self._stop.wait(timeout_s)


def running_jobs(metrics_text: str) -> int | None:
    """The ``cuzk_running_jobs`` gauge of a Prometheus text (``None`` when absent)."""
    m = _RUNNING.search(metrics_text)
    return int(float(m.group(1))) if m else None


def _sample(client: ProverClient, guard: Guard, metrics: list[bool]) -> tuple[int, str]:
    """One poll: (work items pending + in progress, why idle), a sample kept on the guard."""
    st = client.get_status()
    pending = sum(q.pending for q in st.queues)
    active = sum(q.in_progress for q in st.queues)
    running = None
    if metrics[0]:
        try:
            running = running_jobs(client.get_metrics())
        except ClientError:
            metrics[0] = False  # a daemon without GetMetrics: stop asking
    guard.samples.append(StatusSample((time.monotonic() - guard.started) * 1000.0, pending,
                                      active, running))
    return pending + active, "reports nothing pending or in progress"


def _watch(address: str, guard: Guard, stall_s: float, poll_s: float,
           finished: threading.Event) -> None:
    idle_since: float | None = None
    metrics = [True]
    with ProverClient(address, default_timeout_s=max(1.0, poll_s * 4)) as client:
        while not finished.wait(poll_s) and not guard.expired():
            try:
                busy, why = _sample(client, guard, metrics)
            except ClientError as exc:
                busy, why = 0, f"does not answer GetStatus ({exc.code})"
            now = time.monotonic()
            waiting = guard.waiting()
            if waiting > 0 and busy == 0:
                idle_since = idle_since or now
                if now - idle_since >= stall_s:
                    guard.trip(f"the daemon {why} for {now - idle_since:.0f} s while {waiting} "
                               "job(s) wait for an answer", stall=True)
            else:
                idle_since = None


@contextmanager
def guarded(address: str, *, deadline_s: float, stall_s: float = 15.0,
            poll_s: float = 0.5) -> Iterator[Guard]:
    """A :class:`Guard` whose watchdog thread polls ``address`` until the block ends.

    Args:
        address: the daemon's ``127.0.0.1:PORT``. deadline_s: deadline of the block, seconds.
        stall_s: an idle or unreachable daemon with jobs waiting for this long is stuck
            (default 15). poll_s: the ``GetStatus`` period, seconds (default 0.5).
    """
    guard = Guard(deadline_s)
    finished = threading.Event()
    thread = threading.Thread(target=_watch, args=(address, guard, stall_s, poll_s, finished),
                              name="proofdiff-hang-guard", daemon=True)
    thread.start()
    try:
        yield guard
    finally:
        finished.set()
        thread.join(timeout=poll_s * 8 + 5)
