"""The watchdog: an owner killed with SIGKILL leaves nothing behind (its containers and its run's
network are removed and its temp dirs deleted by the owner's watchdog, within 10 s)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import docker

OWNER = """
import json, sys, time
from pathlib import Path
from proofdiff.model.choices import Role
from proofdiff.runtime.runner import Runner
from proofdiff.runtime.spec import LaunchSpec
from proofdiff.runtime.watchdog import Watchdog
dog = Watchdog().start()
runner = Runner(sys.argv[1], tracker=dog)
c = runner.start(LaunchSpec(image=sys.argv[2], role=Role.DAEMON, profile="bench",
                               entrypoint=("sleep",), command=("600",), files={"/in/x": b"x"},
                               network="bridge"))
print(json.dumps({"owner": dog.owner, "id": c.sdk.id, "dir": str(c.workdir)}), flush=True)
time.sleep(600)
"""


def test_sigkill_of_the_owner_removes_its_containers_and_dirs(artifacts: Any,
                                                              tmp_path: Path) -> None:
    run_id = f"t-watchdog-{os.getpid()}"
    proc = subprocess.Popen([sys.executable, "-c", OWNER, run_id, artifacts.image_tag],
                            stdout=subprocess.PIPE, text=True)
    try:
        info = json.loads(proc.stdout.readline())  # type: ignore[union-attr]
        api = docker.from_env().api
        assert api.containers(filters={"id": info["id"]}), "the owner's container is not up"
        assert Path(info["dir"]).is_dir()
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        t0 = time.monotonic()
        while api.containers(all=True, filters={"label": f"proofdiff.owner={info['owner']}"}):
            assert time.monotonic() - t0 < 10, "the watchdog did not remove the container in 10 s"
            time.sleep(0.2)
        while Path(info["dir"]).exists():
            assert time.monotonic() - t0 < 10, "the watchdog did not remove the temp dir in 10 s"
            time.sleep(0.2)
        while api.networks(filters={"label": f"proofdiff.owner={info['owner']}"}):
            assert time.monotonic() - t0 < 10, "the watchdog did not remove the network in 10 s"
            time.sleep(0.2)
    finally:
        if proc.poll() is None:
            proc.kill()


def test_a_close_without_waiting_still_sweeps_what_the_owner_left(tmp_path: Path) -> None:
    # Session.close does not wait for the last sweep (it would cost every run's end a wait);
    # the watchdog still makes it, by itself, and ends
    from proofdiff.runtime.watchdog import Watchdog

    left = tmp_path / "left-behind"
    left.mkdir()
    dog = Watchdog().start()
    dog.track_dir(left)
    proc = dog._proc
    dog.close(wait=False)
    assert proc is not None
    assert proc.wait(timeout=30) == 0 and not left.exists()
