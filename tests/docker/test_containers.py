"""The one container runner on the real engine: labels, hardening, read-only mounts, files and
outputs, deadlines and the stop condition, the log tail of a daemon that dies, and cleanup."""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any

import pytest

from proofdiff.model.choices import Role
from proofdiff.model.profile_file import load_profiles
from msgspec.structs import replace

from proofdiff.runtime.hardening import PIDS_LIMIT
from proofdiff.runtime.runner import Runner
from proofdiff.runtime.spec import ContainerError, LaunchSpec, Mount
from proofdiff.drivers.cuzk_client import status_probe
from proofdiff.runtime.daemon import LaunchError, start_daemon


def _leftover_dirs(role: str) -> list[str]:
    return sorted(p.name for p in Path(tempfile.gettempdir()).glob(f"proofdiff-{role}-*"))


def test_a_tool_container_is_labelled_hardened_and_removed(artifacts: Any,
                                                           runner: Runner,
                                                           tmp_path: Path) -> None:
    before = _leftover_dirs("preflight")
    (tmp_path / "ro.txt").write_text("params")
    tmp_path.chmod(0o755)
    (tmp_path / "ro.txt").chmod(0o644)
    script = ("id -u; echo $(cat /in/msg); echo $(cat /p/ro.txt); echo x > /p/ro.txt 2>/dev/null || echo ro; "
              "echo out > /out/result; grep CapEff /proc/self/status; "
              # /out: its owner alone may enter; the root filesystem: read-only, /tmp a tmpfs
              "echo out=$(stat -c '%a:%u' /out); touch /etc/x 2>/dev/null || echo rootfs=ro; "
              "touch /tmp/x && echo tmp=rw")
    spec = LaunchSpec(image=artifacts.image_tag, role=Role.PREFLIGHT, profile="bench",
                         entrypoint=("sh", "-c"), command=(script,),
                         mounts=(Mount(tmp_path, "/p"),), files={"/in/msg": b"hello"},
                         want_out=True)
    res = runner.run(spec, timeout_s=60)
    lines = res.stdout.split()
    assert res.exit_code == 0 and lines[:4] == ["65534", "hello", "params", "ro"], res.output
    assert "CapEff:\t0000000000000000" in res.stdout  # every capability dropped
    assert res.out_files == {"result": b"out\n"}
    # other users of this machine see neither /out (0700, the container user's) nor the root
    # filesystem writable; refprover's image says it writes only temporary files
    assert {"out=700:65534", "rootfs=ro", "tmp=rw"} <= set(lines), res.output
    assert not runner.client.api.containers(all=True, filters={"label": f"proofdiff.run={runner.run_id}"})
    assert _leftover_dirs("preflight") == before  # its temp dir went with it


def test_labels_carry_run_owner_role_profile_and_image(artifacts: Any,
                                                       runner: Runner) -> None:
    spec = LaunchSpec(image=artifacts.image_tag, role=Role.BENCH, profile="prod",
                         entrypoint=("sleep",), command=("30",))
    c = runner.start(spec)
    try:
        attrs = c.inspect()
        labels = attrs["Config"]["Labels"]
        assert labels["proofdiff.run"] == runner.run_id and labels["proofdiff.role"] == "bench"
        assert labels["proofdiff.profile"] == "prod" and labels["proofdiff.image"] == artifacts.image_tag
        assert labels["proofdiff.owner"] == runner.tracker.owner  # type: ignore[union-attr]
        host = attrs["HostConfig"]
        assert host["Privileged"] is False and host["CapDrop"] == ["ALL"]
        assert host["SecurityOpt"] == ["no-new-privileges"]
        assert host["PidsLimit"] == PIDS_LIMIT and host["ReadonlyRootfs"] is True
        assert set(host["Tmpfs"]) == {"/tmp", "/var/tmp"}, host["Tmpfs"]
        assert attrs["Config"]["User"] == "65534:65534" and attrs["Config"]["NetworkDisabled"]
    finally:
        c.remove()


def test_deadline_and_stop_condition_kill_the_container(artifacts: Any,
                                                        runner: Runner) -> None:
    spec = LaunchSpec(image=artifacts.image_tag, role=Role.BENCH, entrypoint=("sleep",),
                         command=("60",))
    late = runner.run(spec, timeout_s=1.0)
    assert late.timed_out and not late.stopped and late.exit_code == -1
    t0 = time.monotonic()
    stopped = runner.run(spec, timeout_s=60.0, should_stop=lambda: time.monotonic() - t0 > 1.0)
    assert stopped.stopped and not stopped.timed_out


def test_a_missing_image_is_said_once_with_the_fix(runner: Runner) -> None:
    with pytest.raises(ContainerError) as ei:
        runner.run(LaunchSpec(image="proofdiff/refprover:does-not-exist", role=Role.VERIFIER),
                   timeout_s=10)
    text = str(ei.value)
    assert text.count("not present locally") == 1 and "make image" in ei.value.fix
    assert not text.startswith("ERROR")


def test_a_daemon_that_exits_at_start_says_why_with_its_log(artifacts: Any,
                                                            runner: Runner) -> None:
    bench = replace(load_profiles("refprover", ['bench.command=["--no-such-flag"]'])["bench"],
                    image=artifacts.image_tag)
    with pytest.raises(LaunchError) as ei:
        start_daemon(runner, bench, Path(artifacts.param_cache), probe=status_probe,
                     name=runner.unique_name("bench"))
    text = str(ei.value)
    assert "exited with code 2 before answering GetStatus" in text
    assert "--- last log lines ---" in text and "--no-such-flag" in text
    assert ei.value.exit_code == 2 and ei.value.container_id


def _default_gateway() -> str:
    """This machine's default gateway (/proc/net/route): an address outside it that answers."""
    import socket
    import struct

    for line in Path("/proc/net/route").read_text().splitlines()[1:]:
        fields = line.split()
        if fields[1] == "00000000":
            return socket.inet_ntoa(struct.pack("<L", int(fields[2], 16)))
    pytest.skip("this machine has no default route: nothing outside to try to reach")


def _probe(runner: Runner, image: str, network: str, script: str) -> str:
    res = runner.run(LaunchSpec(image=image, role=Role.BENCH, entrypoint=("bash", "-c"),
                                command=(script,), network=network), timeout_s=30)
    assert not res.timed_out, res.output
    return res.output


def test_a_bridge_container_reaches_its_daemon_and_nothing_outside(artifacts: Any,
                                                                   runner: Runner) -> None:
    # the run's own network (proofdiff.runtime.networks): the daemon's port published on
    # 127.0.0.1 answers here, a neighbour (the bench tool's place) reaches the daemon, and an
    # address outside this machine gets nothing back: no reply at all within 3 s (a refusal
    # would be an answer from outside). Docker's default bridge (network "outbound"), the
    # control, gets that outside answer, so the probe can see one
    import socket

    gateway = _default_gateway()
    outside = (f"timeout 3 bash -c 'echo > /dev/tcp/{gateway}/80' 2>&1; "
               "echo outside-rc=$?")
    control = _probe(runner, artifacts.image_tag, "outbound", outside)
    if "outside-rc=124" in control:
        pytest.skip(f"{gateway}:80 does not answer even from Docker's own bridge: {control}")
    daemon = runner.start(LaunchSpec(
        image=artifacts.image_tag, role=Role.DAEMON, profile="bench",
        entrypoint=("/usr/local/bin/refprover",), command=("--listen", "0.0.0.0:9820"),
        network="bridge", ports={"grpc": 9820}))
    try:
        daemon.inspect()  # the engine's published ports, as of now
        port = daemon.host_port("grpc")
        assert port is not None
        deadline = time.monotonic() + 30
        while True:  # the daemon's published port, from this machine
            try:
                socket.create_connection(("127.0.0.1", port), timeout=2).close()
                break
            except OSError:
                assert time.monotonic() < deadline, daemon.logs(tail=20)
                time.sleep(0.1)
        got = _probe(runner, artifacts.image_tag, "bridge",
                     f"timeout 5 bash -c 'echo > /dev/tcp/{daemon.ip()}/9820' && "
                     f"echo neighbour=ok; {outside}")
        assert "neighbour=ok" in got, got
        assert "outside-rc=124" in got and "refused" not in got, (got, control)
        net = daemon.inspect()["HostConfig"]["NetworkMode"]
        opts = runner.client.networks.get(net).attrs["Options"]
        assert opts.get("com.docker.network.bridge.enable_ip_masquerade") == "false", opts
        assert daemon.view()["network_mode"] == "the run's own bridge (no outbound)"
    finally:
        daemon.remove()
    runner.close()  # the run's network goes with the run
    assert not runner.client.networks.list(filters={"label": f"proofdiff.run={runner.run_id}"})
