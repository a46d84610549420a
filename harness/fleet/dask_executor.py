"""The fleet's units as tasks of a Dask cluster (:class:`DaskExecutor`): placed by Dask or
pinned to a host, each run on its worker with its shipped paths and the host's runtime
(:func:`proofdiff.fleet.on_worker.run_unit`), a lost host's units reported lost or run again,
a Ctrl-C carried to the units running on the workers (:func:`proofdiff.fleet.on_worker.
stop_units`) and raised here once they came back. :func:`proofdiff.fleet.executor.
open_executor` makes one."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, NoReturn, TypeVar

from proofdiff.fleet.executor import FleetError, UnitsInterrupted
from proofdiff.fleet.on_worker import LostBefore, run_unit, started_marker, stop_units
from proofdiff.fleet.hosts import Hosts
from proofdiff.fleet.shipping import ShipReport
from proofdiff.model.errors import ProofdiffError
from proofdiff.model.run_options import RunOptions

__all__ = ["INTERRUPT_S", "NO_WORKER_S", "DaskExecutor"]

#: How long the cluster may have no worker while units wait, s, before they are given up.
NO_WORKER_S = 120.0
#: How long interrupted units have to stop their daemons and come back, s.
INTERRUPT_S = 60.0

T = TypeVar("T")
R = TypeVar("R")


class DaskExecutor:
    """Units as tasks of a Dask cluster through ``client`` (a ``distributed.Client``, typed
    ``Any``: distributed is only partly typed; one task per unit, never cached: ``pure=False``);
    ``cluster``: the SSHCluster this run started, if any; ``left_out``: the hosts of its hosts
    file that failed their check (name -> why: :meth:`missing`)."""

    def __init__(self, client: Any, cluster: Any = None, no_worker_s: float = NO_WORKER_S,
                 hosts: Hosts | None = None, log: Callable[[str], None] = lambda _l: None,
                 retry_lost: bool = False, left_out: Mapping[str, str] | None = None,
                 joined: bool = False) -> None:
        self.client, self.cluster, self.no_worker_s = client, cluster, no_worker_s
        #: the scheduler is not this run's (``--cluster``): its settings are left as found,
        #: and a unit run again after its worker died is caught by the unit itself
        #: (:func:`~proofdiff.fleet.on_worker.run_unit`'s ``once``)
        self.joined = joined
        #: the hosts that left the cluster while the last units waited for ran (names)
        self.departed: list[str] = []
        #: hosts of the hosts file left out before the cluster started: name -> why
        self.left_out = dict(left_out or {})
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
        once = self.joined and not self.retry_lost
        pinned: dict[str, str] = {}
        if on is None:
            futures = self.client.map(run_unit, [fn] * len(items), list(items),
                                      [self.hosts] * len(items), [once] * len(items), key=keys,
                                      pure=False, resources=resources)
        else:  # each on its worker, by address (a name that is no worker's: lost at once)
            address = {n: a for a, n in self._worker_names().items()}
            pinned = {k: address.get(w, w) for k, w in zip(keys, on, strict=True)}
            futures = [self.client.submit(run_unit, fn, item, self.hosts, once, key=key,
                                          pure=False, resources=resources,
                                          workers=[pinned[key]], allow_other_workers=False)
                       for item, key in zip(items, keys, strict=True)]
        try:
            gone = self._wait(futures, pinned)
            got = [self._outcome(f, item, f"{name}-{i}", lost,
                                 dict(zip(keys, on or (), strict=False)).get(k) if k in gone
                                 else None)
                   for i, (f, item, k) in enumerate(zip(futures, items, keys, strict=True))]
        except KeyboardInterrupt:
            self._interrupted(futures, keys, items, name, lost)
        except _SchedulerLost as exc:  # nothing to cancel there any more
            raise FleetError(
                f"the Dask scheduler {self.client.scheduler.address} was lost while "
                f"{len(keys)} unit(s) of {name} ran ({exc}); nothing of them came back",
                fix="see why the scheduler went (its host, its log) and run again") from None
        except BaseException:
            self.client.cancel(futures)
            raise
        finally:
            if once:  # the units' start marks off the scheduler: it is left as found
                self._clear_marks(keys)
        self.placed.extend((f"{name}-{i}", where) for i, (where, _v) in enumerate(got))
        return got

    def _clear_marks(self, keys: Sequence[str]) -> None:
        """Remove the units' start marks (:func:`~proofdiff.fleet.on_worker.started_marker`)
        from the scheduler; a scheduler that cannot be reached keeps nothing of them anyway
        once it restarts."""
        from distributed import Event

        new_event: Any = Event  # distributed is only partly typed
        for k in keys:
            try:
                new_event(started_marker(k), self.client).clear()
            except Exception:  # noqa: BLE001 - a lost scheduler: nothing left to clear
                return

    def _interrupted(self, futures: Sequence[Any], keys: Sequence[str], items: Sequence[T],
                     name: str, lost: Callable[[T, str], R] | None) -> NoReturn:
        """A Ctrl-C here: the units not started are cancelled, the running ones told to stop
        on their workers (:func:`~proofdiff.fleet.on_worker.stop_units`) and waited for up to
        :data:`INTERRUPT_S`, so that each stops its daemons and gives back what it did.

        Raises:
            UnitsInterrupted: always (a Ctrl-C never ends in a normal result, whatever the
                units gave back): ``got`` holds the units that came back, where they ran
                (a differential or a probe comes back INTERRUPTED, or whole if it ended
                before the interrupt reached it), ``None`` for the others.
        """
        try:
            reached = self.client.run(stop_units(list(keys)))
        except Exception:  # noqa: BLE001 - a worker that cannot be asked: its units wait out
            reached = {}
        running = {k for hit in reached.values() for k in hit}
        self.client.cancel([f for f, k in zip(futures, keys, strict=True) if k not in running])
        self.log(f"interrupted: {len(running)} running unit(s) of {name} told to stop on their "
                 f"host(s), {len(keys) - len(running)} not started cancelled")
        deadline = time.monotonic() + INTERRUPT_S
        waited = [f for f, k in zip(futures, keys, strict=True) if k in running]
        while not all(f.done() for f in waited) and time.monotonic() < deadline:
            time.sleep(0.2)
        got: list[tuple[str, R] | None] = []
        for i, (f, item, k) in enumerate(zip(futures, items, keys, strict=True)):
            back = None
            if k in running and f.done() and f.status == "finished":
                try:
                    back = self._outcome(f, item, f"{name}-{i}", lost)
                except BaseException:  # noqa: BLE001 - what a stopped unit raised: not back
                    back = None
            got.append(back)
        self.client.cancel([f for f in futures if not f.done()])
        raise UnitsInterrupted(got)

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
            return self._lost(item, pinned_to_gone, lost, (
                f"unit {unit} was lost: host {pinned_to_gone}, the one it must run on, is not "
                "in the cluster (it went away, never joined, or its nanny restarted it)"),
                "see why the host went (its console, dmesg, the worker's log) and run again")
        try:
            where, value = future.result()
            if isinstance(value, LostBefore):  # run again after its worker died: not ours
                gone = " or ".join(self.departed) or "that ran it"
                return self._lost(item, self.departed[-1] if self.departed else str(where),
                                  lost, (f"unit {unit} was lost: host {gone} went away while "
                                         "it ran (its Dask worker died); nothing of it came "
                                         "back"),
                    "see why the host went (its console, dmesg, the worker's log), or give "
                    "--retry-lost to run such a unit again on another host")
            return str(where), value
        except KilledWorker as exc:
            host = str(exc.last_worker.name)
            if self.retry_lost:  # Dask re-ran it on other workers; each of them died too
                raise FleetError(f"unit {unit} killed every worker it ran on, the last on "
                                 f"host {host}: {exc}",
                                 fix="read the workers' logs (dask worker ...) for the cause; "
                                     "the unit is retried on another worker up to "
                                     "distributed.scheduler.allowed-failures times") from None
        return self._lost(item, host, lost, (
            f"unit {unit} was lost: host {host} went away while it ran (its Dask worker "
            "died); nothing of it came back"),
            "see why the host went (its console, dmesg, the worker's log), or give "
            "--retry-lost to run such a unit again on another host")

    def _lost(self, item: T, host: str, lost: Callable[[T, str], R] | None, why: str,
              fix: str) -> tuple[str, R]:
        """``(host, lost(item, message))`` for a lost unit, logged.

        Raises:
            FleetError: ``lost`` is ``None`` (``why``, with ``fix``).
        """
        if lost is None:
            raise FleetError(why, fix=fix)
        self.log(f"{why} (fix: {fix})")
        return host, lost(item, f"{why} (fix: {fix})")

    def workers(self) -> list[str]:
        return sorted(self._worker_names().values())

    def missing(self) -> dict[str, str]:
        here = set(self._worker_names().values())
        gone = {n: "its worker is not in the cluster (it went away, or never joined)"
                for n in self.hosts if n not in here}
        return {**self.left_out, **gone}

    def process_hosts(self) -> list[str]:
        return sorted(n for n, h in self.hosts.items() if h.runtime == "process")

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

    def ship_path(self, what: str, path: str, *, programs: bool = False) -> str:
        from proofdiff.fleet.shipping import bundle_of, ship

        bundle = bundle_of(what, path, named=not programs, programs=programs)
        with _shipping(self.client):
            self.shipped.extend(ship(self.client, [bundle], log=self.log))
        return bundle.ref

    def _wait(self, futures: Sequence[Any], pinned: Mapping[str, str] | None = None,
              ) -> dict[str, str]:
        """Until every future is done; a cluster left without any worker for
        ``no_worker_s`` ends the wait. ``pinned``: unit key -> the address of the worker it
        must run on; a unit whose worker is not (or no longer) in the cluster is cancelled,
        as it could run nowhere else: also when a nanny restarted that worker, which comes
        back under the same name at another address (Dask would hold the unit for the old
        address for ever).

        Returns:
            The pinned units so cancelled: key -> the worker's address.

        Raises:
            FleetError: no worker for ``no_worker_s`` (the units still pending named).
            _SchedulerLost: the client lost its scheduler (it gave up reconnecting).
        """
        try:
            return self._wait_on(futures, pinned)
        except (OSError, TimeoutError) as exc:  # distributed's CommClosedError included
            raise _SchedulerLost(f"{type(exc).__name__}: {exc}") from None

    def _wait_on(self, futures: Sequence[Any], pinned: Mapping[str, str] | None,
                 ) -> dict[str, str]:
        """:meth:`_wait`'s loop; the client's calls raise what distributed raises."""
        alone_since: float | None = None
        names = self._worker_names()
        gone_with: dict[str, str] = {}
        self.departed = []  # this wait's: the units it waits for ran while they left
        while True:
            for f in futures:
                where = (pinned or {}).get(str(f.key))
                if where is not None and where not in names and not f.done():
                    gone_with[str(f.key)] = where
                    f.cancel()
            if all(f.done() or str(f.key) in gone_with for f in futures):
                return gone_with  # errored units count as done
            time.sleep(0.5)  # a unit is a run of seconds at least
            alive = set(self.client.nthreads())
            for gone in sorted(set(names) - alive):
                self.departed.append(names[gone])
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


class _SchedulerLost(Exception):
    """The client lost its scheduler while units ran (distributed gave up reconnecting)."""


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
