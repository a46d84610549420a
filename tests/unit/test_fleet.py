"""The fleet's executor on a real Dask ``LocalCluster`` (worker processes on 127.0.0.1, no
dashboard, TLS with a run's own credentials), joined by its scheduler's address as ``--cluster``
joins one: units come back as the model's structs from both workers; a worker on other proofdiff
code, a client without the run's credentials and an unreachable or lost scheduler are refused
within their deadlines; artifacts are shipped once, by content, never through a symbolic link.
The hosts file and SSH: tests/unit/test_fleet_hosts.py."""

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
from proofdiff.fleet.tls import RunCredentials, new_credentials
from proofdiff.fleet.version import proofdiff_version
from proofdiff.model.result import DifferentialResult
from proofdiff.model.run_options import RunOptions
from proofdiff.model.status import Verdict
from proofdiff.regressions.replay_all import CaseRun, CaseUnit, replay_case

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
                         worker_dashboard_address=None,
                         scheduler_kwargs={"dashboard_address": "127.0.0.1:0"}) as lc:
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
