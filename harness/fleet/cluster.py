"""Joining a Dask cluster for the fleet's units: its scheduler must answer and have a worker
within a deadline, and every worker must run the caller's proofdiff; and the scheduler's
``allowed_failures`` set for a run (:mod:`proofdiff.fleet.executor` decides when)."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from proofdiff.fleet.executor import CONNECT_TIMEOUT_S, FleetError
from proofdiff.fleet.version import proofdiff_version

__all__ = ["allowed_failures_set", "check_versions", "connect", "with_worker"]

_ADDRESS = re.compile(r"^(tcp|tls)://[A-Za-z0-9.\-\[\]:]+:\d{1,5}$")


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
    with_worker(client, address, timeout_s)
    return client


def with_worker(client: Any, address: str, timeout_s: float) -> None:
    """Return once the scheduler at ``address`` has a worker.

    Raises:
        FleetError: none within ``timeout_s`` (the client closed).
    """
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


def allowed_failures_set(n: int) -> Callable[..., int]:
    """A function for ``Client.run_on_scheduler`` that sets the scheduler's
    ``allowed_failures`` (how many workers may die running one task before it errs with
    ``KilledWorker``; Dask's default 3) to ``n`` and returns the previous value. Made here, so
    that it pickles by value: the scheduler need not import proofdiff."""

    def swap(dask_scheduler: Any) -> int:
        before = int(dask_scheduler.allowed_failures)
        dask_scheduler.allowed_failures = n
        return before

    return swap
