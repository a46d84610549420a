"""A Dask ``SSHCluster`` over a hosts file: the scheduler on the file's ``scheduler`` host, one
worker per ``[[host]]``, named by the host, with ``slots`` threads and ``GPU`` resources.

``distributed.deploy.ssh.SSHCluster`` gives every worker the same options; a fleet's hosts
differ (slots, GPUs, Python), so the same ``SpecCluster`` it builds is built here with each
host's own. Not yet exercised against real SSH hosts (README: A fleet of hosts): the SSH host
containers of the tests do not exist yet; :func:`cluster_spec` is unit-tested.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from proofdiff.fleet.hosts import Host, Hosts

__all__ = ["cluster_spec", "start_ssh_cluster"]


def _connect(ssh: str, timeout_s: float) -> dict[str, Any]:
    return {**Host(name="scheduler", ssh=ssh).connect_options, "known_hosts": None,
            "connect_timeout": timeout_s}


def cluster_spec(hosts: Hosts, timeout_s: float) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(workers, scheduler)`` specs for ``distributed.SpecCluster`` (the shape
    ``distributed.deploy.ssh.SSHCluster`` builds), without starting anything.

    Worker ``h.name`` runs ``h.python -m distributed.cli.dask_spec`` on ``h.ssh`` with
    ``nthreads = h.slots`` and, where ``h.gpus``, ``resources = {"GPU": h.gpus}``. The
    dashboard is off; SSH connects give up after ``timeout_s``.
    """
    from distributed.deploy.ssh import Scheduler, Worker

    sched_host = Host(name="scheduler", ssh=hosts.scheduler)
    first = hosts.hosts[0]
    scheduler = {"cls": Scheduler, "options": {
        "address": sched_host.ssh_host, "connect_options": _connect(hosts.scheduler, timeout_s),
        "kwargs": {"port": hosts.scheduler_port, "dashboard_address": None},
        "remote_python": first.python if hosts.scheduler == first.ssh else "python3"}}
    workers = {h.name: {"cls": Worker, "options": {
        "address": h.ssh_host, "connect_options": _connect(h.ssh, timeout_s),
        "kwargs": {"nthreads": h.slots, "resources": {"GPU": h.gpus} if h.gpus else {}},
        "worker_class": "distributed.Nanny", "remote_python": h.python}}
        for h in hosts.hosts}
    return workers, scheduler


def start_ssh_cluster(hosts: Hosts, *, timeout_s: float,
                      log: Callable[[str], None] = lambda _l: None) -> Any:
    """Start the cluster of :func:`cluster_spec` (blocks until every worker has started).

    Raises:
        proofdiff.fleet.executor.FleetError: ``asyncssh`` is not installed, or a host did not
            answer or start its process (the host and the cause named).
    """
    from proofdiff.fleet.executor import FleetError

    try:
        import asyncssh  # type: ignore[import-not-found]  # noqa: F401 - SSHCluster's SSH
    except ImportError:
        raise FleetError("--hosts starts its workers over SSH with asyncssh, which is not "
                         "installed", fix="pip install asyncssh==2.24.1, or join a running "
                         "scheduler with --cluster tcp://HOST:PORT") from None
    from distributed import SpecCluster
    spec_cluster: Any = SpecCluster  # distributed is only partly typed

    workers, scheduler = cluster_spec(hosts, timeout_s)
    log(f"starting a Dask SSHCluster: scheduler on {hosts.scheduler}, "
        f"{len(workers)} worker(s) ({', '.join(workers)})")
    try:
        return spec_cluster(workers, scheduler, name="proofdiff-fleet")
    except Exception as exc:  # noqa: BLE001 - SSH, the remote Python, the network: all fatal
        raise FleetError(f"the SSHCluster of {hosts.source} did not start: "
                         f"{type(exc).__name__}: {exc}",
                         fix="check that each host answers `ssh HOST python3 -c 'import "
                             "proofdiff, distributed'`") from None
