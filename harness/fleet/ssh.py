"""A Dask ``SSHCluster`` over a hosts file: the scheduler on the file's ``scheduler`` host, one
worker per ``[[host]]``, named by the host, with ``slots`` threads and ``GPU`` resources.

``distributed.deploy.ssh.SSHCluster`` gives every worker the same options; a fleet's hosts
differ (slots, GPUs, Python, key), so the same ``SpecCluster`` it builds is built here with
each host's own. Every server listens on its host's SSH address (the scheduler's dashboard on a
free port there): on a fleet of one machine, the loopback only. Exercised against real SSH
hosts by tests/e2e/test_fleet_ssh.py (containers with sshd and no Docker).
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Callable
from typing import Any

from proofdiff.fleet.hosts import Host, Hosts

__all__ = ["DASK_DIR", "cluster_spec", "start_ssh_cluster"]

#: A worker's scratch folder, relative to the SSH login's home: beside the shipped artifacts
#: in the host's cache, not in /tmp (Dask purges a dead worker's folder at the next start).
DASK_DIR = ".cache/proofdiff/dask"


def _connect(host: Host, timeout_s: float) -> dict[str, Any]:
    return {**host.connect_options, "known_hosts": None, "connect_timeout": timeout_s}


def cluster_spec(hosts: Hosts, timeout_s: float) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(workers, scheduler)`` specs for ``distributed.SpecCluster`` (the shape
    ``distributed.deploy.ssh.SSHCluster`` builds), without starting anything.

    Worker ``h.name`` runs ``h.python -m distributed.cli.dask_spec`` on ``h.ssh`` with
    ``nthreads = h.slots`` and, where ``h.gpus``, ``resources = {"GPU": h.gpus}``. The
    dashboard is off; SSH connects give up after ``timeout_s``.
    """
    from distributed.deploy.ssh import Scheduler, Worker

    # the scheduler's host is a fleet host when the addresses match (its key and Python too)
    sched_host = next((h for h in hosts.hosts if h.ssh == hosts.scheduler),
                      Host(name="scheduler", ssh=hosts.scheduler))
    scheduler = {"cls": Scheduler, "options": {
        "address": sched_host.ssh_host, "connect_options": _connect(sched_host, timeout_s),
        "kwargs": {"port": hosts.scheduler_port, "host": sched_host.ssh_host,
                   "dashboard_address": f"{sched_host.ssh_host}:0"},
        "remote_python": sched_host.python}}
    workers = {h.name: {"cls": Worker, "options": {
        "address": h.ssh_host, "connect_options": _connect(h, timeout_s),
        "kwargs": {"nthreads": h.slots, "resources": {"GPU": h.gpus} if h.gpus else {},
                   "name": h.name, "host": h.ssh_host, "local_directory": DASK_DIR},
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
        with warnings.catch_warnings():  # cryptography's notice about DSA keys, at import
            warnings.simplefilter("ignore")
            import asyncssh  # noqa: F401 - SSHCluster's SSH
    except ImportError:
        raise FleetError("--hosts starts its workers over SSH with asyncssh, which is not "
                         "installed", fix="pip install asyncssh==2.24.1, or join a running "
                         "scheduler with --cluster tcp://HOST:PORT") from None
    from distributed import SpecCluster
    spec_cluster: Any = SpecCluster  # distributed is only partly typed

    # one line per host's process start comes back through this logger: the caller's log says
    # what matters (the hosts, the units, what was shipped)
    logging.getLogger("distributed.deploy.ssh").setLevel(logging.WARNING)
    workers, scheduler = cluster_spec(hosts, timeout_s)
    log(f"starting a Dask SSHCluster: scheduler on {hosts.scheduler}, "
        f"{len(workers)} worker(s) ({', '.join(workers)})")
    import dask.config

    try:
        # the scheduler's scratch too (the config travels with each process started over SSH)
        with dask.config.set({"temporary-directory": DASK_DIR}):
            return spec_cluster(workers, scheduler, name="proofdiff-fleet")
    except Exception as exc:  # noqa: BLE001 - SSH, the remote Python, the network: all fatal
        raise FleetError(f"the SSHCluster of {hosts.source} did not start: "
                         f"{type(exc).__name__}: {exc}",
                         fix="check that each host answers `ssh HOST python3 -c 'import "
                             "proofdiff, distributed'`") from None
