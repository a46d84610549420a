"""The build's subprocesses: a deadline, output to a log file, a heartbeat, a clear error.

Each step is a progress task (:mod:`proofdiff.model.progress`, topic ``build``): a display
shows what runs, for how long, and its last output line.
"""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from proofdiff.artifacts.build_errors import BuildError
from proofdiff.model import progress

Log = Callable[[str], None]

#: Lines of output quoted in a BuildError.
TAIL_LINES = 25
#: With a progress display: how often the step's last output line becomes its note, seconds.
NOTE_S = 2.0


def tail(path: Path, lines: int = TAIL_LINES) -> str:
    """Return the last ``lines`` lines of a file (from its last 64 KiB), '' if unreadable."""
    try:
        with open(path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            size = fh.tell()
            fh.seek(max(0, size - 65536))
            data = fh.read()
    except OSError:
        return ""
    text = data.decode("utf-8", "replace").replace("\r", "\n")
    return "\n".join([line for line in text.splitlines() if line.strip()][-lines:])


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM the process group started for ``proc``, then SIGKILL after 5 s."""
    for sig, wait_s in ((signal.SIGTERM, 5.0), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=wait_s)
            return
        except subprocess.TimeoutExpired:
            continue


def run(
    step: str,
    argv: Sequence[str],
    *,
    timeout_s: float,
    log: Log,
    fix: str,
    log_path: Path,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    heartbeat_s: float = 60.0,
) -> float:
    """Run ``argv`` to completion and return its wall time in seconds.

    stdout and stderr go to ``log_path`` (overwritten). Every ``heartbeat_s`` seconds the last
    output line is passed to ``log``, or, when a progress display is active, every
    ``NOTE_S`` seconds to the step's progress task as its note. The command runs in its own process group, which is killed
    when the deadline ``timeout_s`` (seconds) passes or the caller is interrupted.

    Raises:
        BuildError: the command could not start, exited non-zero, or ran past ``timeout_s``; the
            message holds the command, the exit code and the last lines of its output.
    """
    cmd = shlex.join(argv)
    log_path.parent.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    with progress.task("build", step) as shown, open(log_path, "wb") as out:
        try:
            proc = subprocess.Popen(
                list(argv),
                cwd=cwd,
                env=dict(env) if env is not None else None,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        except OSError as exc:
            raise BuildError(step, f"cannot start `{cmd}`: {exc}", fix) from exc
        beat_s = NOTE_S if shown.live else heartbeat_s
        next_beat = start + beat_s
        try:
            while True:
                try:
                    rc = proc.wait(timeout=1.0)
                    break
                except subprocess.TimeoutExpired:
                    now = time.monotonic()
                    if now - start > timeout_s:
                        _kill_group(proc)
                        raise BuildError(
                            step,
                            f"`{cmd}` did not finish within {timeout_s:.0f} s and was killed; "
                            f"last lines of {log_path}:\n{tail(log_path) or '(no output)'}",
                            fix,
                        ) from None
                    if now >= next_beat:
                        last = tail(log_path, 1) or "(no output yet)"
                        if shown.live:
                            shown.advance(0, note=last[:160])
                        else:
                            log(f"  {step}: still running after {now - start:.0f} s: "
                                f"{last[:160]}")
                        next_beat += beat_s
        finally:
            if proc.poll() is None:
                _kill_group(proc)
    elapsed_s = time.monotonic() - start
    if rc != 0:
        raise BuildError(
            step,
            f"`{cmd}` exited with code {rc} after {elapsed_s:.1f} s; "
            f"last lines of {log_path}:\n{tail(log_path) or '(no output)'}",
            fix,
        )
    return elapsed_s


def capture(argv: Sequence[str], *, timeout_s: float = 30.0, cwd: Path | None = None) -> str:
    """Run a short command and return its stripped stdout, or '' when it fails or times out."""
    try:
        done = subprocess.run(
            list(argv), cwd=cwd, capture_output=True, timeout=timeout_s, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return done.stdout.decode("utf-8", "replace").strip() if done.returncode == 0 else ""


def which(tool: str) -> str | None:
    """Find ``tool`` on PATH, then in the sbin and cargo directories a non-login PATH may lack."""
    extra = ["/usr/local/sbin", "/usr/sbin", "/sbin", str(Path.home() / ".cargo" / "bin")]
    path = os.environ.get("PATH", "") + os.pathsep + os.pathsep.join(extra)
    return shutil.which(tool, path=path)


def ensure_apt_tool(
    step: str, tool: str, package: str, *, log: Log, log_dir: Path, timeout_s: float = 600.0
) -> str:
    """Return the path of ``tool``, installing Debian package ``package`` first when it is missing.

    Installs only as root (``apt-get install -y``, after ``apt-get update`` if the first attempt
    fails), within ``timeout_s`` seconds per apt-get call.

    Raises:
        BuildError: the tool is missing and cannot be installed (not root, or apt-get failed).
    """
    found = which(tool)
    if found:
        return found
    fix = f"install it: `sudo apt-get install -y {package}`"
    if os.geteuid() != 0:
        raise BuildError(
            step, f"`{tool}` is not installed and this build is not running as root", fix
        )
    log(f"  {step}: `{tool}` missing, installing Debian package {package}")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    install = ["apt-get", "install", "-y", "--no-install-recommends", package]
    logp = log_dir / f"apt-{package}.log"
    try:
        run(step, install, timeout_s=timeout_s, log=log, fix=fix, log_path=logp, env=env)
    except BuildError:
        run(
            step,
            ["apt-get", "update"],
            timeout_s=timeout_s,
            log=log,
            fix=fix,
            log_path=logp,
            env=env,
        )
        run(step, install, timeout_s=timeout_s, log=log, fix=fix, log_path=logp, env=env)
    found = which(tool)
    if not found:
        raise BuildError(step, f"`{tool}` still not found after installing {package}", fix)
    return found
