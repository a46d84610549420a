"""The watchdog of one owner process: removes what the owner started if the owner dies.

Like testcontainers' Ryuk, minus the privileged container: a small process of our own, started
by the owner (the CLI, pytest, or each pytest-xdist worker) in a session of its own, tied to the
owner by a pipe. The owner writes what to clean as it goes (``dir PATH`` for a temp dir,
``pgid N`` for a process group; containers are found by their ``proofdiff.owner`` label).
When the pipe closes, because the owner exited or was killed (SIGKILL included: the kernel
closes the pipe), the watchdog at once force-removes every container labelled with the owner,
kills the process groups and removes the dirs still listed, then exits. An owner that ends
normally has already removed everything, so that sweep finds nothing.

    python -m proofdiff.runtime.watchdog --owner OWNER [--log FILE]   # reads its orders on stdin
"""

from __future__ import annotations

import argparse
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import IO

__all__ = ["Watchdog", "main"]


class Watchdog:
    """The owner's side. Call :meth:`start` once; the watchdog lives until this process ends.

    Attributes:
        owner: the ``proofdiff.owner`` label value (``<host>-<pid>-<6 hex>``).
    """

    def __init__(self) -> None:
        self.owner = f"{socket.gethostname()}-{os.getpid()}-{secrets.token_hex(3)}"
        self._proc: subprocess.Popen[bytes] | None = None
        self._pipe: IO[bytes] | None = None
        self._lock = threading.Lock()

    def start(self) -> Watchdog:
        """Start the watchdog process (idempotent); returns self.

        Raises:
            OSError: the process could not be started.
        """
        with self._lock:
            if self._proc is None:
                self._proc = subprocess.Popen(
                    [sys.executable, "-m", "proofdiff.runtime.watchdog", "--owner", self.owner],
                    stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                    start_new_session=True, close_fds=True)
                self._pipe = self._proc.stdin
        return self

    def _say(self, line: str) -> None:
        with self._lock:
            if self._pipe is not None:
                try:
                    self._pipe.write(line.encode() + b"\n")
                    self._pipe.flush()
                except (BrokenPipeError, ValueError):
                    self._pipe = None  # the watchdog died: nothing to tell it any more

    def track_dir(self, path: Path) -> None:
        """Remove ``path`` if the owner dies."""
        self._say(f"dir {path}")

    def untrack_dir(self, path: Path) -> None:
        """``path`` was removed by the owner."""
        self._say(f"undir {path}")

    def track_pgid(self, pgid: int) -> None:
        """SIGKILL process group ``pgid`` if the owner dies."""
        self._say(f"pgid {pgid}")

    def untrack_pgid(self, pgid: int) -> None:
        """Process group ``pgid`` ended."""
        self._say(f"unpgid {pgid}")

    def close(self, timeout_s: float = 30.0, *, wait: bool = True) -> None:
        """End the watchdog now (it sweeps once more: nothing, when the owner cleaned up) and
        wait for it, at most ``timeout_s`` seconds (default 30), then kill it. ``wait=False``
        (an owner that removed everything itself): reap it on a daemon thread instead, so the
        owner does not wait for a sweep that finds nothing (the watchdog's own start and sweep,
        and where it lists an engine's containers, that listing)."""
        with self._lock:
            pipe, proc, self._pipe = self._pipe, self._proc, None
        if pipe is not None:
            try:
                pipe.close()
            except OSError:
                pass
        if proc is None:
            return
        if not wait:
            threading.Thread(target=proc.wait, name="proofdiff-watchdog-reaper",
                             daemon=True).start()
            return
        try:
            proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            proc.kill()


def _engine_possible() -> bool:
    """Whether a Docker engine could hold the owner's containers: ``DOCKER_HOST`` set or the
    default socket present. Without one (a GPU host running processes) the sweep skips the
    docker SDK, whose import and failed connect would cost most of a second at every run's
    end."""
    return bool(os.environ.get("DOCKER_HOST")) or os.path.exists("/var/run/docker.sock")


def _sweep(owner: str, dirs: set[str], pgids: set[int], log: IO[str]) -> None:
    for pgid in sorted(pgids):
        try:
            os.killpg(pgid, signal.SIGKILL)
            print(f"killed process group {pgid}", file=log)
        except OSError:
            pass
    if not _engine_possible():
        for d in sorted(dirs):
            shutil.rmtree(d, ignore_errors=True)
        return
    try:
        from proofdiff.runtime.docker import reap

        for name in reap(owner=owner):
            print(f"removed container {name}", file=log)
    except Exception as exc:  # noqa: BLE001 - the last line of defence reports and goes on
        print(f"could not remove containers of {owner}: {exc}", file=log)
    for d in sorted(dirs):
        shutil.rmtree(d, ignore_errors=True)


def main(argv: Sequence[str] | None = None) -> int:
    """The watchdog process: read orders until the owner's pipe closes, then sweep."""
    p = argparse.ArgumentParser(prog="python -m proofdiff.runtime.watchdog")
    p.add_argument("--owner", required=True)
    p.add_argument("--log", type=Path, default=None)
    args = p.parse_args(argv)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a Ctrl-C to the owner's terminal is not ours
    log: IO[str] = open(args.log, "a", encoding="utf-8") if args.log else open(os.devnull, "w")
    dirs: set[str] = set()
    pgids: set[int] = set()
    for raw in sys.stdin.buffer:
        verb, _, arg = raw.decode("utf-8", "replace").rstrip("\n").partition(" ")
        if verb == "dir":
            dirs.add(arg)
        elif verb == "undir":
            dirs.discard(arg)
        elif verb == "pgid" and arg.isdigit():
            pgids.add(int(arg))
        elif verb == "unpgid" and arg.isdigit():
            pgids.discard(int(arg))
    _sweep(args.owner, dirs, pgids, log)
    log.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
