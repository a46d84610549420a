"""One executor for every workflow's units: threads on this machine, or a Dask cluster.

A workflow splits its work into units (a differential, a bisection probe, a regression case)
and hands them to :meth:`Executor.map`; each unit is a module-level function of one argument
that returns the model's msgspec structs (they pickle, so they come back from a Dask worker
unchanged). The caller judges the results and writes the report, once, on its side.

:func:`open_executor` picks the executor from the run options:

* neither ``cluster`` nor ``hosts``: :class:`ThreadExecutor` (``jobs`` threads; one unit, or
  one job, runs in the caller's own thread, so a Ctrl-C reaches it as before);
* ``cluster`` (``tcp://HOST:PORT``): a ``distributed.Client`` joins that scheduler;
* ``hosts`` (a hosts file, :mod:`proofdiff.fleet.hosts`): a Dask ``SSHCluster`` is started over
  those hosts (:mod:`proofdiff.fleet.ssh`) and a client joins it.

Before any unit runs, the cluster must answer within ``connect_timeout_s`` and have a worker,
and every worker must run the caller's proofdiff (:func:`~proofdiff.fleet.version.
proofdiff_version`: the version and a digest of the source); anything else is a
:class:`FleetError` naming the cause and the fix. ``distributed`` is imported only then, so a
run on threads never loads it.
"""

from __future__ import annotations

import contextlib
import re
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any, Protocol, TypeVar

import msgspec

from proofdiff.fleet.hosts import Host, Hosts
from proofdiff.fleet.shipping import ShipReport
from proofdiff.fleet.version import proofdiff_version
from proofdiff.model import progress
from proofdiff.model.errors import ProofdiffError
from proofdiff.model.run_options import RunOptions

__all__ = ["CONNECT_TIMEOUT_S", "DaskExecutor", "Executor", "FleetError", "ThreadExecutor",
           "check_versions", "connect", "open_executor"]

#: How long a scheduler has to answer, and to have a worker, s.
CONNECT_TIMEOUT_S = 30.0
#: How long the cluster may have no worker while units wait, s, before they are given up.
NO_WORKER_S = 120.0
#: How long interrupted units have to stop their daemons and come back, s.
INTERRUPT_S = 60.0
_ADDRESS = re.compile(r"^(tcp|tls)://[A-Za-z0-9.\-\[\]:]+:\d{1,5}$")

T = TypeVar("T")
R = TypeVar("R")


class FleetError(ProofdiffError):
    """The cluster cannot run the units: unreachable, no worker, another proofdiff on a
    worker, a worker lost for good."""


class Executor(Protocol):
    """Runs units. ``slots``: units at once; ``remote``: units run in other processes (no
    closure over this process's objects reaches them); ``placed``: ``(unit key, where it
    ran)`` of every unit so far (``local``, or the Dask worker's name)."""

    description: str
    slots: int
    remote: bool
    placed: list[tuple[str, str]]

    def map(self, fn: Callable[[T], R], items: Sequence[T], *, name: str) -> list[R]:
        """``[fn(item) for item in items]``, the units side by side, results in order.
        A unit's exception is raised here (the first, in order)."""
        ...

    def map_placed(self, fn: Callable[[T], R], items: Sequence[T], *, name: str,
                   lost: Callable[[T, str], R] | None = None,
                   on: Sequence[str] | None = None) -> list[tuple[str, R]]:
        """:meth:`map`, each result with where it ran (``local``, or the worker's name).

        ``lost(item, message)``: the result of a unit whose host went away while it ran
        (``message`` names the unit and the host, with the fix), where ``retry_lost`` is off;
        ``None``: such a unit is a :class:`FleetError`. ``on``: the worker each item must run
        on (a name of :meth:`workers`), else wherever the engine puts it."""
        ...

    def workers(self) -> list[str]:
        """The names of the machines units can run on now (``["local"]`` here)."""
        ...

    def ship(self, options: RunOptions) -> RunOptions:
        """``options`` ready to run where the units run: on other machines, its artifacts
        (found or built here first) shipped to every worker (:mod:`proofdiff.fleet.shipping`)
        and named by reference; here, unchanged."""
        ...

    def ship_path(self, what: str, path: str) -> str:
        """A file or folder the units read, shipped like :meth:`ship`'s artifacts under its
        own name (its reference), or ``path`` unchanged here."""
        ...


class ThreadExecutor:
    """Units on threads of this process (``jobs`` at once; ``jobs`` = 1 or one unit: in the
    caller's thread)."""

    def __init__(self, jobs: int = 1) -> None:
        self.slots = max(1, jobs)
        self.remote = False
        self.description = f"threads on this machine ({self.slots} at once)"
        self.placed: list[tuple[str, str]] = []
        self._lock = threading.Lock()

    def map(self, fn: Callable[[T], R], items: Sequence[T], *, name: str) -> list[R]:
        return [v for _w, v in self.map_placed(fn, items, name=name)]

    def map_placed(self, fn: Callable[[T], R], items: Sequence[T], *, name: str,
                   lost: Callable[[T, str], R] | None = None,
                   on: Sequence[str] | None = None) -> list[tuple[str, R]]:
        del lost, on  # one machine: nothing to lose, and nowhere else to place a unit
        def one(pair: tuple[int, T]) -> tuple[str, R]:
            out = fn(pair[1])
            with self._lock:
                self.placed.append((f"{name}-{pair[0]}", "local"))
            return "local", out

        pairs = list(enumerate(items))
        if self.slots == 1 or len(pairs) <= 1:
            return [one(p) for p in pairs]
        with ThreadPoolExecutor(max_workers=min(self.slots, len(pairs))) as pool:
            return list(pool.map(progress.carried(one), pairs))  # progress reaches the pool

    def workers(self) -> list[str]:
        return ["local"]

    def ship(self, options: RunOptions) -> RunOptions:
        return options

    def ship_path(self, what: str, path: str) -> str:
        return path


def _on_worker(fn: Callable[[Any], Any], item: Any,
               hosts: Mapping[str, Host]) -> tuple[str, Any]:
    """A unit on a Dask worker: ``(the worker's name, fn(item))``, ``item``'s shipped paths
    made this machine's and its options made this host's (:func:`~proofdiff.fleet.placement.
    on_host`: the hosts file's runtime, binaries and GPUs)."""
    from distributed import get_worker

    from proofdiff.fleet.placement import on_host
    from proofdiff.fleet.shipping import localize, walk

    name = str(get_worker().name)
    host = hosts.get(name)
    # the caller's paths made this machine's: shipped artifacts by reference, and its cache
    # and crate dropped (this machine's own are read from its environment)
    item = walk(localize(item), lambda s: s, lambda s: msgspec.structs.replace(
        s, cache_root="", crate_dir="") if isinstance(s, RunOptions) else s)
    if host is None:
        return name, fn(item)
    with on_host(item, host) as placed:
        return name, fn(placed)


class DaskExecutor:
    """Units as tasks of a Dask cluster through ``client`` (a ``distributed.Client``, typed
    ``Any``: distributed is only partly typed; one task per unit, never cached: ``pure=False``);
    ``cluster``: the SSHCluster this run started, if any."""

    def __init__(self, client: Any, cluster: Any = None, no_worker_s: float = NO_WORKER_S,
                 hosts: Hosts | None = None, log: Callable[[str], None] = lambda _l: None,
                 retry_lost: bool = False) -> None:
        self.client, self.cluster, self.no_worker_s = client, cluster, no_worker_s
        #: a unit whose worker died is run again elsewhere (Dask's way), else reported lost
        self.retry_lost = retry_lost
        self.hosts = {h.name: h for h in hosts.hosts} if hosts else {}
        self.log = log
        #: what each worker was sent (:class:`~proofdiff.fleet.shipping.ShipReport`), per call
        self.shipped: list[ShipReport] = []
        self.remote = True
        workers: dict[str, int] = client.nthreads()  # every worker (scheduler_info lists 5)
        self.slots = max(1, sum(workers.values()))
        self.description = (f"Dask cluster {client.scheduler.address} ({len(workers)} "
                            f"worker(s), {self.slots} slot(s))")
        self.placed: list[tuple[str, str]] = []

    def map(self, fn: Callable[[T], R], items: Sequence[T], *, name: str) -> list[R]:
        return [v for _w, v in self.map_placed(fn, items, name=name)]

    def map_placed(self, fn: Callable[[T], R], items: Sequence[T], *, name: str,
                   lost: Callable[[T, str], R] | None = None,
                   on: Sequence[str] | None = None) -> list[tuple[str, R]]:
        if not items:
            return []
        token = uuid.uuid4().hex[:8]
        keys = [f"{name}-{i}-{token}" for i in range(len(items))]
        resources = self._resources(items)
        if on is None:
            futures = self.client.map(_on_worker, [fn] * len(items), list(items),
                                      [self.hosts] * len(items), key=keys, pure=False,
                                      resources=resources)
        else:  # each on its worker, by address (a name that is no worker's: lost at once)
            address = {n: a for a, n in self._worker_names().items()}
            futures = [self.client.submit(_on_worker, fn, item, self.hosts, key=key,
                                          pure=False, resources=resources,
                                          workers=[address.get(where, where)],
                                          allow_other_workers=False)
                       for item, key, where in zip(items, keys, on, strict=True)]
        try:
            gone = self._wait(futures, dict(zip(keys, on, strict=True)) if on else None)
            got = [self._outcome(f, item, f"{name}-{i}", lost, gone.get(k))
                   for i, (f, item, k) in enumerate(zip(futures, items, keys, strict=True))]
        except KeyboardInterrupt:
            got = self._interrupted(futures, keys, items, name, lost)
        except BaseException:
            self.client.cancel(futures)
            raise
        self.placed.extend((f"{name}-{i}", where) for i, (where, _v) in enumerate(got))
        return got

    def _interrupted(self, futures: Sequence[Any], keys: Sequence[str], items: Sequence[T],
                     name: str, lost: Callable[[T, str], R] | None) -> list[tuple[str, R]]:
        """A Ctrl-C here: the units not started are cancelled, the running ones interrupted on
        their workers (a ``KeyboardInterrupt`` raised in the thread that runs each, as a
        Ctrl-C reaches a unit on this machine), and waited for up to :data:`INTERRUPT_S`, so
        that each stops its daemons and gives back what it did.

        Returns:
            Every unit's result where each was running (a differential or a probe comes back
            INTERRUPTED), so that the caller writes its report.

        Raises:
            KeyboardInterrupt: a unit had not started, or did not stop within the deadline.
        """
        running = {k for hit in self.client.run(_interrupt_units(list(keys))).values()
                   for k in hit}
        self.client.cancel([f for f, k in zip(futures, keys, strict=True) if k not in running])
        self.log(f"interrupted: {len(running)} running unit(s) of {name} told to stop on their "
                 f"host(s), {len(keys) - len(running)} not started cancelled")
        if len(running) < len(keys):
            raise KeyboardInterrupt
        deadline = time.monotonic() + INTERRUPT_S
        while not all(f.done() for f in futures) and time.monotonic() < deadline:
            time.sleep(0.2)
        if not all(f.done() for f in futures):
            self.client.cancel(futures)
            raise KeyboardInterrupt
        return [self._outcome(f, item, f"{name}-{i}", lost)
                for i, (f, item) in enumerate(zip(futures, items, strict=True))]

    def _outcome(self, future: Any, item: T, unit: str, lost: Callable[[T, str], R] | None,
                 pinned_to_gone: str | None = None) -> tuple[str, R]:
        """``(where it ran, its result)`` of a finished unit; a unit whose worker died is
        ``lost``'s result where ``retry_lost`` is off, as is a unit pinned to a worker that
        left (``pinned_to_gone``: its name; it can run nowhere else).

        Raises:
            FleetError: a lost unit without ``lost``, or (``retry_lost``) one that killed every
                worker it was tried on.
            BaseException: what the unit raised.
        """
        from distributed import KilledWorker

        if pinned_to_gone is not None:
            why = (f"unit {unit} was lost: host {pinned_to_gone}, the one it must run on, "
                   "is not in the cluster (it went away, or never joined)")
            fix = "see why the host went (its console, dmesg, the worker's log) and run again"
            if lost is None:
                raise FleetError(why, fix=fix)
            self.log(f"{why} (fix: {fix})")
            return pinned_to_gone, lost(item, f"{why} (fix: {fix})")
        try:
            where, value = future.result()
            return str(where), value
        except KilledWorker as exc:
            host = str(exc.last_worker.name)
            if self.retry_lost:  # Dask re-ran it on other workers; each of them died too
                raise FleetError(f"unit {unit} killed every worker it ran on, the last on "
                                 f"host {host}: {exc}",
                                 fix="read the workers' logs (dask worker ...) for the cause; "
                                     "the unit is retried on another worker up to "
                                     "distributed.scheduler.allowed-failures times") from None
            why = (f"unit {unit} was lost: host {host} went away while it ran (its Dask worker "
                   f"died); nothing of it came back")
            fix = ("see why the host went (its console, dmesg, the worker's log), or give "
                   "--retry-lost to run such a unit again on another host")
            if lost is None:
                raise FleetError(why, fix=fix) from None
            self.log(f"{why} (fix: {fix})")
            return host, lost(item, f"{why} (fix: {fix})")

    def workers(self) -> list[str]:
        return sorted(self._worker_names().values())

    def _worker_names(self) -> dict[str, str]:
        """Worker address -> its name (the hosts file's host name)."""
        info = self.client.scheduler_info(n_workers=-1)["workers"]
        return {a: str(w.get("name", a)) for a, w in info.items()}

    def _resources(self, items: Sequence[Any]) -> dict[str, int] | None:
        """The Dask resources one unit holds: ``{"GPU": n}`` where its profiles ask for GPUs
        (:func:`~proofdiff.fleet.placement.gpus_wanted`), so a host runs side by side only
        the units its GPUs can hold."""
        from proofdiff.fleet.placement import gpus_wanted

        n = max((gpus_wanted(i) for i in items), default=0)
        if not n:
            return None
        info = self.client.scheduler_info(n_workers=-1)["workers"]
        if not any(w.get("resources", {}).get("GPU", 0) >= n for w in info.values()):
            raise FleetError(f"a unit asks for {n} GPU(s) and no worker of "
                             f"{self.client.scheduler.address} has as many",
                             fix="give the hosts their GPUs in the hosts file (gpus = N or "
                                 "gpu_uuids = [...]), or ask for fewer (--set '*.gpus=none')")
        return {"GPU": n}

    def ship(self, options: RunOptions) -> RunOptions:
        from proofdiff.fleet.placement import ship_run

        with _shipping(self.client):
            opts, reports = ship_run(self.client, options, self.hosts, log=self.log)
        self.shipped.extend(reports)
        return opts

    def ship_path(self, what: str, path: str) -> str:
        from proofdiff.fleet.shipping import bundle_of, ship

        bundle = bundle_of(what, path, named=True)
        with _shipping(self.client):
            self.shipped.extend(ship(self.client, [bundle], log=self.log))
        return bundle.ref

    def _wait(self, futures: Sequence[Any], pinned: Mapping[str, str] | None = None,
              ) -> dict[str, str]:
        """Until every future is done; a cluster left without any worker for
        ``no_worker_s`` ends the wait. ``pinned``: unit key -> the worker it must run on; a
        unit whose worker is not (or no longer) in the cluster is cancelled, as it could run
        nowhere else.

        Returns:
            The pinned units so cancelled: key -> the worker's name.

        Raises:
            FleetError: no worker for ``no_worker_s`` (the units still pending named).
        """
        alone_since: float | None = None
        names = self._worker_names()
        gone_with: dict[str, str] = {}
        while True:
            for f in futures:
                where = (pinned or {}).get(str(f.key))
                if where is not None and where not in names.values() and not f.done():
                    gone_with[str(f.key)] = where
                    f.cancel()
            if all(f.done() or str(f.key) in gone_with for f in futures):
                return gone_with  # errored units count as done
            time.sleep(0.5)  # a unit is a run of seconds at least
            alive = set(self.client.nthreads())
            for gone in sorted(set(names) - alive):
                self.log(f"host {names.pop(gone)} left the cluster: its running units "
                         + ("run again on another host (--retry-lost)" if self.retry_lost
                            else "are reported lost (--retry-lost would run them again)"))
            if alive - set(names):
                names = self._worker_names()
            if alive:
                alone_since = None
                continue
            alone_since = alone_since or time.monotonic()
            if time.monotonic() - alone_since > self.no_worker_s:
                pending = [f for f in futures if not f.done()]
                raise FleetError(
                    f"the Dask cluster {self.client.scheduler.address} has had no worker for "
                    f"{self.no_worker_s:.0f} s; {len(pending)} unit(s) never finished: "
                    + ", ".join(sorted(str(f.key) for f in pending)[:5]),
                    fix="restart the workers (dask worker tcp://...), or run without --cluster")


@contextmanager
def _shipping(client: Any) -> Iterator[None]:
    """A transfer that breaks (a worker lost, a step past its deadline, a blob that arrives
    corrupt, a full disk there) is a :class:`FleetError` naming the cause."""
    try:
        yield
    except ProofdiffError:
        raise
    except Exception as exc:  # noqa: BLE001 - whatever broke between here and a worker
        raise FleetError(f"shipping the artifacts to the workers of {client.scheduler.address} "
                         f"failed: {type(exc).__name__}: {exc}",
                         fix="check the workers' disks (~/.cache/proofdiff/shipped) and logs, "
                             "then run again: what arrived whole is kept") from None


def connect(address: str, timeout_s: float = CONNECT_TIMEOUT_S) -> Any:
    """A client of the scheduler at ``address``, with a worker, within ``timeout_s``.

    Raises:
        FleetError: a malformed address; no scheduler answered, or it had no worker, within
            ``timeout_s`` (each with the fix).
    """
    if not _ADDRESS.match(address):
        raise FleetError(f"--cluster {address!r} is no scheduler address",
                         fix="give tcp://HOST:PORT, as `dask scheduler` prints it, e.g. "
                             "tcp://127.0.0.1:8786 (or --hosts FILE to start one over SSH)")
    from distributed import Client as DaskClient

    new_client: Any = DaskClient  # distributed is only partly typed
    try:
        client: Any = new_client(address, timeout=f"{timeout_s}s", set_as_default=False)
    except (OSError, TimeoutError) as exc:
        raise FleetError(f"no Dask scheduler answered at {address} within {timeout_s:.0f} s "
                         f"({type(exc).__name__}: {str(exc).splitlines()[0][:200]})",
                         fix="start one there (dask scheduler --host 127.0.0.1 --port PORT) "
                             "with its workers, or fix --cluster") from None
    _with_worker(client, address, timeout_s)
    return client


def _with_worker(client: Any, address: str, timeout_s: float) -> None:
    try:
        client.wait_for_workers(1, timeout=timeout_s)
    except TimeoutError:
        client.close()
        raise FleetError(f"the Dask scheduler at {address} has no worker (waited "
                         f"{timeout_s:.0f} s)",
                         fix=f"start one: dask worker {address} (where proofdiff is "
                             "installed)") from None


def check_versions(client: Any) -> None:
    """Every worker runs the caller's proofdiff (:func:`proofdiff_version`).

    Raises:
        FleetError: a worker on another proofdiff, or one that cannot import it (each worker
            named, with both versions).
    """
    mine = proofdiff_version()
    try:
        theirs: dict[str, str] = client.run(proofdiff_version)
    except Exception as exc:  # noqa: BLE001 - whatever broke on a worker: it cannot run units
        raise FleetError(f"a worker of {client.scheduler.address} cannot run proofdiff: "
                         f"{type(exc).__name__}: {exc}",
                         fix="install this proofdiff on every worker (pip install . from "
                             "this checkout) and restart them") from None
    wrong = {w: v for w, v in theirs.items() if v != mine}
    if wrong:
        raise FleetError(
            f"{len(wrong)} of {len(theirs)} worker(s) of {client.scheduler.address} run "
            f"another proofdiff than this caller's {mine}: "
            + ", ".join(f"{w} has {v}" for w, v in sorted(wrong.items())),
            fix="install this checkout's proofdiff on those workers (pip install .) and "
                "restart them; no unit was run")


def _interrupt_units(keys: list[str]) -> Callable[..., list[str]]:
    """A function for ``Client.run`` that raises ``KeyboardInterrupt`` in each thread of the
    worker that runs one of ``keys`` (``PyThreadState_SetAsyncExc``: delivered when the thread
    next runs Python code, so within a wait's poll) and returns the keys it reached. Made here,
    so that it pickles by value."""

    def interrupt(dask_worker: Any) -> list[str]:
        import ctypes

        with dask_worker.active_threads_lock:
            threads = dict(dask_worker.active_threads)
        hit = []
        for tid, key in threads.items():
            if key in keys:
                ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(tid),
                                                           ctypes.py_object(KeyboardInterrupt))
                hit.append(str(key))
        return hit

    return interrupt


def _allowed_failures_set(n: int) -> Callable[..., int]:
    """A function for ``Client.run_on_scheduler`` that sets the scheduler's
    ``allowed_failures`` (how many workers may die running one task before it errs with
    ``KilledWorker``; Dask's default 3) to ``n`` and returns the previous value. Made here, so
    that it pickles by value: the scheduler need not import proofdiff."""

    def swap(dask_scheduler: Any) -> int:
        before = int(dask_scheduler.allowed_failures)
        dask_scheduler.allowed_failures = n
        return before

    return swap


@contextmanager
def open_executor(options: RunOptions, *, jobs: int = 1,
                  connect_timeout_s: float = CONNECT_TIMEOUT_S,
                  log: Callable[[str], None] = lambda _l: None) -> Iterator[Executor]:
    """The executor of ``options`` (module docstring), closed on exit (the client, and a
    cluster this call started).

    Args:
        jobs: threads of the default executor. connect_timeout_s: the deadline of joining
            (or starting) the cluster and finding a worker.

    Raises:
        FleetError: both ``cluster`` and ``hosts``; the cluster unreachable, without a
            worker, or a worker on another proofdiff (before any unit runs).
        proofdiff.fleet.hosts.HostsError: a hosts file that does not validate.
    """
    if options.cluster and options.hosts:
        raise FleetError("both --cluster and --hosts were given",
                         fix="give --cluster tcp://HOST:PORT to join a running scheduler, or "
                             "--hosts FILE to start one over SSH, not both")
    if not options.cluster and not options.hosts:
        yield ThreadExecutor(jobs)
        return
    cluster: Any = None
    hosts: Hosts | None = None
    if options.hosts:
        from proofdiff.fleet.hosts import load_hosts
        from proofdiff.fleet.ssh import start_ssh_cluster, usable_hosts

        hosts = usable_hosts(load_hosts(options.hosts), timeout_s=connect_timeout_s,
                             every=options.all_hosts, log=log)
        cluster = start_ssh_cluster(hosts, timeout_s=connect_timeout_s, log=log)
        from distributed import Client as DaskClient

        new_client: Any = DaskClient
        client: Any = new_client(cluster, timeout=f"{connect_timeout_s}s", set_as_default=False)
        _with_worker(client, str(cluster.scheduler_address), connect_timeout_s)
    else:
        client = connect(options.cluster, connect_timeout_s)
    restore: int | None = None
    try:
        check_versions(client)
        if not options.retry_lost:  # a unit whose worker dies errs at once, not run again
            restore = client.run_on_scheduler(_allowed_failures_set(0))
        ex = DaskExecutor(client, cluster, hosts=hosts, log=log, retry_lost=options.retry_lost)
        log(f"units on the {ex.description}")
        yield ex
    finally:
        if restore is not None:  # a scheduler this run joined is left as it was
            with contextlib.suppress(Exception):
                client.run_on_scheduler(_allowed_failures_set(restore))
        if cluster is not None:
            # the workers first, each closed by its nanny so that it removes its own scratch
            # folder on its host (the SSH processes are killed outright after)
            with contextlib.suppress(Exception):
                client.retire_workers(close_workers=True)
        client.close()
        if cluster is not None:
            cluster.close()
