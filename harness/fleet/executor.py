"""One executor for every workflow's units: threads on this machine, or a Dask cluster.

A workflow splits its work into units (a differential, a bisection probe, a regression case)
and hands them to :meth:`Executor.map`; each unit is a module-level function of one argument
that returns the model's msgspec structs (they pickle, so they come back from a Dask worker
unchanged). The caller judges the results and writes the report, once, on its side.

:func:`open_executor` picks the executor from the run options:

* neither ``cluster`` nor ``hosts``: :class:`ThreadExecutor` (``jobs`` threads; one unit, or
  one job, runs in the caller's own thread, so a Ctrl-C reaches it as before);
* ``cluster`` (``tls://HOST:PORT`` with Dask's configured TLS credentials; ``tcp://`` only
  with ``insecure``: :mod:`proofdiff.fleet.cluster`): a ``distributed.Client`` joins that
  scheduler;
* ``hosts`` (a hosts file, :mod:`proofdiff.fleet.hosts`; each host's SSH key checked against
  its known_hosts): the run's own TLS credentials are made and written to those hosts
  (:mod:`proofdiff.fleet.tls`), a Dask ``SSHCluster`` is started over them with those
  (:mod:`proofdiff.fleet.ssh`), and a client joins it; the credentials are removed from the
  hosts when the run ends.

Before any unit runs, the cluster must answer within ``connect_timeout_s`` and have a worker,
and every worker must run the caller's proofdiff (:func:`~proofdiff.fleet.version.
proofdiff_version`: the version and a digest of the source); anything else is a
:class:`FleetError` naming the cause and the fix. ``distributed`` is imported only then, so a
run on threads never loads it (:mod:`proofdiff.fleet.cluster` joins the cluster,
:mod:`proofdiff.fleet.dask_executor` runs the units there).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor, wait
from contextlib import contextmanager
from typing import Any, Protocol, TypeVar

from proofdiff.model import interrupt, progress
from proofdiff.model.errors import ProofdiffError
from proofdiff.model.run_options import RunOptions

__all__ = ["CONNECT_TIMEOUT_S", "Executor", "FleetError", "ThreadExecutor", "UnitsInterrupted",
           "open_executor"]

#: How long a scheduler has to answer, and to have a worker, s.
CONNECT_TIMEOUT_S = 30.0

T = TypeVar("T")
R = TypeVar("R")


class FleetError(ProofdiffError):
    """The cluster cannot run the units: unreachable, no worker, another proofdiff on a
    worker, a worker lost for good."""


class UnitsInterrupted(KeyboardInterrupt):
    """A Ctrl-C (or SIGTERM) while units ran: raised by :meth:`Executor.map_placed` once the
    running units were stopped and came back (or their wait ran out), never a normal return.

    Attributes:
        got: per item, in order: ``(where it ran, its result)`` of a unit that came back
            (stopped: a differential INTERRUPTED; or whole, when it ended before the interrupt
            reached it), ``None`` for one that did not (not started, or not back in time).
    """

    def __init__(self, got: Sequence[tuple[str, Any] | None]) -> None:
        super().__init__()
        self.got = list(got)


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
        """:meth:`map`, each result with where it ran (``local``, or the worker's name). A
        Ctrl-C while units run raises :class:`UnitsInterrupted` with what came back, once
        the running units stopped: never a normal return.

        ``lost(item, message)``: the result of a unit whose host went away while it ran
        (``message`` names the unit and the host, with the fix), where ``retry_lost`` is off;
        ``None``: such a unit is a :class:`FleetError`. ``on``: the worker each item must run
        on (a name of :meth:`workers`), else wherever the engine puts it."""
        ...

    def workers(self) -> list[str]:
        """The names of the machines units can run on now (``["local"]`` here)."""
        ...

    def missing(self) -> dict[str, str]:
        """The hosts of the hosts file that cannot run units now: name -> why (it failed its
        check before the cluster started, or its worker is not in the cluster); ``{}`` here
        and on a joined cluster (no hosts file names what should be there)."""
        ...

    def ship(self, options: RunOptions) -> RunOptions:
        """``options`` ready to run where the units run: on other machines, its artifacts
        (found or built here first) shipped to every worker (:mod:`proofdiff.fleet.shipping`)
        and named by reference; here, unchanged."""
        ...

    def ship_path(self, what: str, path: str, *, programs: bool = False) -> str:
        """A file or folder the units read, shipped like :meth:`ship`'s artifacts under its
        own name (its reference), or ``path`` unchanged here. ``programs``: a folder's
        executable files at its top alone (a build's programs, not what lies beside them)."""
        ...

    def process_hosts(self) -> list[str]:
        """The hosts whose hosts-file runtime is ``process`` (their daemons run as processes,
        whatever a profile says); [] here and on a joined cluster."""
        ...


class ThreadExecutor:
    """Units on threads of this process (``jobs`` at once; ``jobs`` = 1 or one unit: in the
    caller's thread). A Ctrl-C (:mod:`proofdiff.model.interrupt`: every unit's waits see it)
    ends the units at their next poll and raises :class:`UnitsInterrupted` with those that
    came back, also where a unit turned it into its own result (INTERRUPTED)."""

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
        got: list[tuple[str, R] | None] = [None] * len(pairs)
        try:
            if self.slots == 1 or len(pairs) <= 1:
                for i, p in enumerate(pairs):
                    got[i] = one(p)
                    interrupt.check()  # a unit that swallowed a Ctrl-C: no next one
            else:
                with ThreadPoolExecutor(max_workers=min(self.slots, len(pairs))) as pool:
                    # progress and the interrupt reach the pool's threads
                    futures = [pool.submit(progress.carried(one), p) for p in pairs]
                    try:
                        for i, f in enumerate(futures):
                            got[i] = f.result()
                    except KeyboardInterrupt:  # the running units stop at their next poll
                        wait(futures)
                        got = [f.result() if f.done() and not f.cancelled()
                               and f.exception() is None else None for f in futures]
                        raise
            interrupt.check()
        except KeyboardInterrupt:
            raise UnitsInterrupted(got) from None
        return [g for g in got if g is not None]

    def workers(self) -> list[str]:
        return ["local"]

    def missing(self) -> dict[str, str]:
        return {}

    def ship(self, options: RunOptions) -> RunOptions:
        return options

    def ship_path(self, what: str, path: str, *, programs: bool = False) -> str:
        return path

    def process_hosts(self) -> list[str]:
        return []


def _every_host(hosts: Any) -> list[Any]:
    """The hosts of a hosts file and the scheduler's (a :class:`~proofdiff.fleet.hosts.Host`
    each, by name)."""
    from proofdiff.fleet.ssh import scheduler_host

    return list({h.name: h for h in (*hosts.hosts, scheduler_host(hosts))}.values())


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
        FleetError: both ``cluster`` and ``hosts``; the ``fleet`` extra not installed
            (:func:`proofdiff.model.extras.require`); the cluster unreachable, without a
            worker, or a worker on another proofdiff (before any unit runs).
        proofdiff.fleet.hosts.HostsError: a hosts file that does not validate.
    """
    if options.cluster and options.hosts:
        raise FleetError("both --cluster and --hosts were given",
                         fix="give --cluster tls://HOST:PORT to join a running scheduler, or "
                             "--hosts FILE to start one over SSH, not both")
    if not options.cluster and not options.hosts:
        yield ThreadExecutor(jobs)
        return
    from proofdiff.model.extras import require

    for module in ("distributed", "dask"):  # before anything is dialled or started
        require("fleet", module, needed_by="--cluster/--hosts", error=FleetError)
    from proofdiff.fleet.cluster import (allowed_failures_set, check_versions, connect,
                                         with_worker)
    from proofdiff.fleet.dask_executor import DaskExecutor
    from proofdiff.fleet.hosts import Hosts, load_hosts

    cluster: Any = None
    hosts: Hosts | None = None
    left_out: dict[str, str] = {}
    if options.hosts:
        from proofdiff.fleet.hosts import accepting_unknown_keys
        from proofdiff.fleet.ssh import start_ssh_cluster, usable_hosts
        from proofdiff.fleet.tls import install_credentials, new_credentials, remove_credentials

        loaded = load_hosts(options.hosts)
        hosts, left_out = usable_hosts(accepting_unknown_keys(loaded)
                                       if options.accept_unknown_host_keys else loaded,
                                       timeout_s=connect_timeout_s, every=options.all_hosts,
                                       log=log)
        creds = new_credentials()
        reached = _every_host(hosts)
        try:
            install_credentials(reached, creds, timeout_s=connect_timeout_s)
            cluster = start_ssh_cluster(hosts, creds, timeout_s=connect_timeout_s, log=log)
            from distributed import Client as DaskClient

            new_client: Any = DaskClient
            client: Any = new_client(cluster, timeout=f"{connect_timeout_s}s",
                                     set_as_default=False, security=creds.security())
            with_worker(client, str(cluster.scheduler_address), connect_timeout_s)
        except BaseException:
            if cluster is not None:
                with contextlib.suppress(Exception):
                    cluster.close()
            remove_credentials(reached, creds, log=log)
            raise
    else:
        client = connect(options.cluster, connect_timeout_s, insecure=options.insecure)
        if options.insecure and str(options.cluster).startswith("tcp://"):
            log(f"--insecure: joining {options.cluster} over plain TCP (no authentication, no "
                "encryption)")
    try:
        check_versions(client)
        if cluster is not None and not options.retry_lost:
            # this run's own scheduler: a unit whose worker dies errs at once, not run again;
            # a joined one (--cluster) is left as it was found, its units catch that
            # themselves (proofdiff.fleet.on_worker.run_unit)
            client.run_on_scheduler(allowed_failures_set(0))
        ex = DaskExecutor(client, cluster, hosts=hosts, log=log, retry_lost=options.retry_lost,
                          left_out=left_out, joined=cluster is None)
        log(f"units on the {ex.description}")
        yield ex
    finally:
        if cluster is not None:
            # the workers first, each closed by its nanny so that it removes its own scratch
            # folder on its host (the SSH processes are killed outright after)
            with contextlib.suppress(Exception):
                client.retire_workers(close_workers=True)
        client.close()
        if cluster is not None:
            address = str(cluster.scheduler_address)
            cluster.close()
            if hosts is not None:  # nothing of the run left on a host once it has ended
                from proofdiff.fleet.ssh_leftovers import stop_leftovers

                stop_leftovers(_every_host(hosts), address, log=log)
                remove_credentials(_every_host(hosts), creds, log=log)
