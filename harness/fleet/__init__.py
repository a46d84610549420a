"""A fleet of hosts: one executor for every workflow's units (threads, or a Dask cluster), and
the hosts file an SSHCluster starts over. docs/guide/fleet.md."""

from __future__ import annotations

from proofdiff.fleet.dask_executor import DaskExecutor
from proofdiff.fleet.executor import Executor, FleetError, ThreadExecutor, open_executor
from proofdiff.fleet.hosts import Host, Hosts, HostsError, load_hosts, parse_hosts

__all__ = ["DaskExecutor", "Executor", "FleetError", "Host", "Hosts", "HostsError",
           "ThreadExecutor", "load_hosts", "open_executor", "parse_hosts"]
