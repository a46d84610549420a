"""What the cleanup after a fleet run stops on a host (harness/fleet/ssh_leftovers.py): this
run's Dask processes only (never every ``dask_spec`` for the same port, other runs'
included). Its shell runs here as it runs on a host over SSH (bash, a login's shell), against real processes whose
command lines are a Dask SSHCluster's (``dask_spec tcp://HOST:PORT`` for a worker, the
scheduler's ``--spec`` JSON), each the leader of a process group of its own, as a nanny is.
The same shell over real SSH: tests/e2e/test_fleet_ssh.py."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator

import psutil
import pytest

from proofdiff.fleet.ssh_leftovers import _script
from proofdiff.runtime.ports import free_port

pytestmark = pytest.mark.unit


@pytest.fixture
def stand_ins() -> Iterator[dict[str, subprocess.Popen[bytes]]]:
    """Sleeping processes with a Dask SSHCluster's command lines: this run's worker and
    scheduler (127.0.0.1:PORT), another run's for the same port on another scheduler host,
    and one with the port elsewhere on its command line. Killed after the test."""
    port = free_port()
    spec = {"cls": "distributed.Scheduler", "opts": {"port": port, "host": "127.0.0.1"}}
    theirs = {"cls": "distributed.Scheduler", "opts": {"port": port, "host": "10.0.0.2"}}
    argv = {"our-worker": ["distributed.cli.dask_spec", f"tcp://127.0.0.1:{port}"],
            "our-scheduler": ["distributed.cli.dask_spec", "--spec", json.dumps(spec)],
            "their-worker": ["distributed.cli.dask_spec", f"tcp://10.0.0.2:{port}"],
            "their-scheduler": ["distributed.cli.dask_spec", "--spec", json.dumps(theirs)],
            "other-port": ["distributed.cli.dask_spec", f"tcp://127.0.0.1:{port}1",
                           "--note", str(port)]}
    procs = {name: subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)",
                                     *args], start_new_session=True)
             for name, args in argv.items()}
    procs["port"] = port  # type: ignore[assignment]
    try:
        yield procs
    finally:
        for name, p in procs.items():
            if name != "port":
                p.kill()
                p.wait(timeout=30)


def test_only_this_runs_dask_processes_are_stopped(
        stand_ins: dict[str, subprocess.Popen[bytes]]) -> None:
    port = int(stand_ins.pop("port"))  # type: ignore[call-overload]
    script = _script("127.0.0.1", port, grace_s=0.4)
    got = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=60)
    assert got.stdout.strip() == "2", (got.stdout, got.stderr)
    for name, p in stand_ins.items():
        p.poll()
        alive = p.returncode is None and psutil.pid_exists(p.pid)
        assert alive == name.startswith(("their", "other")), name
    # a second look finds nothing of this run's left
    again = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=60)
    assert again.stdout.strip() == "0", again.stdout
