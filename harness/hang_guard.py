"""The hang guard: a deadline and a stall watchdog around a set of waits on one daemon.

    with guarded(address, deadline_s=600, stall_s=15) as guard:
        guard.add(4)              # four jobs now wait for an answer
        ...                       # each wait polls guard.expired() between short slices
        guard.done()              # one answered

The watchdog polls ``GetStatus`` every ``poll_s`` seconds. While jobs wait, a daemon that
reports nothing pending and nothing in progress (its queues are empty: the jobs are parked or
forgotten), or does not answer at all, for ``stall_s`` seconds in a row trips the guard with
the reason; so does the deadline. Waiters see ``guard.expired()`` turn true and give up,
naming their job ids as stuck. A real cuzk daemon reports its queues the same way
(``GetStatusResponse.queues``), so the guard works unchanged there.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from .client import ClientError, ProverClient

__all__ = ["Guard", "guarded"]


class Guard:
    """Stop flag, deadline (``deadline_s`` seconds from now) and count of waiting jobs."""

    def __init__(self, deadline_s: float) -> None:
        self.stop = threading.Event()
        self.deadline = time.monotonic() + deadline_s
        self.deadline_s = deadline_s
        self.reason = ""
        self.lock = threading.Lock()
        self.outstanding = 0

    def add(self, n: int = 1) -> None:
        """``n`` more jobs wait for an answer."""
        with self.lock:
            self.outstanding += n

    def done(self, n: int = 1) -> None:
        """``n`` waiting jobs were answered (or given up)."""
        with self.lock:
            self.outstanding = max(0, self.outstanding - n)

    def trip(self, reason: str) -> None:
        """Stop every waiter; the first reason wins."""
        with self.lock:
            if not self.reason:
                self.reason = reason
        self.stop.set()

    @property
    def tripped(self) -> bool:
        """True once the guard stopped the waits with a reason (stall or deadline)."""
        return bool(self.reason)

    def expired(self) -> bool:
        """True when waiters must give up (deadline passed or the guard tripped)."""
        if not self.stop.is_set() and time.monotonic() >= self.deadline:
            self.trip(f"the deadline of {self.deadline_s:.0f} s passed")
        return self.stop.is_set()


def _watch(address: str, guard: Guard, stall_s: float, poll_s: float) -> None:
    idle_since: float | None = None
    with ProverClient(address, default_timeout_s=max(1.0, poll_s * 4)) as client:
        while not guard.stop.wait(poll_s):
            with guard.lock:
                waiting = guard.outstanding
            try:
                st = client.get_status()
                busy = sum(q.pending + q.in_progress for q in st.queues)
                why = "reports nothing pending or in progress"
            except ClientError as exc:
                busy, why = 0, f"does not answer GetStatus ({exc.code})"
            now = time.monotonic()
            if waiting > 0 and busy == 0:
                idle_since = idle_since or now
                if now - idle_since >= stall_s:
                    guard.trip(f"the daemon {why} for {now - idle_since:.0f} s while "
                               f"{waiting} job(s) wait for an answer")
            else:
                idle_since = None
            guard.expired()


@contextmanager
def guarded(address: str, *, deadline_s: float, stall_s: float = 15.0,
            poll_s: float = 0.5) -> Iterator[Guard]:
    """A :class:`Guard` with its watchdog thread running on ``address`` until the block ends.

    Args:
        address: the daemon's ``127.0.0.1:PORT``. deadline_s: deadline of the whole block, s.
        stall_s: idle/unreachable daemon with jobs waiting for this long = stuck (default 15).
        poll_s: GetStatus period, s (default 0.5).
    """
    guard = Guard(deadline_s)
    thread = threading.Thread(target=_watch, args=(address, guard, stall_s, poll_s),
                              name="proofdiff-watchdog", daemon=True)
    thread.start()
    try:
        yield guard
    finally:
        was = guard.reason
        guard.stop.set()
        guard.reason = was
        thread.join(timeout=poll_s * 8 + 5)
