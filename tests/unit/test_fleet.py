"""The fleet (harness/fleet): the hosts file's validation, and the executor on a real Dask
``LocalCluster`` (worker processes on 127.0.0.1, no dashboard), joined by its scheduler's
address as ``--cluster`` joins one: units come back as the model's structs from both workers,
a worker on other proofdiff code and an unreachable scheduler are refused before any unit."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from proofdiff.fleet.differential import differential_unit
from proofdiff.fleet.cluster import connect
from proofdiff.fleet.executor import FleetError, ThreadExecutor, open_executor
from proofdiff.fleet.hosts import HOST_KEYS, HostsError, parse_hosts
from proofdiff.fleet.tls import RunCredentials, new_credentials
from proofdiff.fleet.version import proofdiff_version
from proofdiff.model.errors import ProofdiffError
from proofdiff.model.result import DifferentialResult
from proofdiff.model.run_options import RunOptions
from proofdiff.model.status import Verdict
from proofdiff.regressions.replay_all import CaseRun, CaseUnit, replay_case

HOSTS = """\
scheduler = "127.0.0.1"

[[host]]
name = "h200-a"
ssh = "root@gpu-a.example:2222"
labels = ["h200"]
gpu_uuids = ["GPU-5d1c0000-0000-0000-0000-000000000001", "GPU-5d1c0000-0000-0000-0000-000000000002"]
slots = 2
runtime = "process"
bin_dir = "/opt/refprover/bin"

[[host]]
name = "h200-b"
ssh = "gpu-b.example"
gpus = 1
runtime = "docker"
"""


def test_a_hosts_file_reads_into_hosts() -> None:
    hosts = parse_hosts(HOSTS, "fleet.toml")
    a, b = hosts.hosts
    assert (a.name, a.gpus, a.slots, a.runtime, a.bin_dir) == ("h200-a", 2, 2, "process",
                                                               "/opt/refprover/bin")
    # every host's key is checked: against the user's known_hosts unless the file names one
    users = str(Path.home() / ".ssh" / "known_hosts")
    assert a.ssh_host == "gpu-a.example" and a.connect_options == {
        "username": "root", "port": 2222, "known_hosts": users}
    assert (b.gpus, b.gpu_uuids, b.docker_socket) == (1, (), "unix:///var/run/docker.sock")
    assert b.connect_options == {"known_hosts": users} and hosts.scheduler == "127.0.0.1"
    # a top-level known_hosts is every host's, unless a host names its own
    checked = parse_hosts('known_hosts = "/etc/fleet_known_hosts"\n' + HOSTS.replace(
        'ssh = "gpu-b.example"', 'ssh = "gpu-b.example"\nknown_hosts = "~/.ssh/b_hosts"'))
    a, b = checked.hosts
    assert a.connect_options["known_hosts"] == "/etc/fleet_known_hosts"
    assert b.connect_options["known_hosts"] == str(Path.home() / ".ssh" / "b_hosts")


@pytest.mark.parametrize(("edit", "line", "words"), [
    (("labels = [\"h200\"]", "label = [\"h200\"]"), 6, "unknown key 'label'"),
    (("name = \"h200-b\"", "name = \"h200-a\""), 13, "duplicate host name 'h200-a'"),
    (("gpus = 1", "gpus = 1\ngpu_uuids = [\"GPU-1\"]"), 16, "both a GPU count"),
    (("scheduler = ", "schedular = "), 1, "unknown key 'schedular' at the top"),
    (("gpus = 1\nruntime = \"docker\"", "gpus = 1\nruntime = \"docker\"\nbin_dir = \"/b\""),
     17, "runs daemons in Docker but names a bin_dir"),
    (("slots = 2", "slots = 0"), 8, "slots = 0"),
])
def test_a_bad_hosts_file_names_its_line_and_the_valid_keys(
        edit: tuple[str, str], line: int, words: str) -> None:
    with pytest.raises(HostsError) as err:
        parse_hosts(HOSTS.replace(*edit), "fleet.toml")
    assert str(err.value).startswith(f"fleet.toml:{line}: "), str(err.value)
    assert words in str(err.value)
    if "unknown key" in words or "both" in words:
        assert ", ".join(HOST_KEYS) in err.value.fix


@pytest.mark.parametrize(("edit", "line", "words"), [
    (("name = \"h200-a\"", "name = \"a'; touch /tmp/pwned; '\""), 4, "is not a plain name"),
    (("name = \"h200-a\"", "name = \"../../etc\""), 4, "is not a plain name"),
    (("name = \"h200-b\"", "name = \"b $(id)\""), 13, "is not a plain name"),
    (("runtime = \"docker\"", "runtime = \"docker\"\npython = \"python3; touch /x\""), 17,
     "is not a program name or path"),
    (("runtime = \"docker\"", "runtime = \"docker\"\npython = \"-c\""), 17,
     "is not a program name or path"),
])
def test_a_host_name_or_python_that_a_shell_or_a_path_would_read_is_refused(
        edit: tuple[str, str], line: int, words: str) -> None:
    # a host's name names its worker and report folder and, with its python, goes into the
    # command line that starts the worker over SSH: only plain words are taken
    with pytest.raises(HostsError) as err:
        parse_hosts(HOSTS.replace(*edit), "fleet.toml")
    assert str(err.value).startswith(f"fleet.toml:{line}: "), str(err.value)
    assert words in str(err.value) and ("h200-a" in err.value.fix or "/bin/python" in
                                        err.value.fix), err.value.fix


def test_the_remote_command_line_quotes_a_hosts_python() -> None:
    from msgspec.structs import replace as with_
    from proofdiff.fleet.ssh import cluster_spec

    hosts = parse_hosts(HOSTS)
    odd = with_(hosts, hosts=(with_(hosts.hosts[0], python="/opt/my env/bin/python"),
                              hosts.hosts[1]))
    workers, _scheduler = cluster_spec(odd, timeout_s=5)
    assert workers["h200-a"]["options"]["remote_python"] == "'/opt/my env/bin/python'"
    assert workers["h200-b"]["options"]["remote_python"] == "python3"


def test_malformed_toml_names_its_line() -> None:
    with pytest.raises(HostsError, match=r"^fleet.toml:3: not valid TOML"):
        parse_hosts("[[host]]\nname = \"a\"\nssh = \n", "fleet.toml")


def test_the_ssh_cluster_spec_gives_each_host_its_own_worker() -> None:
    from proofdiff.fleet.ssh import cluster_spec

    workers, scheduler = cluster_spec(parse_hosts(HOSTS), timeout_s=5)
    # every server speaks TLS on its host's SSH address only; the HTTP servers beside them
    # (no dashboard) on the host's loopback
    assert scheduler["options"]["address"] == "127.0.0.1"
    assert scheduler["options"]["kwargs"] == {"port": 8786, "host": "127.0.0.1",
                                              "protocol": "tls", "dashboard": False,
                                              "dashboard_address": "127.0.0.1:0"}
    a, b = workers["h200-a"]["options"], workers["h200-b"]["options"]
    assert (a["address"], a["kwargs"]) == ("gpu-a.example", {
        "nthreads": 2, "resources": {"GPU": 2}, "name": "h200-a", "host": "gpu-a.example",
        "protocol": "tls", "dashboard_address": "127.0.0.1:0",
        "local_directory": ".cache/proofdiff/dask"})
    assert a["connect_options"]["port"] == 2222 and a["connect_options"]["connect_timeout"] == 5
    assert b["kwargs"] == {"nthreads": 1, "resources": {"GPU": 1}, "name": "h200-b",
                           "host": "gpu-b.example", "protocol": "tls",
                           "dashboard_address": "127.0.0.1:0",
                           "local_directory": ".cache/proofdiff/dask"}


def test_threads_run_units_here() -> None:
    ex = ThreadExecutor(2)
    assert ex.map(str.upper, ["a", "b", "c"], name="u") == ["A", "B", "C"]
    assert sorted(ex.placed) == [("u-0", "local"), ("u-1", "local"), ("u-2", "local")]


# -- a real Dask cluster ----------------------------------------------------------------------

@pytest.fixture(scope="module")
def creds() -> RunCredentials:
    """TLS credentials made as a fleet run makes its own."""
    return new_credentials()


@pytest.fixture(scope="module")
def cluster(creds: RunCredentials) -> Iterator[str]:
    """A LocalCluster as a fleet's: 2 worker processes, 1 thread each, on 127.0.0.1, no
    dashboard, TLS with ``creds``; its scheduler's address (``tls://``). Dask's configuration
    gives this process the client's side of ``creds`` (as a user's gives ``--cluster`` its
    credentials) while the module runs. Stopped after the module."""
    import dask.config
    from distributed import LocalCluster

    with dask.config.set({"distributed.comm.tls.ca-file": creds.cert_pem,
                          "distributed.comm.tls.client.cert": creds.cert_pem,
                          "distributed.comm.tls.client.key": creds.key_pem}), \
            LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                         protocol="tls", security=creds.security(), dashboard_address=None,
                         worker_dashboard_address=None) as lc:
        yield str(lc.scheduler_address)


def test_units_on_a_dask_cluster_come_back_as_structs_from_every_worker(
        cluster: str, tmp_path: Path) -> None:
    broken = tmp_path / "broken-case"
    broken.mkdir()
    (broken / "case.toml").write_text("id = \n", encoding="utf-8")
    bad = RunOptions.from_env(profiles=str(tmp_path / "missing.toml"), report_dir=str(tmp_path))
    with open_executor(RunOptions(cluster=cluster), connect_timeout_s=20) as ex:
        assert ex.remote and ex.slots == 2
        # a differential whose profile file is missing: the real run_differential, ERROR
        results = ex.map(differential_unit, [bad] * 4, name="differential")
        cases = ex.map(replay_case, [CaseUnit(folder=str(broken), options=bad)], name="case")
    assert all(isinstance(r, DifferentialResult) and r.verdict is Verdict.ERROR
               and "missing.toml" in r.errors[0] for r in results), results
    assert isinstance(cases[0], CaseRun) and cases[0].verdict.verdict == "ERROR"
    workers = {where for _key, where in ex.placed}
    assert len(workers) == 2, ex.placed  # each worker ran its share
    assert all(r.machine["hostname"] == socket.gethostname() for r in results)


def test_a_worker_on_other_proofdiff_code_is_refused_before_any_unit(
        cluster: str, creds: RunCredentials, tmp_path: Path) -> None:
    copy = tmp_path / "site" / "proofdiff"
    shutil.copytree(Path(sys.modules["proofdiff"].__file__ or "").parent, copy,
                    ignore=shutil.ignore_patterns("__pycache__"))
    with (copy / "fleet" / "version.py").open("a", encoding="utf-8") as f:
        f.write("# another build\n")
    dask = Path(sys.executable).with_name("dask")
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "site")}
    pem = tmp_path / "run.pem"
    pem.write_text(creds.cert_pem + creds.key_pem)
    worker = subprocess.Popen([str(dask), "worker", cluster, "--nthreads", "1", "--name",
                               "other-build", "--no-dashboard", "--host", "127.0.0.1",
                               "--tls-ca-file", str(pem), "--tls-cert", str(pem)],
                              env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        from distributed import Client

        with Client(cluster, set_as_default=False) as c:
            c.wait_for_workers(3, timeout=60)
        with pytest.raises(FleetError) as err:
            with open_executor(RunOptions(cluster=cluster)):
                pytest.fail("a unit could have run")
        assert f"another proofdiff than this caller's {proofdiff_version()}" in str(err.value)
        assert "1 of 3 worker(s)" in str(err.value) and "pip install" in err.value.fix
    finally:
        worker.terminate()
        worker.wait(timeout=30)


def test_a_unit_whose_worker_dies_is_reported_lost_or_run_again_with_retry_lost(
        cluster: str, tmp_path: Path) -> None:
    def dies_once(marker: str) -> str:  # nested: it pickles by value to the workers
        from distributed import get_worker

        if not os.path.exists(marker):
            Path(marker).touch()
            os._exit(1)  # the worker process dies mid-unit, as with its host
        return f"ran on {get_worker().name}"

    lines: list[str] = []
    with open_executor(RunOptions(cluster=cluster), log=lines.append) as ex:
        got = ex.map_placed(dies_once, [str(tmp_path / "lost")], name="unit",
                            lost=lambda item, why: f"LOST {why}")
        with pytest.raises(FleetError, match=r"unit unit-0 was lost: host \S+ went away"):
            ex.map(dies_once, [str(tmp_path / "lost-again")], name="unit")
    [(host, value)] = got
    assert value.startswith(f"LOST unit unit-0 was lost: host {host} went away") and \
        "--retry-lost" in value, value
    assert any(f"host {host} left the cluster" in line for line in lines), lines
    from distributed import Client

    with Client(cluster, set_as_default=False) as c:
        # the scheduler this run joined is left as it was (Dask's default: 3)
        assert c.run_on_scheduler(lambda dask_scheduler: dask_scheduler.allowed_failures) == 3
        c.wait_for_workers(2, timeout=60)  # the nanny restarted the dead one
    with open_executor(RunOptions(cluster=cluster, retry_lost=True)) as ex:
        [(host, value)] = ex.map_placed(dies_once, [str(tmp_path / "retried")], name="unit")
        assert value == f"ran on {host}", value  # run again, to its end
        # pinned units run where they are told; one pinned to no worker is lost at once
        ex.client.wait_for_workers(2, timeout=60)  # type: ignore[attr-defined]
        names = ex.workers()
        got = ex.map_placed(dies_once, [str(tmp_path / "retried")] * 3, name="pinned",
                            on=[*names, "gone-host"], lost=lambda item, why: why)
    assert [w for w, _v in got] == [*names, "gone-host"] and len(names) == 2, got
    assert [v for _w, v in got[:2]] == [f"ran on {n}" for n in names], got
    assert "host gone-host, the one it must run on, is not in the cluster" in got[2][1]
    with Client(cluster, set_as_default=False) as c:
        c.wait_for_workers(2, timeout=60)


def test_a_client_without_the_runs_credentials_cannot_join_or_submit(
        cluster: str, creds: RunCredentials) -> None:
    # the cluster speaks TLS with the run's certificate alone: a plain TCP client, one with
    # another run's certificate and one with no certificate are all turned away before they
    # can submit anything; the run's own client, the control, gets in and runs a unit
    import dask.config
    from distributed import Client
    from distributed.security import Security

    import ssl

    port = int(cluster.rsplit(":", 1)[1])
    strangers = [(f"tcp://127.0.0.1:{port}", Security(require_encryption=False)),
                 (cluster, new_credentials().security())]
    for address, security in strangers:
        with pytest.raises((OSError, TimeoutError)):
            with Client(address, security=security, timeout="1.5s", set_as_default=False) as c:
                c.submit(os.getpid).result(timeout=5)
                pytest.fail(f"{address} ran a task for a client without the run's certificate")
    # a TLS client that trusts the scheduler but shows no certificate: the handshake is refused
    # (distributed's own client will not even try without one)
    ctx = ssl.create_default_context(cadata=creds.cert_pem)
    ctx.check_hostname = False
    with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
        try:
            with ctx.wrap_socket(raw) as tls:
                assert tls.recv(1) == b"", "the scheduler talked to a client with no certificate"
        except ssl.SSLError as exc:
            assert "CERTIFICATE_REQUIRED" in str(exc) or "alert" in str(exc), exc
    with Client(cluster, security=creds.security(), timeout="20s", set_as_default=False) as c:
        assert isinstance(c.submit(os.getpid, pure=False).result(timeout=20), int)
    # proofdiff's own client: no credentials configured for a tls:// scheduler is a clear error
    with dask.config.set({"distributed.comm.tls.ca-file": None,
                          "distributed.comm.tls.client.cert": None,
                          "distributed.comm.tls.client.key": None}):
        with pytest.raises(FleetError, match="gives no CA file or client certificate") as err:
            connect(cluster, timeout_s=5)
    assert "DASK_DISTRIBUTED__COMM__TLS__CA_FILE" in err.value.fix


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


def test_artifacts_are_shipped_to_each_worker_once_and_checked_by_content(
        cluster: str, tmp_path: Path) -> None:
    from distributed import Client

    from proofdiff.fleet import shipping

    src = tmp_path / "bin"
    (src / "sub").mkdir(parents=True)
    (src / "prover").write_bytes(b"#!/bin/sh\necho prover\n")
    (src / "prover").chmod(0o755)
    (src / "sub" / "vk").write_bytes(os.urandom(3 << 20))
    bundle = shipping.bundle_of("binaries", src)
    assert [(b.name, b.executable) for b in bundle.blobs] == [("prover", True),
                                                              ("sub/vk", False)]
    with Client(cluster, set_as_default=False) as c:
        # each worker its own "host": its own shipped root
        roots = c.run(lambda dask_worker: os.environ.__setitem__(
            "PROOFDIFF_SHIPPED", f"{tmp_path}/host-{dask_worker.name}") or
            os.environ["PROOFDIFF_SHIPPED"])
        first = shipping.ship(c, [bundle])
        again = shipping.ship(c, [bundle])
        assert [(r.sent, r.present) for r in first] == [(2, 0), (2, 0)], first
        assert [(r.sent, r.sent_bytes, r.present) for r in again] == [(0, 0, 2)] * 2, again
        for root in roots.values():
            laid = Path(root) / "dirs" / bundle.key
            assert (laid / "sub" / "vk").read_bytes() == (src / "sub" / "vk").read_bytes()
            assert os.access(laid / "prover", os.X_OK)
        # bytes that do not hash to their name are refused, and not kept
        addr = next(iter(roots))
        with pytest.raises(ValueError, match="a transfer broke"):
            c.run(shipping._put, "0" * 64, 0, b"other bytes", True, False, workers=[addr])
        assert c.run(shipping._missing, ["0" * 64], workers=[addr])[addr] == ["0" * 64]
        # a unit's reference becomes the worker's own path
        opts = RunOptions(bin_dir=bundle.ref, workload_files={"w": f"{bundle.ref}/sub/vk"})
        local = c.run(shipping.localize, opts, workers=[addr])[addr]
        assert local.bin_dir == f"{roots[addr]}/dirs/{bundle.key}"
        assert local.workload_files["w"] == f"{roots[addr]}/dirs/{bundle.key}/sub/vk"


def test_shipping_refuses_symbolic_links(tmp_path: Path) -> None:
    # a link in a shipped folder (a case's, a param cache) would send whatever it points at,
    # a key or a password file, to every host; the folder or file named may not be one either
    from proofdiff.fleet import shipping

    secret = tmp_path / "id_ed25519"
    secret.write_text("PRIVATE KEY")
    case = tmp_path / "case"
    (case / "inputs").mkdir(parents=True)
    (case / "case.toml").write_text("[case]\n")
    (case / "inputs" / "w.json").symlink_to(secret)
    with pytest.raises(FleetError) as err:
        shipping.bundle_of("case c", case, named=True)
    assert f"{case / 'inputs' / 'w.json'} is a symbolic link (to {secret})" in str(err.value)
    assert "copy the file itself" in err.value.fix
    (case / "inputs" / "w.json").unlink()
    (case / "inputs" / "keys").symlink_to(tmp_path, target_is_directory=True)
    with pytest.raises(FleetError, match="inputs/keys is a symbolic link"):
        shipping.bundle_of("case c", case, named=True)
    (case / "inputs" / "keys").unlink()
    assert [b.name for b in shipping.bundle_of("case c", case, named=True).blobs] == [
        "case/case.toml"]
    (tmp_path / "link-to-case").symlink_to(case, target_is_directory=True)
    (tmp_path / "link-to-key").symlink_to(secret)
    for link in ("link-to-case", "link-to-key"):
        with pytest.raises(FleetError, match=f"{link} is a symbolic link"):
            shipping.bundle_of("x", tmp_path / link)


def test_a_unit_on_a_process_host_with_gpus_gets_the_hosts_runtime_and_disjoint_uuids() -> None:
    from proofdiff.bisect.probe import ProbeUnit
    from proofdiff.core.plan import load_selected
    from proofdiff.fleet.placement import _pool, gpus_wanted, on_host

    host = parse_hosts(HOSTS).hosts[0]  # process, two GPU UUIDs, its own bin_dir
    opts = RunOptions(overrides=("*.gpus=1",))
    assert gpus_wanted(opts) == 2  # bench and prod may run side by side
    with on_host(opts, host) as placed:
        assert placed.bin_dir == "/opt/refprover/bin"
        got = load_selected(placed)
        assert {p.runtime.value for p in got.values()} == {"process"}
        assert sorted(u for p in got.values() for u in p.gpus) == list(host.gpu_uuids)
        # the host has no GPU left for another unit until this one ends
        with pytest.raises(ProofdiffError, match="not free on this host within 0 s"):
            with _pool(host).lease(1, 0):
                pass
    # a bisection probe carries its profile: that is what is placed
    probe = ProbeUnit(options=RunOptions(), profile=next(iter(load_selected(opts).values())))
    with on_host(probe, host) as placed:
        assert placed.profile.runtime.value == "process"
        assert placed.profile.gpus == host.gpu_uuids[:1]


def test_each_fleet_host_is_its_own_history_series() -> None:
    from proofdiff.history.fingerprint import machine_key

    facts = {"hostname": "box", "cpus_usable": 16, "mem_total_bytes": 128 << 30}
    a, b = (machine_key({**facts, "fleet_host": h}) for h in ("host-a", "host-b"))
    assert a.fingerprint != b.fingerprint and (a.host, b.host) == ("host-a", "host-b")
    assert machine_key(facts).host == "box"


def test_a_fleet_night_is_a_row_per_host_of_the_hosts_file_even_when_none_answers(
        tmp_path: Path) -> None:
    import json

    from proofdiff.cli import main
    from proofdiff.runtime.ports import free_port

    dark = tmp_path / "hosts.toml"  # two hosts on ports nothing listens on: refused at once
    dark.write_text('scheduler = "127.0.0.1"\n' + "".join(
        f'\n[[host]]\nname = "{n}"\nssh = "prover@127.0.0.1:{free_port()}"\n'
        for n in ("gpu-b", "gpu-a")), encoding="utf-8")
    rc = main(["nightly", "--hosts", str(dark), "--accept-unknown-host-keys", "--suite", "validity", "--bisect-budget-s", "0",
               "--report-dir", str(tmp_path / "nights"), "--run-id", "dark"])
    assert rc == 3
    night = json.loads((tmp_path / "nights" / "dark" / "summary.json").read_text())
    assert [(h["host"], h["decision"]) for h in night["hosts"]] == [
        ("gpu-a", "error"), ("gpu-b", "error")], night
    assert night["decision"] == "error" and night["decision_line"].startswith(
        "2 host(s): gpu-a error, gpu-b error; gpu-a: ERROR"), night["decision_line"]
    assert "host gpu-a did not run" in night["decision_line"]
    assert "did not answer over SSH" in night["decision_line"]
    page = (tmp_path / "nights" / "dark" / "index.html").read_text(encoding="utf-8")
    assert "gpu-a" in page and "gpu-b" in page


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


def test_a_joined_scheduler_is_never_changed_and_a_pinned_unit_its_nanny_restarted_is_lost(
        cluster: str, tmp_path: Path) -> None:
    def dies_once(marker: str) -> str:  # nested: it pickles by value to the workers
        from distributed import get_worker

        if not os.path.exists(marker):
            Path(marker).touch()
            os._exit(1)  # the worker process dies mid-unit; its nanny starts it again
        return f"ran on {get_worker().name}"

    def allowed_failures(dask_scheduler: object) -> int:
        return int(dask_scheduler.allowed_failures)  # type: ignore[attr-defined]

    with open_executor(RunOptions(cluster=cluster, retry_lost=True)) as ex:
        client = ex.client  # type: ignore[attr-defined]
        client.wait_for_workers(2, timeout=60)
        # the scheduler is someone else's: its settings stay as found while the run goes on
        assert client.run_on_scheduler(allowed_failures) == 3
        [name] = ex.workers()[:1]
        t0 = time.monotonic()
        [(where, why)] = ex.map_placed(dies_once, [str(tmp_path / "pinned")], name="pinned",
                                       on=[name], lost=lambda _item, message: message)
        # the restarted worker has the same name at another address: Dask would hold the
        # unit for the old one for ever; it is lost, within the wait's poll
        assert where == name and "its nanny restarted it" in why, why
        assert time.monotonic() - t0 < 60
    with open_executor(RunOptions(cluster=cluster)) as ex:
        assert ex.client.run_on_scheduler(allowed_failures) == 3  # type: ignore[attr-defined]
        ex.client.wait_for_workers(2, timeout=60)  # type: ignore[attr-defined]


# -- SSH host keys (a real SSH server on 127.0.0.1: tests/unit/ssh_server.py) ----------------

def test_a_host_key_is_checked_against_known_hosts_and_unknown_ones_only_on_the_flag(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from proofdiff.fleet.hosts import accepting_unknown_keys
    from proofdiff.fleet.ssh import check_hosts
    from tests.unit.ssh_server import ssh_server

    monkeypatch.setenv("HOME", str(tmp_path))  # ~/.ssh/known_hosts is the test's own
    users = tmp_path / ".ssh" / "known_hosts"
    with ssh_server(tmp_path) as srv:
        hosts = parse_hosts(f'[[host]]\nname = "h"\nssh = "prover@127.0.0.1:{srv.port}"\n'
                            f'ssh_key = "{srv.client_key}"\n', "fleet.toml")

        def problem(h: object = hosts) -> tuple[str, str]:
            [c] = check_hosts(h, timeout_s=10)  # type: ignore[arg-type]
            return c.problem, c.fix

        # no known_hosts at all: refused before any login, with the ways in
        what, fix = problem()
        assert f"no known_hosts file at {users}" in what, what
        assert "ssh-keyscan -p" in fix and "--accept-unknown-host-keys" in fix, fix
        # a known_hosts that does not name it: refused as unknown
        users.parent.mkdir()
        users.write_text("[127.0.0.1]:1 " + srv.host_key_line + "\n")
        what, fix = problem()
        assert "is unknown" in what and "has no line for it" in what, what
        assert "--accept-unknown-host-keys" in fix, fix
        # the flag lets an unknown host in; its key named in the file lets it in without it
        assert problem(accepting_unknown_keys(hosts)) == ("", "")
        users.write_text(srv.known_hosts_line())
        assert problem() == ("", "")
        # a key that differs from the file's is refused, the flag or not
        other = tmp_path / "other_hosts"
        other.write_text(srv.known_hosts_line().replace(srv.host_key_line, _another_key()))
        impostor = parse_hosts(f'known_hosts = "{other}"\n[[host]]\nname = "h"\n'
                               f'ssh = "prover@127.0.0.1:{srv.port}"\n'
                               f'ssh_key = "{srv.client_key}"\n', "fleet.toml")
        for h in (impostor, accepting_unknown_keys(impostor)):
            what, fix = problem(h)
            assert f"is not the one {other} holds for it" in what, what
            assert "if the host was rebuilt" in fix, fix


def _another_key() -> str:
    """A public key line of a key made here (``ssh-ed25519 AAAA...``)."""
    import asyncssh

    return asyncssh.generate_private_key("ssh-ed25519").export_public_key().decode().strip()
