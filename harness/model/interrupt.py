"""The one interrupt of a run: a Ctrl-C or SIGTERM of the command, or the caller's interrupt of
a unit on a fleet worker, seen by every thread that waits for the run's work.

Python delivers SIGINT as a ``KeyboardInterrupt`` in the main thread only: a thread that
waits for a daemon (a driver's pool, a profile's thread, a daemon's start) never sees it, and
a thread blocked on a lock does not see an exception raised into it from outside either. So
the interrupt is an :class:`threading.Event` that the waits poll (the hang guard of every flow,
a daemon's readiness wait, each flow's start: :func:`check`), each raising
``KeyboardInterrupt`` where it stands, which the workflow turns into INTERRUPTED with its
report (exit 130).

Scopes: the command's process has one event (set by the signal handlers that
:func:`installed` puts in place). A unit on a Dask worker runs in a scope of its own
(:func:`unit_scope`), so that the caller's Ctrl-C stops that unit, not another run's unit on
the same worker. The scope is a context variable: threads get it through
:func:`proofdiff.model.progress.carried`, and a hang guard keeps the one it was made in.

A command that has seen an interrupt ends with 130 whatever happened after it
(:func:`received`): an interrupt is never swallowed into a normal result. While a report is
written (:func:`deferred`) a Ctrl-C is held and raised after it, so the report is whole.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from types import FrameType

__all__ = ["check", "deferred", "installed", "received", "requested", "scope", "unit_scope"]

#: The command's own interrupt (this process's Ctrl-C or SIGTERM).
_PROCESS = threading.Event()

_SCOPE: ContextVar[threading.Event | None] = ContextVar("proofdiff_interrupt", default=None)

#: Set while a report is written: a signal then only sets the event, and is raised after.
_HELD = threading.local()


def scope() -> threading.Event:
    """The interrupt event of the work running here: its unit's (:func:`unit_scope`), else the
    process's."""
    return _SCOPE.get() or _PROCESS


def requested() -> bool:
    """True once the work running here was asked to stop."""
    return scope().is_set()


def check() -> None:
    """Raise ``KeyboardInterrupt`` if the work running here was asked to stop (a wait's poll,
    a flow's start)."""
    if requested():
        raise KeyboardInterrupt


def received() -> bool:
    """True once this process received a Ctrl-C or SIGTERM (:func:`installed`'s handlers)."""
    return _PROCESS.is_set()


@contextmanager
def unit_scope(event: threading.Event) -> Iterator[threading.Event]:
    """Run the block in the scope of ``event`` (a unit on a worker: set by the caller's
    interrupt)."""
    token = _SCOPE.set(event)
    try:
        yield event
    finally:
        _SCOPE.reset(token)


def _on_signal(_signum: int, _frame: FrameType | None) -> None:
    """SIGINT and SIGTERM: the process's event is set for every waiting thread, and the main
    thread gets ``KeyboardInterrupt`` at once, unless a report is being written
    (:func:`deferred`: it is raised after)."""
    _PROCESS.set()
    if not getattr(_HELD, "on", 0):
        raise KeyboardInterrupt


@contextmanager
def installed() -> Iterator[None]:
    """Route SIGINT and SIGTERM through :func:`_on_signal` for the block (a command of the CLI,
    on the main thread: a terminated run cleans up as a Ctrl-C does: daemons removed, the
    report written, exit 130), the process's event cleared before and after; the handlers that
    were there before are put back after (a test that calls the CLI in its own process keeps
    its own). Read :func:`received` inside the block."""
    _PROCESS.clear()
    if threading.current_thread() is not threading.main_thread():  # signals reach main only
        yield
        return
    # a process started with SIGINT ignored (a shell's background job) keeps it ignored
    before = {sig: signal.signal(sig, _on_signal) for sig in (signal.SIGINT, signal.SIGTERM)
              if signal.getsignal(sig) is not signal.SIG_IGN}
    try:
        yield
    finally:
        for sig, handler in before.items():
            signal.signal(sig, handler)
        _PROCESS.clear()  # what comes after in this process (a test's next run) is not cut


@contextmanager
def deferred() -> Iterator[None]:
    """Hold a Ctrl-C or SIGTERM that arrives in the block (a report being written, on the
    main thread) and raise it as ``KeyboardInterrupt`` when the block ends, so that the
    report is written whole and the command still ends with 130."""
    before = _PROCESS.is_set()
    depth = getattr(_HELD, "on", 0)
    _HELD.on = depth + 1  # nested blocks: the outermost raises
    try:
        yield
    finally:
        _HELD.on = depth
    if not depth and _PROCESS.is_set() and not before:
        raise KeyboardInterrupt
