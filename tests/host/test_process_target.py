"""The process and attach runtimes with the build's refprover binaries on this host: a daemon
started as a process answers where its published port was rewritten to, sees its params and
config at host paths, is removed with its working dir; tools run to their end or deadline; an
owner killed with SIGKILL leaves no process behind; an attached daemon is used and never
stopped."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import psutil
import pytest

from proofdiff.model.choices import Role, Runtime
from proofdiff.model.profile import Profile
from proofdiff.runtime.attached import AttachedHandle
from proofdiff.drivers.cuzk_client import ProverClient
from proofdiff.drivers.cuzk_client import status_probe
from proofdiff.runtime.daemon import Daemon, LaunchError, start_daemon
from proofdiff.runtime.ports import free_port
from proofdiff.runtime.runner import Runner
from proofdiff.runtime.spec import ContainerError, LaunchSpec, Mount
from proofdiff.runtime.daemon_status import fetch_status

from tests.host.conftest import PROD_CONFIG, process_profile

Started = Callable[..., AbstractContextManager[Daemon]]


def test_a_process_daemon_reads_its_config_and_params_at_host_paths(
        started: Started, artifacts: Any) -> None:
    config = {**PROD_CONFIG, "daemon": {"listen": "0.0.0.0:9820",
                                        "status_listen": "0.0.0.0:9821"},
              "srs": {"param_cache": "/var/tmp/filecoin-proof-parameters"}}
    profile = process_profile(config, mounts={"params": "/var/tmp/filecoin-proof-parameters"},
                              ports={"grpc": 9820, "status": 9821})
    with started(profile) as d:
        assert d.handle.runtime is Runtime.PROCESS and d.address.startswith("127.0.0.1:")
        assert d.address != "127.0.0.1:9820"  # a free port, as docker would publish it
        status = fetch_status(d.status_port)
        assert status is not None and status["param_cache"] == str(
            Path(artifacts.param_cache).resolve())
        assert status["pipeline_enabled"] is True
        pgid, workdir = d.handle.pid, d.handle.workdir  # type: ignore[attr-defined]
        facts = d.facts()
        assert facts.runtime is Runtime.PROCESS and facts.state["Status"] == "running"
        assert facts.inspect_view["runtime"] == "process"
        assert facts.inspect_view["cmd"][:1] == ["-c"]  # the config file proofdiff wrote
    assert not psutil.pid_exists(pgid) or psutil.Process(pgid).status() == psutil.STATUS_ZOMBIE
    assert not workdir.exists()


def test_a_port_taken_before_the_daemon_binds_it_is_left_for_another(
        started: Started, monkeypatch: pytest.MonkeyPatch) -> None:
    # proofdiff picks a free port, then the daemon binds it: another binder can come between
    # (seen once in CI: "Address already in use" at start). The first pick here is a port this
    # test holds open; the daemon exits on it, and is started again on new ports.
    import socket

    import proofdiff.runtime.process as process_runtime

    held = socket.create_server(("127.0.0.1", 0))
    taken = held.getsockname()[1]
    picks: list[int] = []

    def pick() -> int:
        picks.append(taken if not picks else free_port())
        return picks[-1]

    monkeypatch.setattr(process_runtime, "free_port", pick)
    try:
        with started(process_profile(ports={"grpc": 9820})) as d:
            assert d.address != f"127.0.0.1:{taken}" and d.address.endswith(f":{picks[-1]}")
            with ProverClient(d.address) as client:
                assert client.get_status(timeout_s=10) is not None
    finally:
        held.close()
    assert picks[0] == taken and len(picks) >= 2


def test_a_process_that_exits_at_start_is_a_launch_error_with_its_log(
        runner: Runner, artifacts: Any) -> None:
    bad = process_profile({**PROD_CONFIG, "daemon": {"listen": "not-an-address"}})
    with pytest.raises(LaunchError) as err:
        start_daemon(runner, bad, artifacts.param_cache, probe=status_probe)
    assert "exited with code" in str(err.value) and "process pid-" in str(err.value)
    assert err.value.log_tail  # the daemon's own words


def test_a_missing_program_names_the_fix(runner: Runner, artifacts: Any) -> None:
    with pytest.raises(LaunchError, match="is not an executable file on this host") as err:
        start_daemon(runner, process_profile(binary="/nonexistent/cuzk-daemon"),
                     artifacts.param_cache, probe=status_probe)
    assert "--bin-dir" in err.value.fix


def test_a_tool_gets_its_files_mounts_and_out_dir(runner: Runner, artifacts: Any) -> None:
    script = 'cat /in/x.txt > /out/copy.txt; ls /params > /out/params.txt; echo "$P"'
    res = runner.run(LaunchSpec(
        image="sh", role=Role.PREFLIGHT, entrypoint=("sh", "-c", script), files={"/in/x.txt": b"hi"},
        mounts=(Mount(Path(artifacts.param_cache), "/params"),), want_out=True,
        env={"P": "/params/x.vk"}, runtime=Runtime.PROCESS), timeout_s=30)
    assert res.exit_code == 0, res.stderr
    assert res.out_files["copy.txt"] == b"hi"
    assert b".vk" in res.out_files["params.txt"]
    assert res.stdout.strip() == f"{Path(artifacts.param_cache).resolve()}/x.vk"


def test_a_tool_past_its_deadline_is_killed(runner: Runner) -> None:
    t0 = time.monotonic()
    res = runner.run(LaunchSpec(image="sleep", role=Role.BENCH, entrypoint=("sleep", "60"),
                                   runtime=Runtime.PROCESS), timeout_s=1)
    assert res.timed_out and res.exit_code == -1 and time.monotonic() - t0 < 10


def test_the_verifier_runs_as_a_process(runner: Runner, artifacts: Any) -> None:
    res = runner.run(LaunchSpec(image="verify", role=Role.VERIFIER, entrypoint=("verify",),
                                   command=("--param-cache", "/params", "--input", "/in/b.json"),
                                   mounts=(Mount(Path(artifacts.param_cache), "/params"),),
                                   files={"/in/b.json": b"not json"}, runtime=Runtime.PROCESS),
                     timeout_s=60)
    assert res.exit_code == 2, res.output  # refprover README: 2 = unreadable input


def test_without_a_writable_cgroup_the_memory_limit_is_prlimit_and_said(
        runner: Runner) -> None:
    grab = "bytearray(1 << 30)"  # 1 GiB under a 256 MiB address-space limit
    spec = LaunchSpec(image="python", role=Role.PREFLIGHT, mem_limit="256m",
                         entrypoint=(sys.executable, "-c", grab), runtime=Runtime.PROCESS)
    handle = runner.processes.start(spec, split_streams=True)
    try:
        handle.proc.wait(timeout=30)
        state = handle.state()
        note = handle.limits.note
    finally:
        handle.remove()
    if handle.limits.enforced_by == "cgroup v2":
        assert state["OOMKilled"], state
    else:
        assert handle.limits.enforced_by == "prlimit" and "RLIMIT_AS" in note
        assert state["ExitCode"] != 0


OWNER = """
import json, sys, time
from pathlib import Path
from proofdiff.drivers.cuzk_client import status_probe
from proofdiff.model.choices import Runtime
from proofdiff.model.profile import Profile
from proofdiff.runtime.daemon import start_daemon
from proofdiff.runtime.runner import Runner
from proofdiff.runtime.watchdog import Watchdog
dog = Watchdog().start()
runner = Runner("t-sigkill", tracker=dog, tool_dirs=[Path(sys.argv[1])])
d = start_daemon(runner, Profile(name="p", workload="wpost-2k", runtime=Runtime.PROCESS), Path(sys.argv[2]),
                 probe=status_probe)
print(json.dumps({"pid": d.handle.pid, "dir": str(d.handle.workdir)}), flush=True)
time.sleep(600)
"""


def test_sigkill_of_the_owner_leaves_no_process_behind(binary: Path, artifacts: Any) -> None:
    proc = subprocess.Popen([sys.executable, "-c", OWNER, str(binary.parent),
                             str(artifacts.param_cache)], stdout=subprocess.PIPE, text=True)
    try:
        info = json.loads(proc.stdout.readline())  # type: ignore[union-attr]
        assert psutil.pid_exists(info["pid"]) and Path(info["dir"]).is_dir()
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        t0 = time.monotonic()
        while _alive(info["pid"]) or Path(info["dir"]).exists():
            assert time.monotonic() - t0 < 10, "the daemon or its dir outlived its owner by 10 s"
            time.sleep(0.1)
    finally:
        if proc.poll() is None:
            proc.kill()
        if _alive(info["pid"]):
            os.killpg(info["pid"], signal.SIGKILL)


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def test_an_attached_daemon_is_used_and_never_stopped(started: Started, runner: Runner,
                                                      artifacts: Any) -> None:
    with started(process_profile()) as running:
        attached = Profile(name="prod", workload="wpost-2k", runtime=Runtime.ATTACH,
                           address=running.address)
        d = start_daemon(runner, attached, artifacts.param_cache, probe=status_probe)
        assert d.handle.runtime is Runtime.ATTACH and not d.started_here
        assert d.facts().state == {"Status": "running"}
        d.remove()  # never stops what it did not start
        with ProverClient(running.address) as client:
            client.get_status(timeout_s=5)


def test_attach_to_nothing_says_to_start_it(runner: Runner, artifacts: Any) -> None:
    nobody = Profile(name="prod", workload="wpost-2k", runtime=Runtime.ATTACH,
                     address=f"127.0.0.1:{free_port()}", ready_timeout_s=2)
    with pytest.raises(LaunchError, match="did not answer GetStatus") as err:
        start_daemon(runner, nobody, artifacts.param_cache, probe=status_probe)
    assert err.value.fix.startswith("is it running? start it, or fix `address`")
    with pytest.raises(ContainerError, match="on another host") as err:
        AttachedHandle("10.0.0.9:9820", probe=status_probe).exec(["true"])
    assert "daemon's host" in err.value.fix
