"""The fleet's hosts (harness/fleet): the hosts file's validation with file:line, the SSH
cluster's spec and the remote command line, a unit placed on a process host's GPUs, each host its
own history series, a night that is a row per host even when none answers, and SSH host keys
checked against known_hosts (a real SSH server on 127.0.0.1: tests/unit/ssh_server.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from proofdiff.fleet.hosts import HOST_KEYS, HostsError, parse_hosts
from proofdiff.model.errors import ProofdiffError
from proofdiff.model.run_options import RunOptions

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
