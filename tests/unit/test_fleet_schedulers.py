"""Dask schedulers outside this process (harness/fleet): a host's copy of the run's credentials
starts its scheduler and worker with TLS (``distributed.cli.dask_spec``, as the SSH cluster starts
them); a plain TCP scheduler is joined only with ``--insecure``; an unreachable scheduler, and one
lost while a unit runs, are errors within their deadlines. The LocalCluster executor:
tests/unit/test_fleet.py."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from proofdiff.fleet.cluster import connect
from proofdiff.fleet.executor import FleetError, open_executor
from proofdiff.fleet.hosts import parse_hosts
from proofdiff.fleet.tls import new_credentials
from proofdiff.model.run_options import RunOptions


def _dask_spec(home: Path, config: str, *args: str) -> subprocess.Popen[str]:
    """``python -m distributed.cli.dask_spec ARGS`` as an SSHCluster starts one on a host: in
    the login's home, the caller's Dask configuration in ``DASK_INTERNAL_INHERIT_CONFIG``."""
    return subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_spec", *args],
                            cwd=home, env={**os.environ, "DASK_INTERNAL_INHERIT_CONFIG": config},
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def _started(proc: subprocess.Popen[str], mark: str, deadline_s: float = 60) -> str:
    """The line of ``proc``'s log that holds ``mark`` (e.g. ``Scheduler at:``)."""
    end = time.monotonic() + deadline_s
    lines = []
    while time.monotonic() < end:
        line = proc.stderr.readline()  # type: ignore[union-attr]
        lines.append(line)
        if mark in line:
            return line
        assert line or proc.poll() is None, "".join(lines)
    pytest.fail(f"{mark!r} not seen within {deadline_s} s: {''.join(lines)}")


def test_a_hosts_copy_of_the_credentials_starts_its_scheduler_and_worker_with_tls(
        tmp_path: Path) -> None:
    # a host's side of a --hosts run without SSH: the install line run by a shell in a "home",
    # then a scheduler and a Nanny started there as SSHCluster starts them (dask_spec with
    # cluster_spec's options and the caller's configuration): they find the files by their
    # paths relative to the home, speak TLS, and take the run's client alone
    import json

    import dask.config
    from distributed import Client

    from proofdiff.fleet.ssh import cluster_spec
    from proofdiff.fleet.tls import TLS_DIR, install_script

    run = new_credentials()
    home = tmp_path / "home"
    home.mkdir()
    got = subprocess.run(["bash", "-c", install_script(run)], cwd=home, text=True, timeout=30,
                         input=run.cert_pem + run.key_pem, capture_output=True)
    assert got.stdout.strip() == "written", got.stderr
    folder = home / run.remote_dir
    assert {p.name: oct(p.stat().st_mode & 0o777) for p in folder.iterdir()} == {
        "run.pem": "0o600", "ca.pem": "0o600"} and oct(folder.stat().st_mode & 0o777) == "0o700"
    assert (folder / "ca.pem").read_text() == run.cert_pem
    # a key file of the caller's own (for --cluster) is not what the hosts read
    with dask.config.set({"distributed.comm.tls.worker.key": "/nowhere/client.key",
                          **run.remote_config()}):
        config = dask.config.serialize(dask.config.global_config)
    workers, scheduler = cluster_spec(parse_hosts(
        '[[host]]\nname = "w"\nssh = "127.0.0.1"\n'), timeout_s=5)
    sched = _dask_spec(home, config, "--spec", json.dumps(
        {"cls": "distributed.Scheduler", "opts": {**scheduler["options"]["kwargs"], "port": 0}}))
    try:
        address = _started(sched, "Scheduler at:").split("Scheduler at:")[1].strip()
        assert address.startswith("tls://127.0.0.1:"), address
        nanny = _dask_spec(home, config, address, "--spec", json.dumps(
            {0: {"cls": "distributed.Nanny", "opts": workers["w"]["options"]["kwargs"]}}))
        try:
            _started(nanny, "Start worker at:")
            with Client(address, security=run.security(), timeout="30s",
                        set_as_default=False) as c:
                c.wait_for_workers(1, timeout=30)
                assert c.submit(os.getcwd, pure=False).result(timeout=30) == str(home)
            with pytest.raises((OSError, TimeoutError)):
                Client(address, security=new_credentials().security(), timeout="1.5s",
                       set_as_default=False)
        finally:
            nanny.terminate()
            nanny.wait(timeout=30)
    finally:
        sched.terminate()
        sched.wait(timeout=30)
    assert (home / TLS_DIR).is_dir()


def test_a_plain_tcp_scheduler_is_joined_only_with_insecure() -> None:
    from distributed import LocalCluster

    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, host="127.0.0.1",
                      protocol="tcp://", dashboard_address="127.0.0.1:0") as lc:
        address = str(lc.scheduler_address)
        assert address.startswith("tcp://")
        with pytest.raises(FleetError, match="neither authenticated nor encrypted") as err:
            with open_executor(RunOptions(cluster=address)):
                pytest.fail("a unit could have run")
        assert "--insecure" in err.value.fix and "tls://" in err.value.fix
        lines: list[str] = []
        with open_executor(RunOptions(cluster=address, insecure=True), log=lines.append) as ex:
            assert ex.map(str.upper, ["a"], name="u") == ["A"]
        assert any("--insecure: joining" in line for line in lines), lines


def test_an_unreachable_scheduler_is_an_error_within_the_deadline() -> None:
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    t0 = time.monotonic()
    with pytest.raises(FleetError, match=r"no Dask scheduler answered at tcp://127.0.0.1:\d+ "
                                         r"within 2 s"):
        connect(f"tcp://127.0.0.1:{port}", timeout_s=2, insecure=True)
    assert time.monotonic() - t0 < 10
    with pytest.raises(FleetError, match="no scheduler address"):
        connect("127.0.0.1:8786")
    with pytest.raises(FleetError, match="both --cluster and --hosts"):
        with open_executor(RunOptions(cluster="tcp://127.0.0.1:1", hosts="h.toml")):
            pass


def test_a_scheduler_lost_while_units_run_is_a_fleet_error_within_the_deadline(
        tmp_path: Path) -> None:
    # a scheduler and a worker of their own (processes of this machine on 127.0.0.1); the
    # scheduler is killed while a unit runs, as when its host goes: the wait ends with the
    # cause within the client's reconnect deadline, never an OSError from deep in distributed
    from proofdiff.runtime.ports import free_port

    dask = Path(sys.executable).with_name("dask")
    port = free_port()
    address = f"tcp://127.0.0.1:{port}"
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
    scheduler = subprocess.Popen([str(dask), "scheduler", "--host", "127.0.0.1", "--port",
                                  str(port), "--no-dashboard"], **quiet)  # type: ignore[call-overload]
    worker = subprocess.Popen([str(dask), "worker", address, "--nthreads", "1", "--no-dashboard",
                               "--host", "127.0.0.1"], **quiet)  # type: ignore[call-overload]
    try:
        from distributed import Client

        with Client(address, timeout="60s", set_as_default=False) as c:  # both up, unhurried
            c.wait_for_workers(1, timeout=60)
        # 5 s: how long the run's client tries to reach its scheduler again before giving up
        with open_executor(RunOptions(cluster=address, insecure=True), connect_timeout_s=5) as ex:
            import threading

            def kill_once_running() -> None:
                deadline = time.monotonic() + 60
                while not any(ex.client.processing().values()):  # type: ignore[attr-defined]
                    assert time.monotonic() < deadline, "the unit never started"
                    time.sleep(0.05)
                scheduler.kill()

            killer = threading.Thread(target=kill_once_running, daemon=True)
            killer.start()
            t0 = time.monotonic()
            with pytest.raises(FleetError, match=rf"the Dask scheduler {address} was lost while "
                                                 r"1 unit\(s\) of sleep ran") as err:
                ex.map(time.sleep, [120], name="sleep")
            assert time.monotonic() - t0 < 60 and "run again" in err.value.fix
            killer.join(timeout=10)
    finally:
        for p in (scheduler, worker):
            p.kill()
            p.wait(timeout=30)
