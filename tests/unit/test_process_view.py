"""How a process runtime sees a container spec: paths and listen addresses rewritten as a
bind mount and a published port would give them; limits planned with the reason."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from proofdiff.runtime.limits import LimitPlan, parse_bytes, plan_limits
from proofdiff.runtime.hostview import HostView
from proofdiff.runtime import ports
from proofdiff.runtime.ports import _ephemeral_range, free_port

VIEW = HostView(paths={"/data/zk/params": "/host/params", "/data/zk/cuzk.toml": "/w/files/0-cuzk.toml",
                       "/out": "/w/out"}, ports={9820: 41001, 9821: 41002})


def test_paths_are_rewritten_whole_and_under_a_mount_only() -> None:
    assert VIEW.text("/data/zk/params") == "/host/params"
    assert VIEW.text("/data/zk/params/x.vk") == "/host/params/x.vk"
    assert VIEW.text("--param-cache=/data/zk/params") == "--param-cache=/host/params"
    assert VIEW.text('param_cache = "/data/zk/params"') == 'param_cache = "/host/params"'
    assert VIEW.text("/data/zk/params2") == "/data/zk/params2"  # another path
    assert VIEW.text("/x/data/zk/params") == "/x/data/zk/params"  # not at a path's start
    assert VIEW.text("QUJD+/out") == "QUJD+/out"  # base64, not a path
    assert VIEW.argv(("-c", "/data/zk/cuzk.toml")) == ["-c", "/w/files/0-cuzk.toml"]


def test_published_listen_addresses_become_loopback_host_ports() -> None:
    assert VIEW.text('listen = "0.0.0.0:9820"') == 'listen = "127.0.0.1:41001"'
    assert VIEW.text("--listen [::]:9821") == "--listen 127.0.0.1:41002"
    assert VIEW.text("0.0.0.0:98200") == "0.0.0.0:98200"  # another port
    assert VIEW.text("0.0.0.0:9999") == "0.0.0.0:9999"  # not published
    assert VIEW.env({"A": "127.0.0.1:9820"}) == {"A": "127.0.0.1:41001"}


def test_binary_files_are_left_alone() -> None:
    raw = b"\xff\xfe/data/zk/params"
    assert VIEW.data(raw) == raw
    assert VIEW.data(b"/data/zk/params") == b"/host/params"


@pytest.mark.parametrize("text,n", [("1200m", 1200 << 20), ("4g", 4 << 30), ("512k", 512 << 10),
                                    ("1048576", 1048576), ("2GiB", 2 << 30), ("1.5g", 3 << 29)])
def test_docker_sizes(text: str, n: int) -> None:
    assert parse_bytes(text) == n


def test_a_bad_size_says_the_syntax() -> None:
    with pytest.raises(ValueError, match="docker's syntax"):
        parse_bytes("lots")


def test_without_cgroup_v2_limits_fall_back_to_prlimit_with_the_reason(tmp_path: Path) -> None:
    plan = plan_limits("daemon", "1200m", 1.5, root=tmp_path)  # no cgroup.controllers here
    assert plan.enforced_by == "prlimit" and plan.rlimit_as_bytes == 1200 << 20
    assert plan.affinity_cores in (1, 2) and plan.cgroup is None
    assert "no cgroup v2" in plan.note and "RLIMIT_AS" in plan.note and "cpus=1.5" in plan.note
    assert plan.launcher_args()[:2] == ["--rlimit-as", str(1200 << 20)]
    assert plan_limits("daemon", None, None) == LimitPlan()


def test_a_daemon_port_is_free_and_never_one_the_kernel_hands_out_itself(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # The kernel gives outgoing connections their own end from the ephemeral range; a daemon's
    # port there can be taken between the pick and the daemon's bind.
    lo, _hi = _ephemeral_range()
    picked = {free_port() for _ in range(50)}
    assert all(1024 <= p < lo for p in picked), sorted(picked)
    assert len(picked) > 40  # a random pick, not one port handed to every daemon
    with socket.socket() as held:
        held.bind(("127.0.0.1", min(picked)))
        picks = iter([min(picked), max(picked)])
        monkeypatch.setattr(ports.random.Random, "randint", lambda _self, _a, _b: next(picks))
        assert free_port() == max(picked)  # the bound one is passed over
