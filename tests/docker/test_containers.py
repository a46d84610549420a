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
              "echo out > /out/result; grep CapEff /proc/self/status")
    spec = LaunchSpec(image=artifacts.image_tag, role=Role.PREFLIGHT, profile="bench",
                         entrypoint=("sh", "-c"), command=(script,),
                         mounts=(Mount(tmp_path, "/p"),), files={"/in/msg": b"hello"},
                         want_out=True)
    res = runner.run(spec, timeout_s=60)
    lines = res.stdout.split()
    assert res.exit_code == 0 and lines[:4] == ["65534", "hello", "params", "ro"], res.output
    assert "CapEff:\t0000000000000000" in res.stdout  # every capability dropped
    assert res.out_files == {"result": b"out\n"}
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
