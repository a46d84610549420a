"""Progress events: what long work is doing, for a display that the caller chooses.

The core (build steps, flows, timing rounds, the bisection) opens a :func:`task` and advances
it; it never prints progress and never imports a display. A caller that wants progress shown
installs a sink with :func:`reporting` (the CLI installs :mod:`proofdiff.report.progress`:
rich in a terminal, plain lines at a bounded rate in CI logs). With no sink installed, a task
is a no-op that costs one context-variable read.

    with reporting(sink):                                  # the caller
        with task("build", "cargo build", total=None) as t:  # the core
            t.advance(note="Compiling bellperson")

The sink lives in a :class:`contextvars.ContextVar`, so concurrent runs (tests, probes side by
side) each see their own; worker threads get it through :func:`carried`.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Literal, ParamSpec, TypeVar

import msgspec

from proofdiff.model import interrupt

__all__ = ["ProgressEvent", "Sink", "Task", "active", "carried", "reporting", "task"]

_P = ParamSpec("_P")
_R = TypeVar("_R")

Kind = Literal["start", "advance", "end"]


class ProgressEvent(msgspec.Struct, frozen=True, kw_only=True):
    """One change of one task.

    Attributes:
        kind: ``start`` | ``advance`` | ``end``. task: the task's id (unique in the process).
        topic: what kind of work: ``build``, ``proofs``, ``timing``, ``bisect``.
        name: which one (a build step, ``[prod] workload``, a workload, ...).
        done: units done so far (proofs, rounds, configurations). total: units planned, or
            ``None`` when unknown. note: the latest detail ('' when none).
        quiet: its caller logs the start and the end itself: a plain display prints only its
            periodic lines. ok: on ``end``, False when the task's block raised.
        at_s: ``time.monotonic()`` seconds of the event; started_s: of the task's start.
    """

    kind: Kind
    task: int
    topic: str
    name: str
    done: int = 0
    total: int | None = None
    note: str = ""
    quiet: bool = False
    ok: bool = True
    at_s: float = 0.0
    started_s: float = 0.0


#: A sink receives every event, from any thread; it must not raise.
Sink = Callable[[ProgressEvent], None]

_SINK: ContextVar[Sink | None] = ContextVar("proofdiff_progress_sink", default=None)
_IDS = itertools.count(1)


@contextmanager
def reporting(sink: Sink | None) -> Iterator[None]:
    """Send the events of the tasks opened in this block (this context) to ``sink``."""
    token = _SINK.set(sink)
    try:
        yield
    finally:
        _SINK.reset(token)


def active() -> bool:
    """True when a sink is installed in this context (a display shows the progress)."""
    return _SINK.get() is not None


def carried(fn: Callable[_P, _R]) -> Callable[_P, _R]:
    """``fn`` that runs with this context's sink, and its interrupt scope
    (:mod:`proofdiff.model.interrupt`), in whatever thread calls it (a pool's workers do not
    inherit context variables)."""
    sink = _SINK.get()
    stop = interrupt.scope()

    def run(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        token = _SINK.set(sink)
        try:
            with interrupt.unit_scope(stop):
                return fn(*args, **kwargs)
        finally:
            _SINK.reset(token)
    return run


class Task:
    """One task's state; :meth:`advance` may be called from any thread.

    Attributes:
        live: True when the events go to a sink (False: every call is a no-op).
        done: units done so far.
    """

    def __init__(self, sink: Sink | None, topic: str, name: str, total: int | None,
                 quiet: bool) -> None:
        self._sink, self.live = sink, sink is not None
        self._topic, self._name, self._total, self._quiet = topic, name, total, quiet
        self._id = next(_IDS)
        self._lock = threading.Lock()
        self._started = time.monotonic()
        self._note = ""
        self.done = 0

    def _emit(self, kind: Kind, ok: bool = True) -> None:
        if self._sink is None:
            return
        self._sink(ProgressEvent(kind=kind, task=self._id, topic=self._topic, name=self._name,
                                 done=self.done, total=self._total, note=self._note,
                                 quiet=self._quiet, ok=ok, at_s=time.monotonic(),
                                 started_s=self._started))

    def advance(self, n: int = 1, *, note: str | None = None,
                total: int | None = None) -> None:
        """``n`` more units done (0: only a new ``note`` or ``total``)."""
        if self._sink is None:
            return
        with self._lock:
            self.done += n
            if note is not None:
                self._note = note
            if total is not None:
                self._total = total
            self._emit("advance")

    def end(self, ok: bool) -> None:
        """The task is over (called once, by :func:`task`)."""
        with self._lock:
            self._emit("end", ok)


@contextmanager
def task(topic: str, name: str, *, total: int | None = None,
         quiet: bool = False) -> Iterator[Task]:
    """A task of this context's sink for the length of the block (module docstring).

    Args:
        topic: ``build`` | ``proofs`` | ``timing`` | ``bisect``. name: which one.
        total: units planned (``None``: unknown). quiet: the caller logs start and end itself.
    """
    t = Task(_SINK.get(), topic, name, total, quiet)
    t._emit("start")
    ok = False
    try:
        yield t
        ok = True
    finally:
        t.end(ok)
