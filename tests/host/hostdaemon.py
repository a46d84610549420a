"""A real refprover daemon run on the host (no Docker) for client/driver tests.

The binaries, params and workload come from harness.build (cached outside the clone; `make
test` builds them first). The daemon listens on a free 127.0.0.1 port; it is stopped with
SIGTERM (then killed) at teardown.
"""

from __future__ import annotations

import os
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import tomli_w

from harness.target.client import ClientError, ProverClient

#: Seconds a host daemon may take to answer GetStatus.
READY_DEADLINE_S = 30.0


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def host_daemon(binary: Path, param_cache: Path, workdir: Path, config: dict, faults: str = ""
                ) -> Iterator[str]:
    """Runs ``binary -c <config>`` (config merged with listen + param cache); yields its address.

    Raises:
        RuntimeError: the daemon exited or did not answer within READY_DEADLINE_S, with its log.
    """
    addr = f"127.0.0.1:{free_port()}"
    cfg = {**config, "daemon": {"listen": addr}, "srs": {"param_cache": str(param_cache)}}
    cfg_path = workdir / f"refprover-{addr.rsplit(':', 1)[1]}.toml"
    cfg_path.write_text(tomli_w.dumps(cfg))
    log_path = cfg_path.with_suffix(".log")
    env = {**os.environ, "REFPROVER_FAULTS": faults}
    with open(log_path, "wb") as log:
        proc = subprocess.Popen([str(binary), "-c", str(cfg_path)], stdout=log,
                                stderr=subprocess.STDOUT, env=env)
    try:
        deadline = time.monotonic() + READY_DEADLINE_S
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"refprover exited {proc.returncode}:\n{log_path.read_text()}")
            try:
                with ProverClient(addr) as c:
                    c.get_status(timeout_s=1)
                break
            except ClientError:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"refprover not ready in {READY_DEADLINE_S} s:\n"
                                       f"{log_path.read_text()}") from None
                time.sleep(0.05)
        yield addr
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
