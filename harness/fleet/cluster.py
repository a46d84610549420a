"""Joining a Dask cluster for the fleet's units: its scheduler must speak TLS with the
credentials of Dask's configuration (a ``tcp://`` one only with ``--insecure``), answer and have
a worker within a deadline, and every worker must run the caller's proofdiff; and the
scheduler's ``allowed_failures`` set for a run (:mod:`proofdiff.fleet.executor` decides when).

A ``tls://`` scheduler is joined as ``dask`` joins one: with ``distributed.Security``'s
configuration (``distributed.comm.tls.ca-file``, ``distributed.comm.tls.client.cert`` and
``.key``; e.g. ``DASK_DISTRIBUTED__COMM__TLS__CA_FILE``, ``..._CLIENT__CERT``,
``..._CLIENT__KEY`` in the environment), the same files its workers were started with.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from proofdiff.fleet.executor import CONNECT_TIMEOUT_S, FleetError
from proofdiff.fleet.version import proofdiff_version

__all__ = ["TLS_ENV", "allowed_failures_set", "check_versions", "client_security", "connect",
           "with_worker"]

_ADDRESS = re.compile(r"^(tcp|tls)://[A-Za-z0-9.\-\[\]:]+:\d{1,5}$")
#: The environment variables that give Dask's client its TLS credentials.
TLS_ENV = ("DASK_DISTRIBUTED__COMM__TLS__CA_FILE", "DASK_DISTRIBUTED__COMM__TLS__CLIENT__CERT",
           "DASK_DISTRIBUTED__COMM__TLS__CLIENT__KEY")


def client_security(address: str, *, insecure: bool = False) -> Any:
    """The ``distributed.Security`` to join ``address`` with: Dask's configured TLS
    credentials for ``tls://``; none for ``tcp://``, which ``insecure`` must allow.

    Raises:
        FleetError: a ``tcp://`` address without ``insecure``; a ``tls://`` one with no CA file
            or client certificate configured (each with the fix).
    """
    from distributed.security import Security

    new_security: Any = Security  # distributed is only partly typed
    if address.startswith("tcp://"):
        if not insecure:
            raise FleetError(
                f"--cluster {address} is a plain TCP scheduler: its traffic is neither "
                "authenticated nor encrypted, so anyone who reaches its port can run code on "
                "every worker and forge a unit's result",
                fix="start the scheduler and its workers with TLS (dask scheduler --tls-ca-file "
                    "CA --tls-cert CERT --tls-key KEY, the same for each dask worker) and give "
                    "--cluster tls://HOST:PORT with " + ", ".join(TLS_ENV) + "; or, on a "
                    "network only you reach, pass --insecure")
        return new_security(require_encryption=False)
    sec = new_security()
    if not (sec.tls_ca_file and sec.tls_client_cert):
        raise FleetError(f"--cluster {address} speaks TLS, and Dask's configuration gives no "
                         "CA file or client certificate to join it with",
                         fix="set " + ", ".join(TLS_ENV) + " to the cluster's CA and a "
                             "certificate and key it trusts (or distributed.comm.tls.* in "
                             "~/.config/dask/*.yaml)")
    return sec


def connect(address: str, timeout_s: float = CONNECT_TIMEOUT_S, *,
            insecure: bool = False) -> Any:
    """A client of the scheduler at ``address``, with a worker, within ``timeout_s``
    (:func:`client_security`: TLS, or plain TCP where ``insecure``).

    Raises:
        FleetError: a malformed address; a plain one without ``insecure``; TLS without
            credentials; no scheduler answered (or let this client in), or it had no worker,
            within ``timeout_s`` (each with the fix).
    """
    if not _ADDRESS.match(address):
        raise FleetError(f"--cluster {address!r} is no scheduler address",
                         fix="give tls://HOST:PORT, as `dask scheduler` prints it, e.g. "
                             "tls://127.0.0.1:8786 (or --hosts FILE to start one over SSH)")
    security = client_security(address, insecure=insecure)
    from distributed import Client as DaskClient

    new_client: Any = DaskClient  # distributed is only partly typed
    try:
        client: Any = new_client(address, timeout=f"{timeout_s}s", set_as_default=False,
                                 security=security)
    except (OSError, TimeoutError) as exc:
        raise FleetError(f"no Dask scheduler answered at {address} within {timeout_s:.0f} s, "
                         "or it did not let this client in "
                         f"({type(exc).__name__}: {str(exc).splitlines()[0][:200]})",
                         fix="start one there (dask scheduler --host 127.0.0.1 --port PORT) "
                             "with its workers, or fix --cluster; for tls://, give the "
                             "certificate that cluster trusts (" + ", ".join(TLS_ENV) + ")"
                         ) from None
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
