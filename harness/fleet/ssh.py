"""A Dask ``SSHCluster`` over a hosts file: the scheduler on the file's ``scheduler`` host, one
worker per ``[[host]]``, named by the host, with ``slots`` threads and ``GPU`` resources.

``distributed.deploy.ssh.SSHCluster`` gives every worker the same options; a fleet's hosts
differ (slots, GPUs, Python, key), so the same ``SpecCluster`` it builds is built here with
each host's own. Every server listens on its host's SSH address (the scheduler's dashboard on a
free port there): on a fleet of one machine, the loopback only. Exercised against real SSH
hosts by tests/e2e/test_fleet_ssh.py (containers with sshd and no Docker).
"""

from __future__ import annotations

import asyncio
import logging
import shlex
import warnings
from collections.abc import Callable
from typing import Any

import msgspec

from proofdiff.fleet.hosts import Host, Hosts
from proofdiff.fleet.tls import RunCredentials

__all__ = ["DASK_DIR", "HostCheck", "check_hosts", "cluster_spec", "scheduler_host", "ssh_run",
           "start_ssh_cluster", "usable_hosts"]

#: A worker's scratch folder, relative to the SSH login's home: beside the shipped artifacts
#: in the host's cache, not in /tmp (Dask purges a dead worker's folder at the next start).
DASK_DIR = ".cache/proofdiff/dask"
#: Where a host's Dask HTTP servers listen: nothing of the fleet needs them.
LOOPBACK = "127.0.0.1"


def _connect(host: Host, timeout_s: float) -> dict[str, Any]:
    return {**host.connect_options, "connect_timeout": timeout_s}


def scheduler_host(hosts: Hosts) -> Host:
    """The host the scheduler runs on: a fleet host when the addresses match (its key and
    Python too), else one named ``scheduler``."""
    return next((h for h in hosts.hosts if h.ssh == hosts.scheduler),
                Host(name="scheduler", ssh=hosts.scheduler, known_hosts=hosts.known_hosts,
                     accept_unknown_key=hosts.accept_unknown_keys))


def cluster_spec(hosts: Hosts, timeout_s: float) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(workers, scheduler)`` specs for ``distributed.SpecCluster`` (the shape
    ``distributed.deploy.ssh.SSHCluster`` builds), without starting anything.

    Worker ``h.name`` runs ``h.python -m distributed.cli.dask_spec`` on ``h.ssh`` (the Python
    quoted for the remote shell, which runs the line as distributed builds it) with
    ``nthreads = h.slots`` and, where ``h.gpus``, ``resources = {"GPU": h.gpus}``. Every
    server speaks TLS (:mod:`proofdiff.fleet.tls` gives the run's credentials) on its host's SSH
    address, where the others reach it; the HTTP servers that distributed starts beside them
    (the dashboard's) listen on the host's loopback alone, with no dashboard. SSH connects give
    up after ``timeout_s``.
    """
    from distributed.deploy.ssh import Scheduler, Worker

    sched_host = scheduler_host(hosts)
    scheduler = {"cls": Scheduler, "options": {
        "address": sched_host.ssh_host, "connect_options": _connect(sched_host, timeout_s),
        "kwargs": {"port": hosts.scheduler_port, "host": sched_host.ssh_host,
                   "protocol": "tls", "dashboard": False,
                   "dashboard_address": f"{LOOPBACK}:0"},
        "remote_python": shlex.quote(sched_host.python)}}
    workers = {h.name: {"cls": Worker, "options": {
        "address": h.ssh_host, "connect_options": _connect(h, timeout_s),
        "kwargs": {"nthreads": h.slots, "resources": {"GPU": h.gpus} if h.gpus else {},
                   "name": h.name, "host": h.ssh_host, "protocol": "tls",
                   "dashboard_address": f"{LOOPBACK}:0", "local_directory": DASK_DIR},
        "worker_class": "distributed.Nanny", "remote_python": shlex.quote(h.python)}}
        for h in hosts.hosts}
    return workers, scheduler


class HostCheck(msgspec.Struct, frozen=True):
    """One host's check before the cluster starts: ``problem`` '' = it can run units."""

    host: str
    problem: str = ""
    fix: str = ""

    def line(self) -> str:
        """``host-a: ok`` or ``host-b: <problem> (fix: ...)``."""
        return f"{self.host}: ok" if not self.problem else f"{self.host}: {self.problem} " \
            f"(fix: {self.fix})"


def _asyncssh() -> Any:
    """The asyncssh module (SSHCluster's SSH and the host checks').

    Raises:
        proofdiff.fleet.executor.FleetError: it is not installed.
    """
    from proofdiff.fleet.executor import FleetError
    from proofdiff.model.extras import require

    with warnings.catch_warnings():  # cryptography's notice about DSA keys, at import
        warnings.simplefilter("ignore")
        return require("fleet", "asyncssh", needed_by="--hosts (SSH to each host)",
                       error=FleetError)


async def ssh_run(host: Host, command: str, timeout_s: float, *,
                  stdin: str | None = None) -> str:
    """``command``'s standard output on ``host``, run over SSH (``timeout_s`` for it all),
    with ``stdin`` on its standard input (the channel's, never its command line).

    Raises:
        asyncssh.Error, OSError: the host did not answer or refused the login.
        asyncio.TimeoutError: no answer within ``timeout_s``.
    """
    asyncssh = _asyncssh()
    async with asyncssh.connect(host.ssh_host, **_connect(host, timeout_s)) as conn:
        got = await asyncio.wait_for(conn.run(command, input=stdin), timeout_s)
    return str(got.stdout or "")


async def _check(host: Host, want: str, timeout_s: float) -> HostCheck:
    asyncssh = _asyncssh()

    probe = (f"{shlex.quote(host.python)} -c 'import distributed; from proofdiff.fleet.version "
             "import proofdiff_version as v; print(v())'")
    if host.runtime == "process" and host.bin_dir:
        probe += f" && test -d {shlex.quote(host.bin_dir)} && echo has-bin-dir"
    local_engine = host.runtime == "docker" and host.docker_socket.startswith("unix://")
    if local_engine:  # an engine over TCP is not a file to look for
        probe += (f" && test -S {shlex.quote(host.docker_socket.removeprefix('unix://'))}"
                  " && echo has-docker")
    known = host.known_hosts_file
    scan = (f"ssh-keyscan {f'-p {host.port} ' if host.port else ''}{host.ssh_host} >> {known}, "
            "then compare its fingerprint (ssh-keygen -lf) with the host's own")
    if not host.accept_unknown_key and not known.is_file():
        return HostCheck(host.name, f"no known_hosts file at {known} to check its host key "
                         f"against", f"write one: {scan}; or name another file in the hosts "
                         "file (known_hosts = ...), or give --accept-unknown-host-keys")
    try:
        async with asyncssh.connect(host.ssh_host, **_connect(host, timeout_s)) as conn:
            got = await asyncio.wait_for(conn.run(probe), timeout_s)
    except asyncssh.HostKeyNotVerifiable as exc:
        if not host.key_known():
            return HostCheck(host.name, f"its host key at {host.ssh} is unknown: {known} has no "
                             f"line for it ({exc})", f"add it: {scan}; or give "
                             "--accept-unknown-host-keys to let in a host the file does not "
                             "name")
        return HostCheck(host.name, f"its host key at {host.ssh} is not the one "
                         f"{known} holds for it ({exc})",
                         f"if the host was rebuilt, replace its line in {known} "
                         f"(ssh-keygen -R HOST, then {scan}); else do not trust it")
    except (OSError, asyncssh.Error, asyncio.TimeoutError) as exc:
        return HostCheck(host.name, f"did not answer over SSH at {host.ssh} within "
                         f"{timeout_s:.0f} s ({type(exc).__name__}: {exc})",
                         f"check `ssh {host.ssh} true` works with the hosts file's ssh and "
                         "ssh_key, and that the host is up")
    lines = str(got.stdout or "").split()
    if not lines:
        err = str(got.stderr or "").strip().splitlines()
        return HostCheck(host.name, f"{host.python} there cannot import proofdiff and "
                         f"distributed ({err[-1] if err else f'exit {got.exit_status}'})",
                         f"install them there ({host.python} -m pip install <this checkout> "
                         "distributed), or point the hosts file's python at the Python that has "
                         "them")
    if lines[0] != want:
        return HostCheck(host.name, f"runs proofdiff {lines[0]}, not this caller's {want}",
                         "install this checkout's proofdiff there (pip install .)")
    if host.runtime == "process" and host.bin_dir and "has-bin-dir" not in lines:
        return HostCheck(host.name, f"has no bin_dir {host.bin_dir}",
                         "copy the programs there, or drop bin_dir to have the caller's "
                         "binaries shipped")
    if local_engine and "has-docker" not in lines:
        return HostCheck(host.name, f"has no Docker engine at {host.docker_socket}",
                         "start Docker there, or set runtime = \"process\"")
    return HostCheck(host.name)


def check_hosts(hosts: Hosts, timeout_s: float) -> list[HostCheck]:
    """Every host checked at once over SSH (:class:`HostCheck`, in file order): it answers
    within ``timeout_s``, its ``python`` imports distributed and runs this caller's proofdiff
    (:func:`~proofdiff.fleet.version.proofdiff_version`), and it has its ``bin_dir`` (a
    process host that names one) or its Docker socket (a docker host)."""
    from proofdiff.fleet.version import proofdiff_version

    want = proofdiff_version()
    _asyncssh()

    async def every() -> list[HostCheck]:
        return list(await asyncio.gather(*(_check(h, want, timeout_s) for h in hosts.hosts)))

    return asyncio.run(every())


def usable_hosts(hosts: Hosts, *, timeout_s: float, every: bool,
                 log: Callable[[str], None] = lambda _l: None
                 ) -> tuple[Hosts, dict[str, str]]:
    """``hosts`` less those that fail :func:`check_hosts` (each logged with its fix), and
    those left out: host name -> its check's line (the problem and the fix), so that a
    per-host run reports each of them as a host that did not run, never as silence.

    Raises:
        proofdiff.fleet.executor.FleetError: a host failed and ``every`` (``--all-hosts``) was
            given; no host passed; the scheduler's host failed.
    """
    from proofdiff.fleet.executor import FleetError

    checks = check_hosts(hosts, timeout_s)
    bad = [c for c in checks if c.problem]
    for c in checks:
        log(f"host {c.line()}")
    sched = next((h for h in hosts.hosts if h.ssh == hosts.scheduler), None)
    if bad and (every or len(bad) == len(checks)
                or (sched is not None and sched.name in {c.host for c in bad})):
        why = ("--all-hosts was given" if every else "no host passed" if len(bad) == len(
            checks) else "the scheduler runs on one of them")
        raise FleetError(f"{len(bad)} of {len(checks)} host(s) of {hosts.source} cannot run "
                         f"units ({why}): " + "; ".join(c.line() for c in bad),
                         fix="fix each host as its line says, or leave it out of the hosts "
                             "file")
    if bad:
        log(f"going on with {len(checks) - len(bad)} of {len(checks)} host(s)")
    names = {c.host for c in bad}
    return (msgspec.structs.replace(hosts, hosts=tuple(h for h in hosts.hosts
                                                       if h.name not in names)),
            {c.host: f"it failed its check before the cluster started: {c.line()}"
             for c in bad})


def start_ssh_cluster(hosts: Hosts, creds: RunCredentials, *, timeout_s: float,
                      log: Callable[[str], None] = lambda _l: None) -> Any:
    """Start the cluster of :func:`cluster_spec` with the run's TLS credentials ``creds``,
    already on every host (:func:`~proofdiff.fleet.tls.install_credentials`); blocks until
    every worker has started.

    Raises:
        proofdiff.fleet.executor.FleetError: ``asyncssh`` is not installed, or a host did not
            answer or start its process (the host and the cause named).
    """
    from proofdiff.fleet.executor import FleetError

    _asyncssh()
    from distributed import SpecCluster
    spec_cluster: Any = SpecCluster  # distributed is only partly typed

    # one line per host's process start comes back through this logger: the caller's log says
    # what matters (the hosts, the units, what was shipped)
    logging.getLogger("distributed.deploy.ssh").setLevel(logging.WARNING)
    workers, scheduler = cluster_spec(hosts, timeout_s)
    log(f"starting a Dask SSHCluster (TLS, this run's own certificate): scheduler on "
        f"{hosts.scheduler}, {len(workers)} worker(s) ({', '.join(workers)})")
    import dask.config

    try:
        # the configuration travels with each process started over SSH: its scratch folder,
        # and TLS with the run's files on that host
        with dask.config.set({"temporary-directory": DASK_DIR, **creds.remote_config()}):
            return spec_cluster(workers, scheduler, name="proofdiff-fleet",
                                security=creds.security())
    except Exception as exc:  # noqa: BLE001 - SSH, the remote Python, the network: all fatal
        raise FleetError(f"the SSHCluster of {hosts.source} did not start: "
                         f"{type(exc).__name__}: {exc}",
                         fix="check that each host answers `ssh HOST python3 -c 'import "
                             "proofdiff, distributed'`") from None
