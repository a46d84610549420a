"""proofdiff's workflows on a real Dask cluster (docs/guide/fleet.md): a ``LocalCluster`` of
two worker processes on 127.0.0.1 (no dashboard), started here and stopped after, joined by
``--cluster`` as a scheduler of GPU hosts would be. The daemons run as processes (refprover's
binaries: the process runtime, as on a host without Docker).

One bisection whose probes are units (two at a time, one per worker) and one differential as
a unit (both profiles on one worker), each report written by the caller; nothing is left
running."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from proofdiff.bisect import BisectResult
from proofdiff.model import serde
from proofdiff.model.status import Verdict
from proofdiff.report.summary_json import load_summary

from tests.e2e.conftest import REPO, unique
from tests.e2e.test_process_target import _leftovers

pytestmark = pytest.mark.e2e


@pytest.fixture
def cluster(tmp_path_factory: pytest.TempPathFactory,
            monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A LocalCluster: 2 worker processes (named 0 and 1), 1 thread each, on 127.0.0.1, no
    dashboard, TLS with a certificate of its own; its scheduler's address (``tls://``). The
    proofdiff commands a test starts get that certificate as a user gives it to ``--cluster``:
    Dask's environment variables (this process: Dask's configuration)."""
    import dask.config
    from distributed import LocalCluster

    from proofdiff.fleet.cluster import TLS_ENV
    from proofdiff.fleet.tls import new_credentials

    creds = new_credentials()
    pem = tmp_path_factory.mktemp("cluster-tls") / "cluster.pem"
    pem.write_text(creds.cert_pem + creds.key_pem)
    pem.chmod(0o600)
    for var in TLS_ENV:  # the CA, the certificate and its key: one file holds all three
        monkeypatch.setenv(var, str(pem))
    with dask.config.set({f"distributed.comm.tls.{k}": str(pem)
                          for k in ("ca-file", "client.cert", "client.key")}), \
            LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                         protocol="tls", security=creds.security(), dashboard_address=None,
                         worker_dashboard_address=None,
                         scheduler_kwargs={"dashboard_address": "127.0.0.1:0"}) as lc:
        yield str(lc.scheduler_address)


def _proofdiff(tmp_path: Path, *args: str) -> tuple[int, str, Path]:
    rid = unique(f"fleet-{args[0]}")
    cmd = [sys.executable, "-m", "proofdiff", *args, "--report-dir", str(tmp_path),
           "--run-id", rid]
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=600)
    out = proc.stdout + proc.stderr
    assert (tmp_path / rid / "summary.json").is_file(), f"no report from {cmd}:\n{out}"
    return proc.returncode, out, tmp_path / rid


def bisect_param_path(tmp_path: Path, *args: str) -> tuple[BisectResult, str, Path]:
    """``proofdiff bisect ARGS`` of ``param-path-default`` judged by ``preflight/params``: it
    is found, the three keys that name the param path (the same on one machine or a fleet);
    the result, the output and the report dir."""
    rc, out, rdir = _proofdiff(tmp_path, "bisect", *args, "--set",
                               "*.env.REFPROVER_FAULTS=param-path-default",
                               "--oracle", "preflight/params")
    r = serde.read(rdir / "summary.json", BisectResult)
    assert rc == 0 and r.status == "found", out
    assert {c.path for c in r.change} == {"mounts.params", "config.srs.param_cache",
                                          "env.FIL_PROOFS_PARAMETER_CACHE"}, r.steps
    return r, out, rdir


def test_a_bisection_and_a_differential_run_their_units_on_a_dask_cluster(
        artifacts: Any, cluster: str, tmp_path: Path, two_job_workload: str) -> None:
    procs = ("--cluster", cluster, "--bin-dir", str(artifacts.bin_dir), "--set",
             "*.runtime=process", "--workload-file", two_job_workload)
    r, out, rdir = bisect_param_path(tmp_path, *procs)
    # each worker ran its share: the good and bad profiles, and the confirmation, side by side
    assert {p.host for p in r.probes} == {"0", "1"}, [(p.index, p.host) for p in r.probes]
    assert all((rdir / "probes" / p.run_id / "summary.json").is_file() for p in r.probes)

    rc, out, rdir = _proofdiff(tmp_path, "run", *procs, "--suite", "validity")
    res = load_summary(rdir)
    assert rc == 0 and res.verdict is Verdict.SAME, (res.verdict_line, out)
    assert "the differential ran on" in out and "units on the Dask cluster" in out, out
    assert {run.profile for run in res.runs} == {"bench", "prod"}
    assert all(run.daemon is not None and run.daemon.runtime == "process" for run in res.runs)
    [proofs] = res.records_of("validity", "prod", "wpost-2k", "proofs")
    assert proofs.counts is not None and proofs.counts.valid == 2, proofs
    assert not _leftovers(), "daemon processes outlived the units"


def test_a_ctrl_c_stops_the_unit_running_on_a_worker_and_its_report_is_written(
        artifacts: Any, cluster: str, tmp_path: Path, two_job_workload: str) -> None:
    import signal
    import time

    rid = unique("fleet-interrupt")
    proc = subprocess.Popen(
        [sys.executable, "-m", "proofdiff", "run", "--cluster", cluster, "--bin-dir",
         str(artifacts.bin_dir), "--set", "*.runtime=process", "--workload-file",
         two_job_workload, "--suite", "validity", "--report-dir", str(tmp_path), "--run-id",
         rid], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + 120
    while not _leftovers():  # the unit's daemons run on a worker (a process of this machine)
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()[0]
        time.sleep(0.1)
    proc.send_signal(signal.SIGINT)
    t0 = time.monotonic()
    out = proc.communicate(timeout=90)[0]
    assert proc.returncode == 130 and time.monotonic() - t0 < 30, (proc.returncode, out)
    assert "1 running unit(s) of differential told to stop" in out, out
    res = load_summary(tmp_path / rid)  # what the unit did comes back, its report written
    assert res.verdict is Verdict.INTERRUPTED, res.verdict_line
    assert not _leftovers(), "the interrupted unit left its daemons running on the worker"
    from distributed import Client

    with Client(cluster, set_as_default=False) as c:  # the worker is free again
        assert not any(c.processing().values()), c.processing()


def test_an_image_a_docker_host_lacks_is_saved_here_shipped_once_and_loaded_there(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import io
    import tarfile

    import docker
    from distributed import Client, LocalCluster

    from proofdiff.fleet.hosts import Host
    from proofdiff.fleet.images import image_tar, ship_images

    # a tiny real image (one file), saved into the cache as a run's image is, then removed: the
    # two hosts (two workers on this machine's engine, both of runtime docker) lack it
    engine = docker.from_env()
    repo, tag = "proofdiff/ship-test", unique("image")
    rootfs = io.BytesIO()
    with tarfile.open(fileobj=rootfs, mode="w") as t:
        info = tarfile.TarInfo("shipped")
        info.size = len(tag)
        t.addfile(info, io.BytesIO(tag.encode()))
    engine.api.import_image_from_data(rootfs.getvalue(), repository=repo, tag=tag)
    image = f"{repo}:{tag}"
    image_id = str(engine.images.get(image).id)
    cache = tmp_path / "cache"
    try:
        assert image_tar(image, image_id, cache).is_file()
        engine.images.remove(image)
        monkeypatch.setenv("PROOFDIFF_SHIPPED", str(tmp_path / "shipped"))  # the workers'
        hosts = {n: Host(name=n, ssh="127.0.0.1", runtime="docker") for n in ("0", "1")}
        with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                          dashboard_address=None, worker_dashboard_address=None,
                          scheduler_kwargs={"dashboard_address": "127.0.0.1:0"}) as lc, \
                Client(lc) as client:
            lines: list[str] = []
            first = ship_images(client, [(image, image_id)], hosts, cache_root=cache,
                                log=lines.append)
            # host 0 lacked it: the tar went there and was loaded, with the same id; host 1,
            # on the same engine, holds it by then and is sent nothing
            assert engine.images.get(image).id == image_id
            assert [(r.worker, r.sent) for r in first] == [("0", 1)], lines
            assert f"image {image} ({image_id[:19]}): loaded on 0" in lines, lines
            assert ship_images(client, [(image, image_id)], hosts, cache_root=cache) == []
    finally:
        if engine.images.list(name=image):
            engine.images.remove(image, force=True)
