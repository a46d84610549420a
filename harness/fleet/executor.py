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
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any, Protocol, TypeVar

from proofdiff.model import progress
from proofdiff.model.errors import ProofdiffError
from proofdiff.model.run_options import RunOptions

__all__ = ["CONNECT_TIMEOUT_S", "Executor", "FleetError", "ThreadExecutor", "open_executor"]

#: How long a scheduler has to answer, and to have a worker, s.
CONNECT_TIMEOUT_S = 30.0

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
        FleetError: both ``cluster`` and ``hosts``; the cluster unreachable, without a
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
    from proofdiff.fleet.cluster import (allowed_failures_set, check_versions, connect,
                                         with_worker)
    from proofdiff.fleet.dask_executor import DaskExecutor
    from proofdiff.fleet.hosts import Hosts, load_hosts

    cluster: Any = None
    hosts: Hosts | None = None
    if options.hosts:
        from proofdiff.fleet.hosts import accepting_unknown_keys
        from proofdiff.fleet.ssh import start_ssh_cluster, usable_hosts
        from proofdiff.fleet.tls import install_credentials, new_credentials, remove_credentials

        loaded = load_hosts(options.hosts)
        hosts = usable_hosts(accepting_unknown_keys(loaded) if options.accept_unknown_host_keys
                             else loaded, timeout_s=connect_timeout_s,
                             every=options.all_hosts, log=log)
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
    restore: int | None = None
    try:
        check_versions(client)
        if not options.retry_lost:  # a unit whose worker dies errs at once, not run again
            restore = client.run_on_scheduler(allowed_failures_set(0))
        ex = DaskExecutor(client, cluster, hosts=hosts, log=log, retry_lost=options.retry_lost)
        log(f"units on the {ex.description}")
        yield ex
    finally:
        if restore is not None:  # a scheduler this run joined is left as it was
            with contextlib.suppress(Exception):
                client.run_on_scheduler(allowed_failures_set(restore))
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
