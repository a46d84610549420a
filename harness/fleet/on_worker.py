"""What the fleet runs on a Dask worker: a unit in its own interrupt scope, and the caller's
Ctrl-C carried to the units of its run (:class:`~proofdiff.fleet.dask_executor.DaskExecutor`
submits :func:`run_unit` and, on a Ctrl-C, runs :func:`stop_units` on every worker).

A unit is stopped by setting its interrupt event (:mod:`proofdiff.model.interrupt`): every
wait of its work polls it (a flow's hang guard, a daemon's start, each flow's start), on
whatever thread, and raises ``KeyboardInterrupt`` where it stands, which the unit's workflow
turns into INTERRUPTED (its daemons removed). Nothing is raised into a thread from outside: an
exception that lands at an arbitrary line (Dask's own bookkeeping, a lock's release) can be
lost or leave the worker's threads in a state nobody can join; and only this unit's event is
set, never another run's unit on the same worker.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any

import msgspec

from proofdiff.fleet.hosts import Host
from proofdiff.model import interrupt
from proofdiff.model.run_options import RunOptions

__all__ = ["LostBefore", "NotStarted", "run_unit", "started_marker", "stop_units"]

#: This worker process's units running now: task key -> its interrupt event.
_RUNNING: dict[str, threading.Event] = {}
#: Units told to stop before they started here: a queued unit that a worker picks up between
#: the caller's stop and its cancel of the units not started never runs (its key is dropped
#: when it comes).
_STOPPED: set[str] = set()
_LOCK = threading.Lock()


class NotStarted(msgspec.Struct, frozen=True):
    """What a unit gives back when the caller's interrupt reached its worker before it
    started: it never runs (the caller has cancelled it, and reads nothing of it)."""


class LostBefore(msgspec.Struct, frozen=True):
    """What a unit gives back instead of running again after its worker died under it (the
    caller reports it lost, as ``--retry-lost`` is off)."""


def started_marker(key: str) -> str:
    """The name of the scheduler ``Event`` that says unit ``key`` started once (the caller
    clears it after the unit, which removes it from the scheduler)."""
    return f"proofdiff-unit-started-{key}"


def run_unit(fn: Callable[[Any], Any], item: Any,
             hosts: Mapping[str, Host], once: bool = False) -> tuple[str, Any]:
    """A unit on a Dask worker: ``(the worker's name, fn(item))``, ``item``'s shipped paths
    made this machine's and its options made this host's (:func:`~proofdiff.fleet.placement.
    on_host`: the hosts file's runtime, binaries and GPUs), run in an interrupt scope of its
    own that :func:`stop_units` sets.

    ``once``: on a scheduler this run joined, whose ``allowed_failures`` is not this run's to
    change, Dask runs a task again when its worker dies; the unit's first start is marked on
    the scheduler (:func:`started_marker`), and a second start gives back :class:`LostBefore`
    instead of running (a unit whose host went away is reported lost, unless
    ``--retry-lost``)."""
    from distributed import Event, get_worker

    from proofdiff.fleet.placement import on_host
    from proofdiff.fleet.shipping import localize, walk

    worker = get_worker()
    name = str(worker.name)
    key = str(worker.get_current_task())
    if once:
        new_event: Any = Event  # distributed is only partly typed
        started = new_event(started_marker(key))
        if started.is_set():
            return name, LostBefore()
        started.set()
    host = hosts.get(name)
    # the caller's paths made this machine's: shipped artifacts by reference, and its cache
    # and crate dropped (this machine's own are read from its environment)
    item = walk(localize(item), lambda s: s, lambda s: msgspec.structs.replace(
        s, cache_root="", crate_dir="") if isinstance(s, RunOptions) else s)
    stop = threading.Event()
    with _LOCK:
        if key in _STOPPED:  # the caller's Ctrl-C came before this unit started
            _STOPPED.discard(key)
            return name, NotStarted()
        _RUNNING[key] = stop
    try:
        with interrupt.unit_scope(stop):
            if host is None:
                return name, fn(item)
            with on_host(item, host) as placed:
                return name, fn(placed)
    finally:
        with _LOCK:
            _RUNNING.pop(key, None)


def stop_units(keys: list[str]) -> Callable[..., list[str]]:
    """A function for ``Client.run`` that sets the interrupt event of each unit of ``keys``
    running on the worker, and returns the keys it reached; the others of ``keys`` never start
    on that worker afterwards. Made here, so that it pickles by value (it imports this module
    there to reach the worker's units)."""

    def stop(dask_worker: Any) -> list[str]:
        del dask_worker  # the units are this process's, whichever worker runs them
        from proofdiff.fleet import on_worker

        with on_worker._LOCK:
            hit = [k for k in keys if k in on_worker._RUNNING]
            for k in hit:
                on_worker._RUNNING[k].set()
            on_worker._STOPPED.update(k for k in keys if k not in hit)
        return hit

    return stop
