"""proofdiff's workflows over a fleet of SSH hosts with no Docker (docs/guide/fleet.md):
three containers of the SSH host image (tests/e2e/ssh_hosts.py), a Dask ``SSHCluster`` started
over them from a hosts file (the scheduler on the first host, one worker per host), every
daemon run there as a process from binaries, params and workloads shipped through the engine.

The hosts are started once for the module; each command starts its own cluster and stops it.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from proofdiff.gate.gate_result import Decision, GateResult
from proofdiff.model import serde
from proofdiff.model.status import Verdict
from proofdiff.report.summary_json import load_summary
from proofdiff.runtime.ports import free_port

from tests.e2e.conftest import REPO, unique
from tests.e2e.ssh_hosts import SshHosts, start_ssh_hosts
from tests.e2e.test_fleet import _proofdiff, bisect_param_path
from tests.e2e.test_process_target import _leftovers

pytestmark = pytest.mark.e2e

#: Two fake device UUIDs on host-c: placement by UUID is what is checked, not a GPU.
HOST_C_GPUS = ["GPU-00000000-0000-0000-0000-0000000000c1",
               "GPU-00000000-0000-0000-0000-0000000000c2"]


@pytest.fixture(scope="module")
def hosts(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SshHosts]:
    yield from start_ssh_hosts(tmp_path_factory.mktemp("ssh-hosts"),
                               gpu_uuids={"host-c": HOST_C_GPUS})


def _shipped(out: str) -> dict[str, tuple[int, int]]:
    """host -> (files sent, files already there), summed over a command's shipments (its
    artifacts, then each folder it ships on its own), from the caller's log."""
    got: dict[str, tuple[int, int]] = {}
    for m in re.finditer(r"artifacts: (\S+): sent (\d+) file\(s\), [\d.]+ MB; (\d+) "
                         r"already there", out):
        sent, present = got.get(m[1], (0, 0))
        got[m[1]] = (sent + int(m[2]), present + int(m[3]))
    return got


def _nothing_left(hosts: SshHosts) -> None:
    for name in hosts.names:
        procs = hosts.exec(name, "ps -eo args --no-headers").splitlines()
        assert [p for p in procs if not p.startswith(("sshd:", "ps ", "bash -lc"))] == [], name
        # nothing in the temp folders; in the home, the caches alone (the shipped artifacts
        # and Dask's scratch in proofdiff's, matplotlib's config)
        assert hosts.exec(name, "find /tmp /var/tmp -mindepth 1").strip() == "", name
        home = set(hosts.exec(name, "ls -A ~").split()) - {".bashrc", ".bash_logout",
                                                           ".profile"}
        assert home <= {".cache", ".config"}, (name, home)
        # the run's TLS credentials are gone from the host with the run
        assert hosts.exec(name, "ls -A ~/.cache/proofdiff/tls 2>/dev/null || true").strip() \
            == "", name
    assert not _leftovers(), "daemon processes left here"


def _two_hosts(hosts: SshHosts, tmp_path: Path) -> tuple[Path, tuple[str, str]]:
    """A hosts file of host-a and host-b alone (a third would only share the same two cores)."""
    two = tmp_path / "two-hosts.toml"
    two.write_text("\n\n".join(b for b in hosts.hosts_file.read_text().split("\n\n")
                                if 'name = "host-c"' not in b))
    return two, ("host-a", "host-b")


def test_a_gate_and_a_bisection_run_on_ssh_hosts_with_artifacts_shipped_once(
        artifacts: Any, hosts: SshHosts, tmp_path: Path, one_partition_workload: str) -> None:
    # nothing of refprover's is on the hosts before: what they prove with is shipped
    assert hosts.exec("host-a", "ls /usr/local/bin; ls ~/.cache 2>&1 || true").strip() in (
        "ls: cannot access '/home/prover/.cache': No such file or directory", "")
    # two builds as folders of host binaries: the baseline refprover (with its own verify, for
    # the cross-check), and a candidate whose refprover proves twice as slowly (a wrapper that
    # runs the build beside it with slow-prove: real work, self-contained, so it runs on a host)
    bins = Path(artifacts.bin_dir)
    base, cand = tmp_path / "baseline", tmp_path / "candidate"
    for d in (base, cand):
        d.mkdir()
    for name in ("refprover", "verify"):
        shutil.copy2(bins / name, base / name)
    shutil.copy2(bins / "refprover", cand / "refprover-build")
    (cand / "refprover").write_text('#!/bin/sh\nREFPROVER_FAULTS=slow-prove=2.0 exec '
                                    '"$(dirname "$0")/refprover-build" "$@"\n')
    (cand / "refprover").chmod(0o755)
    names = hosts.names  # all three: a wave of rounds is one per host
    rc, out, rdir = _proofdiff(tmp_path, "gate", "--hosts", str(hosts.hosts_file),
                               "--workload-file", one_partition_workload,
                               "--candidate-bin-dir", str(cand), "--baseline-bin-dir", str(base),
                               "--profile", "bench")
    res = serde.read(rdir / "summary.json", GateResult)
    assert rc == 1 and res.decision is Decision.FAIL, (res.decision_line, out)
    # the run's cluster spoke TLS with a certificate of its own (proofdiff.fleet.tls)
    assert "units on the Dask cluster tls://127.0.0.1:" in out, out
    # at concurrency 1 latency and throughput are one sample per round: both slower
    assert {(f.check, f.profile) for f in res.blocking()} == {("timing/latency", "bench"),
                                                              ("timing/throughput", "bench")}, (
        "\n".join(f.message for f in res.findings) + "\n" + out[-3000:])  # a str: never cut
    # the candidate's differential was one unit on a host, its daemons the shipped build's
    diff = load_summary(rdir / "differential")
    assert diff.verdict is Verdict.SAME and diff.machine["fleet_host"] in names
    assert all(r.daemon is not None and r.daemon.runtime == "process" for r in diff.runs)
    # the rounds went to every host, a wave at once, each round both builds on one host
    (t,) = res.timing
    assert set(t.hosts) == set(names) and sum(t.hosts.values()) == t.rounds, t.hosts
    assert "rounds per host" in (rdir / "index.html").read_text(encoding="utf-8")
    assert all(m.verdict == "WORSE" and m.direction == "slower" for m in t.metrics)
    assert res.verifier_check is not None and res.verifier_check.agreed, res.verifier_check
    # the artifacts and both builds reached each host, the same to each, before any unit
    first = _shipped(out)
    assert set(first) == set(names), out
    sent = {n for n, _p in first.values()}
    assert len(sent) == 1 and sent.pop() > 0, first
    _nothing_left(hosts)

    # two images cannot be gated there: these hosts run daemons as processes, so both sides
    # would run one build
    two, pair = _two_hosts(hosts, tmp_path)
    rc, out, rdir = _proofdiff(tmp_path, "gate", "--hosts", str(two), "--candidate",
                               artifacts.image_tag, "--baseline", artifacts.image_tag)
    assert rc == 3 and "two images cannot be gated on hosts that run daemons as processes" in out
    assert "--candidate-bin-dir" in out and not (rdir / "differential").exists(), out

    # a bisection over two of them: its probes are units on both; nothing is shipped again
    r, out, _rdir = bisect_param_path(tmp_path, "--hosts", str(two), "--workload-file",
                                      one_partition_workload)
    assert {p.host for p in r.probes} == set(pair), [(p.index, p.host) for p in r.probes]
    again = _shipped(out)
    assert set(again) == set(pair) and all(s == 0 for s, _p in again.values()), again
    # each host holds each artifact once: its blobs are what the gate sent it
    for name in names:
        blobs = hosts.exec(name, "ls ~/.cache/proofdiff/shipped/blobs | wc -l")
        assert int(blobs) == first[name][0], (name, blobs)
    _nothing_left(hosts)


def test_a_unit_that_asks_for_gpus_lands_where_they_are_and_gets_them_by_uuid(
        artifacts: Any, hosts: SshHosts, tmp_path: Path, one_partition_workload: str) -> None:
    # more hosts that cannot run units: one that does not answer, one whose Python has no
    # proofdiff, one whose host key is not the known one; each is reported with its fix, and
    # the run goes on with the three others
    # and one whose key is not the one its known_hosts holds (another key stands in for it)
    impostor = tmp_path / "known_hosts"
    impostor.write_text(f"[127.0.0.1]:{hosts.ports[2]} "
                        + (hosts.hosts_file.parent / "id_ed25519.pub").read_text())
    broken = tmp_path / "hosts-with-broken.toml"
    broken.write_text(hosts.hosts_file.read_text() + "\n".join([
        "", "[[host]]", 'name = "host-d"', f'ssh = "prover@127.0.0.1:{free_port()}"',
        'runtime = "process"', "", "[[host]]", 'name = "host-e"',
        f'ssh = "prover@127.0.0.1:{hosts.ports[1]}"', 'python = "/usr/bin/python3"',
        f'ssh_key = "{hosts.hosts_file.parent / "id_ed25519"}"', "", "[[host]]",
        'name = "host-f"', f'ssh = "prover@127.0.0.1:{hosts.ports[2]}"',
        f'known_hosts = "{impostor}"', ""]))
    rc, out, rdir = _proofdiff(tmp_path, "run", "--hosts", str(broken), "--all-hosts",
                               "--suite", "validity")
    assert rc == 3 and "3 of 6 host(s)" in out and "--all-hosts was given" in out, out
    assert not load_summary(rdir).runs, "a unit ran although --all-hosts was not met"
    # bench and prod ask for one GPU each: the unit holds two of Dask's GPU resources, which
    # only host-c offers (its two UUIDs); each daemon sees its own device, by UUID
    rc, out, rdir = _proofdiff(tmp_path, "run", "--hosts", str(broken),
                               "--workload-file", one_partition_workload, "--suite", "validity",
                               "--set", "*.gpus=1")
    res = load_summary(rdir)
    assert rc == 0 and res.verdict is Verdict.SAME, (res.verdict_line, out)
    assert "host host-d: did not answer over SSH" in out and "ssh_key" in out, out
    assert "host host-e: /usr/bin/python3 there cannot import proofdiff" in out, out
    assert "host host-f: its host key at prover@127.0.0.1" in out and "ssh-keyscan" in out, out
    assert "going on with 3 of 6 host(s)" in out, out
    assert res.machine["fleet_host"] == "host-c", res.machine
    seen = {}
    for run in res.runs:
        assert run.daemon is not None
        env = run.daemon.inspect_view.get("env", {})
        seen[run.profile] = env.get("CUDA_VISIBLE_DEVICES") if isinstance(env, dict) else env
    assert sorted(seen.values()) == HOST_C_GPUS, seen  # disjoint, by UUID, never an index
    _nothing_left(hosts)


def test_regression_cases_are_replayed_as_units_over_the_hosts(
        artifacts: Any, hosts: SshHosts, tmp_path: Path, two_job_workload: str) -> None:
    # two cases of the reference build, each replayed as pinned and with its fix, as processes
    # on whichever host Dask gives it; their folders shipped like the other artifacts, and the
    # first two jobs of wpost-2k as the cases' inputs (both in flight at once on prod)
    cases = tmp_path / "cases"
    for name in ("concurrent-jobs-share-one-job-id", "warmup-fails-params-read-elsewhere"):
        shutil.copytree(REPO / "regressions" / name, cases / name)
    rid = unique("ssh-replay")
    proc = subprocess.run([sys.executable, "-m", "proofdiff", "run", "--hosts",
                           str(hosts.hosts_file), "--suite", "regressions",
                           "--workload-file", two_job_workload, "--report-dir",
                           str(tmp_path / "r"), "--run-id", rid],
                          cwd=REPO, capture_output=True, text=True, timeout=900,
                          env={**os.environ, "PROOFDIFF_REGRESSIONS": str(cases)})
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0 and "2 case(s); exit 0" in out, out
    summaries = [load_summary(d) for d in (tmp_path / "r").iterdir()
                 if (d / "summary.json").is_file()]
    assert len(summaries) == 4, out  # each case as pinned and with its fix
    assert all(s.machine["fleet_host"] in hosts.names for s in summaries)
    assert all(run.daemon is not None and run.daemon.runtime == "process"
               for s in summaries for run in s.runs)
    assert len({s.machine["fleet_host"] for s in summaries}) >= 2, out
    _nothing_left(hosts)


def test_a_night_runs_on_every_host_and_each_joins_its_own_series(
        artifacts: Any, hosts: SshHosts, tmp_path: Path, one_partition_workload: str) -> None:
    rid = unique("ssh-night")
    report = tmp_path / "nights"
    two, names = _two_hosts(hosts, tmp_path)  # a row each
    # and a third host that does not answer: a row of the matrix too, never left out
    with two.open("a", encoding="utf-8") as f:
        f.write(f'\n\n[[host]]\nname = "host-z"\nssh = "prover@127.0.0.1:{free_port()}"\n')
    proc = subprocess.run([sys.executable, "-m", "proofdiff", "nightly", "--hosts",
                           str(two), "--suite", "validity", "--workload-file",
                           one_partition_workload, "--bisect-budget-s", "0", "--report-dir",
                           str(report), "--run-id", rid],
                          cwd=REPO, capture_output=True, text=True, timeout=900)
    out = proc.stdout + proc.stderr
    # the first night: nothing new on the hosts that ran; the dark one makes it ERROR
    assert proc.returncode == 3, out
    # the fleet's night: one row per host, each host's night a complete night of its own
    fleet = json.loads((report / rid / "summary.json").read_text())
    assert [(h["host"], h["decision"]) for h in fleet["hosts"]] == [
        *((n, "clean") for n in names), ("host-z", "error")], fleet
    assert fleet["decision"] == "error" and "host-z error" in fleet["decision_line"], fleet
    assert "host host-z did not run: it failed its check" in fleet["decision_line"], fleet
    page = (report / rid / "index.html").read_text()
    assert all(f'href="../{rid}-{n}/index.html"' in page for n in (*names, "host-z"))
    for name in names:
        diff = load_summary(report / f"{rid}-{name}" / "differential")
        assert diff.machine["fleet_host"] == name and diff.verdict is Verdict.SAME, (
            name, diff.verdict_line, out)
        assert f"host {name}: clean" in out, out
    # each night is stored in the default history, in its host's own series
    shown = subprocess.run([sys.executable, "-m", "proofdiff", "history", "--history",
                            "default", "--report-dir", str(report), "--profile", "bench"],
                           cwd=REPO, capture_output=True, text=True, timeout=300)
    assert all(f"- {n}, no GPU" in shown.stdout for n in names), (
        shown.stdout + shown.stderr)
    _nothing_left(hosts)


def test_a_dask_process_of_the_run_left_on_a_host_is_stopped_with_its_group(
        hosts: SshHosts) -> None:
    # stand-ins for a Nanny that outlived the cluster's close on host-b (seen once in CI):
    # processes whose command line is a dask_spec's for a scheduler port, each the leader of
    # its process group with a child in it (the worker it forked); one for this run's port,
    # one for another run's, which must be left alone
    from proofdiff.fleet.hosts import load_hosts
    from proofdiff.fleet.ssh_leftovers import stop_leftovers

    ours, theirs = free_port(), free_port()
    for port in (ours, theirs):
        hosts.exec("host-b", "setsid -f sh -c 'sleep 300 & exec python3 -c \"import time; "
                   f"time.sleep(300)\" distributed.cli.dask_spec tcp://127.0.0.1:{port}' "
                   ">/dev/null 2>&1")
    host_b = [h for h in load_hosts(str(hosts.hosts_file)).hosts if h.name == "host-b"]
    lines: list[str] = []
    got = stop_leftovers(host_b, f"tcp://127.0.0.1:{ours}", grace_s=1.0, log=lines.append)
    assert got == {"host-b": "1"} and "still ran 1 s after the cluster closed" in lines[0], (
        got, lines)
    procs = hosts.exec("host-b", "ps -eo args --no-headers")
    assert f"127.0.0.1:{ours}" not in procs and procs.count("sleep 300") == 1, procs
    assert f"127.0.0.1:{theirs}" in procs, procs
    assert stop_leftovers(host_b, f"tcp://127.0.0.1:{theirs}", grace_s=0.2) == {"host-b": "1"}
    assert stop_leftovers(host_b, f"tcp://127.0.0.1:{theirs}", grace_s=0.2) == {"host-b": "0"}
    _nothing_left(hosts)


def _kill_the_host_that_proves(hosts: SshHosts, candidates: tuple[str, ...],
                               proc: subprocess.Popen[str], deadline_s: float = 300) -> str:
    """Wait until a refprover daemon runs on one of ``candidates``, then kill that host's
    container (its sshd, Dask worker and daemons die at once, as with a host that goes away);
    its name."""
    import docker

    client = docker.from_env()
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline and proc.poll() is None:
        for name in candidates:
            c = client.containers.get(hosts.containers[hosts.names.index(name)])
            if any(p[-1].split()[0].endswith("/refprover") for p in c.top()["Processes"]):
                c.kill()
                return name
        time.sleep(0.2)
    proc.kill()
    pytest.fail(f"no daemon was seen on {candidates}: {proc.communicate()[0]}")


def test_a_host_lost_mid_unit_is_named_or_its_unit_run_again_with_retry_lost(
        artifacts: Any, tmp_path_factory: pytest.TempPathFactory, tmp_path: Path,
        one_partition_workload: str) -> None:
    # hosts of its own (some die here): x the scheduler's, y and z with two GPU UUIDs each,
    # so a unit that asks for two GPUs runs on y or z, never on the scheduler's host
    gpus = {n: [f"GPU-00000000-0000-0000-0000-0000000000{n[-1]}{i}" for i in (1, 2)]
            for n in ("host-y", "host-z")}
    gen = start_ssh_hosts(tmp_path_factory.mktemp("lost-hosts"),
                          ("host-x", "host-y", "host-z"), gpu_uuids=gpus)
    hosts = next(gen)
    try:
        def run(*extra: str) -> tuple[subprocess.Popen[str], str, Path]:
            rid = unique("ssh-lost")
            cmd = [sys.executable, "-m", "proofdiff", "run", "--hosts", str(hosts.hosts_file),
                   "--workload-file", one_partition_workload, "--suite", "validity", "--set",
                   "*.gpus=1", "--report-dir", str(tmp_path), "--run-id", rid, *extra]
            proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.PIPE,
                                    stderr=subprocess.STDOUT, text=True)
            return proc, rid, tmp_path / rid

        # --retry-lost: the unit runs again, to its end, on the other GPU host
        proc, _rid, rdir = run("--retry-lost")
        dead = _kill_the_host_that_proves(hosts, ("host-y", "host-z"), proc)
        out = proc.communicate(timeout=600)[0]
        res = load_summary(rdir)
        other = ({"host-y", "host-z"} - {dead}).pop()
        assert proc.returncode == 0 and res.verdict is Verdict.SAME, (res.verdict_line, out)
        assert res.machine["fleet_host"] == other, (res.machine, out)
        assert f"host {dead} left the cluster: its running units run again" in out, out

        # by default: the unit is reported lost, its host named; the run ends with its report
        proc, _rid, rdir = run()
        assert _kill_the_host_that_proves(hosts, (other,), proc) == other
        out = proc.communicate(timeout=600)[0]
        res = load_summary(rdir)  # the report is written, with the loss in it
        assert proc.returncode == 3 and res.verdict is Verdict.ERROR, (res.verdict_line, out)
        assert f"host {dead}: did not answer over SSH" in out, out  # the one killed before
        assert any(f"was lost: host {other} went away while it ran" in e and "--retry-lost" in e
                   for e in res.errors), (res.errors, out)
        assert f"was lost: host {other}" in (rdir / "index.html").read_text(), "not in the page"
        # the host that stayed has nothing left of either run
        assert not [p for p in hosts.exec("host-x", "ps -eo args --no-headers").splitlines()
                    if not p.startswith(("sshd:", "ps ", "bash -lc"))]
        assert hosts.exec("host-x", "find /tmp /var/tmp -mindepth 1").strip() == ""
        assert not _leftovers(), "daemon processes left here"
    finally:
        gen.close()
