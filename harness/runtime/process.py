"""The process runtime: a :class:`~proofdiff.runtime.spec.LaunchSpec` run as a plain process on
this host, for hosts without Docker (a vast.ai box, a GPU CI runner).

What a container gets, a process gets as near as the host allows:

* a private working directory (``cwd``, ``HOME``, ``TMPDIR``) under one temp dir, removed
  with the process; the files the spec gives are written there; ``/out`` is a dir there;
* the spec's container paths and published ports rewritten to host paths and free loopback
  ports in the command line, env values and the files it writes
  (:class:`~proofdiff.runtime.hostview.HostView`); mounts are the host paths themselves, so a
  process could write to them: there is no read-only bind mount without privileges;
* its own process group (``start_new_session``), killed as a whole on stop; tied to its owner
  by ``PR_SET_PDEATHSIG`` (when started from the main thread: the signal follows the thread
  that forked) and by the owner's watchdog, which kills the group if the owner dies;
* ``mem_limit`` / ``cpus`` through :mod:`proofdiff.runtime.limits` (cgroup v2, else prlimit);
* the program: the spec's entrypoint, an absolute path or a name found in the runner's tool
  dirs or on ``PATH``; the environment: ``PATH``, ``LANG``, the host's GPU and library
  variables (``CUDA_*``, ``NVIDIA_*``, ``NCCL_*``, ``NVSHMEM_*``, ``LD_LIBRARY_PATH``) and the
  spec's env; ``gpus`` sets ``CUDA_VISIBLE_DEVICES`` (none: empty, so a GPU-less spec sees no
  GPU).
"""

from __future__ import annotations

import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import IO, Any

from proofdiff.model.choices import Runtime
from proofdiff.runtime import launch
from proofdiff.runtime.limits import LimitPlan, plan_limits
from proofdiff.runtime.ports import free_port
from proofdiff.runtime.spec import OUT_DIR, ContainerError, LaunchSpec, ToolResult, Tracker
from proofdiff.runtime.hostview import HostView

__all__ = ["ProcessBackend", "ProcessHandle"]

#: How often a waiting runner checks its process and stop condition, seconds.
POLL_S = 0.1
_PASS_ENV = ("PATH", "LANG", "LC_ALL", "LD_LIBRARY_PATH", "TZ")
_PASS_PREFIXES = ("CUDA_", "NVIDIA_", "NCCL_", "NVSHMEM_")
_OOM_LINES = ("memory allocation of", "out of memory", "std::bad_alloc")


def _tail(path: Path, lines: int | None) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
    if lines is None:
        return text
    return "".join(text.splitlines(keepends=True)[-lines:])


class ProcessHandle:
    """A started process runtime (long-lived: a daemon). Use :meth:`remove` when done.

    The same surface as a container (:class:`proofdiff.runtime.docker.Container`):
    ``short_id``, ``state``, ``logs``, ``host_port``, ``ip``, ``exec``, ``view``, ``stop``,
    ``remove``.
    """

    runtime = Runtime.PROCESS

    def __init__(self, backend: ProcessBackend, proc: subprocess.Popen[bytes], spec: LaunchSpec,
                 workdir: Path, view: HostView, limits: LimitPlan, argv: list[str],
                 env: dict[str, str], streams: tuple[IO[bytes], ...]) -> None:
        self.backend, self.proc, self.spec, self.workdir = backend, proc, spec, workdir
        self.host_view, self.limits, self.argv, self.env = view, limits, argv, env
        self._streams = streams
        self.started_unix_s = time.time()

    @property
    def pid(self) -> int:
        """The process id (also its process group id)."""
        return int(self.proc.pid)

    @property
    def short_id(self) -> str:
        """``pid-<N>``: how the process is named in messages."""
        return f"pid-{self.pid}"

    def state(self) -> dict[str, Any]:
        """Docker's ``State`` shape: Status (running / exited), ExitCode (128 + signal when
        killed, as docker reports), OOMKilled (the cgroup's oom_kill count, or an allocation
        failure in the log tail under RLIMIT_AS), Pid."""
        code = self.proc.poll()
        if code is None:
            return {"Status": "running", "ExitCode": 0, "OOMKilled": False, "Pid": self.pid}
        exit_code = 128 - code if code < 0 else code
        oom = self.limits.oom_kills() > 0
        if not oom and self.limits.rlimit_as_bytes is not None:
            tail = self.logs(20).lower()
            oom = any(s in tail for s in _OOM_LINES)
        return {"Status": "exited", "ExitCode": exit_code, "OOMKilled": oom, "Pid": self.pid}

    def logs(self, tail: int | None = None) -> str:
        """stdout + stderr (one stream for a long-lived process), the last ``tail`` lines or
        all."""
        return "".join(_tail(self.workdir / name, tail) for name in ("stdout.log", "stderr.log")
                       if (self.workdir / name).exists())

    def host_port(self, name: str) -> int | None:
        """The 127.0.0.1 port given for ``spec.ports[name]`` (``None`` when not published)."""
        port = self.spec.ports.get(name)
        return self.host_view.ports.get(port) if port is not None else None

    def ip(self) -> str:
        """``127.0.0.1``: a process listens on loopback."""
        return "127.0.0.1"

    def network(self) -> str:
        """'': a process is on no docker network."""
        return ""

    def see(self, path: str) -> str:
        """The host path a container path of the spec is given as (rewritten)."""
        return self.host_view.text(path)

    def exec(self, argv: list[str]) -> tuple[int, str]:
        """Run ``argv`` beside the process, as it sees paths (rewritten), 60 s at most;
        (exit code, output)."""
        try:
            res = subprocess.run(self.host_view.argv(tuple(argv)), cwd=self.workdir / "cwd",
                                 env=self.env, capture_output=True, timeout=60)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return 126, f"{exc}"
        return res.returncode, (res.stdout + res.stderr).decode("utf-8", "replace")

    def view(self) -> dict[str, Any]:
        """What the process really ran with, in the shape of
        :func:`proofdiff.runtime.daemon.inspect_view`."""
        return {
            "image": self.argv[0], "entrypoint": self.argv[:1], "cmd": self.argv[1:],
            "user": f"{os.getuid()}:{os.getgid()}",
            # the profile's env, and the devices the runtime gave it (by UUID on a fleet host)
            "env": {**self.spec.env, **{k: v for k, v in self.env.items()
                                        if k == "CUDA_VISIBLE_DEVICES" and v}},
            "mounts": {m.container_path: f"{m.source} (host path)" for m in self.spec.mounts},
            "limits": {"memory_bytes": self.limits.mem_limit_bytes, "cpus": self.limits.cpus,
                       "enforced_by": self.limits.enforced_by, "note": self.limits.note},
            "network_mode": "host (loopback ports)", "runtime": "process",
            "ports": sorted(f"{p}->{h}" for p, h in self.host_view.ports.items()),
        }

    def stop(self, grace_s: float = 10.0) -> None:
        """SIGTERM to the process group, then SIGKILL after ``grace_s`` seconds (default 10)."""
        if self.proc.poll() is not None:
            return
        self._signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=max(grace_s, 0.0))
        except subprocess.TimeoutExpired:
            self.kill()

    def kill(self) -> None:
        """SIGKILL the process group now and reap it."""
        self._signal(signal.SIGKILL)
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass

    def _signal(self, sig: int) -> None:
        try:
            os.killpg(self.pid, sig)
        except ProcessLookupError:
            pass

    def remove(self) -> None:
        """Kill what is left of the group, remove its working dir and cgroup (idempotent)."""
        if self.proc.poll() is None:
            self.kill()
        else:
            self._signal(signal.SIGKILL)  # children it left behind in its group
        for s in (*self._streams, self.proc.stdin, self.proc.stdout):
            if s is not None:
                s.close()
        self.backend._forget(self)


class ProcessBackend:
    """Starts process runtimes for one owner.

    Args:
        tracker: the owner's watchdog (kills the process groups and removes the dirs if the
            owner dies); ``None``: no watchdog.
        tool_dirs: where a bare program name is looked for before ``PATH`` (the refprover
            binaries' dir).
    """

    def __init__(self, *, tracker: Tracker | None = None,
                 tool_dirs: Sequence[Path] = ()) -> None:
        self.tracker, self.tool_dirs = tracker, tuple(tool_dirs)
        self._live: dict[int, ProcessHandle] = {}
        self._lock = threading.Lock()

    def program(self, spec: LaunchSpec) -> str:
        """The host path of the spec's program (its entrypoint's first word).

        Raises:
            ContainerError: no entrypoint, or it is not an executable file here.
        """
        if not spec.entrypoint:
            raise ContainerError(f"{_who(spec)}: the process runtime needs a program path",
                                 fix="set the profile's `binary`, `verifier_binary` or "
                                     "`bench_tool`", role=spec.role, profile=spec.profile)
        name = spec.entrypoint[0]
        if os.sep in name:
            found = name if os.access(name, os.X_OK) and Path(name).is_file() else None
        else:
            path = os.pathsep.join([*map(str, self.tool_dirs), os.environ.get("PATH", "")])
            found = shutil.which(name, path=path)
        if found is None:
            raise ContainerError(f"{_who(spec)}: program {name!r} is not an executable file on "
                                 f"this host (looked in {[str(d) for d in self.tool_dirs]} and "
                                 "PATH)", fix="set the profile's binary / verifier_binary / "
                                 "bench_tool to its path, or pass --bin-dir", role=spec.role,
                                 profile=spec.profile)
        return str(Path(found).resolve())

    def start(self, spec: LaunchSpec, *, split_streams: bool = False,
              pipes: bool = False) -> ProcessHandle:
        """Start ``spec`` as a process (see the module docstring). ``pipes``: its stdin and
        stdout are pipes (``handle.proc.stdin`` / ``.stdout``: a server that answers per line),
        its stderr goes to the log.

        Raises:
            ContainerError: the program is not found or could not be executed, or the limits
                are malformed. Nothing is left behind.
        """
        program = self.program(spec)
        workdir = Path(tempfile.mkdtemp(prefix=f"proofdiff-{spec.role}-"))
        if self.tracker is not None:
            self.tracker.track_dir(workdir)
        try:
            return self._start(spec, program, workdir, split_streams, pipes)
        except BaseException:
            self._drop(workdir)
            raise

    def _start(self, spec: LaunchSpec, program: str, workdir: Path,
               split_streams: bool, pipes: bool = False) -> ProcessHandle:
        for sub in ("cwd", "tmp", "files", "out"):
            (workdir / sub).mkdir()
        paths = {m.container_path.rstrip("/"): str(Path(m.source).resolve()) for m in spec.mounts}
        paths[OUT_DIR] = str(workdir / "out")
        for i, target in enumerate(spec.files):
            paths[target] = str(workdir / "files" / f"{i}-{Path(target).name}")
        view = HostView(paths=paths, ports={p: free_port() for p in spec.ports.values()})
        for i, (target, data) in enumerate(spec.files.items()):
            Path(paths[target]).write_bytes(view.data(data))
        try:
            limits = plan_limits(spec.role, spec.mem_limit, spec.cpus)
        except ValueError as exc:
            raise ContainerError(f"{_who(spec)}: {exc}", fix="correct the profile's mem_limit",
                                 role=spec.role, profile=spec.profile) from None
        env = {k: v for k, v in os.environ.items()
               if k in _PASS_ENV or k.startswith(_PASS_PREFIXES)}
        env.update(HOME=str(workdir / "cwd"), TMPDIR=str(workdir / "tmp"))
        if spec.gpus is None:
            env["CUDA_VISIBLE_DEVICES"] = ""
        elif isinstance(spec.gpus, tuple):
            env["CUDA_VISIBLE_DEVICES"] = ",".join(spec.gpus)
        elif spec.gpus != "all":
            env["CUDA_VISIBLE_DEVICES"] = ",".join(str(i) for i in range(int(spec.gpus)))
        env.update(view.env(spec.env))
        argv = [program, *view.argv(tuple(spec.entrypoint[1:] if spec.entrypoint else ())),
                *view.argv(spec.command)]
        tie = threading.current_thread() is threading.main_thread()
        settle = [*(["--pdeathsig", "--parent", str(os.getpid())] if tie else []),
                  *limits.launcher_args(),
                  *(["--cpuset", ",".join(str(c) for c in spec.cpuset)] if spec.cpuset else [])]
        # the launcher costs an interpreter's start: only where it has something to do
        wrapper = ([sys.executable, "-I", "-S", str(Path(launch.__file__)), *settle, "--", *argv]
                   if settle else argv)
        out = open(workdir / ("stderr.log" if pipes else "stdout.log"), "wb")
        err = open(workdir / "stderr.log", "wb") if split_streams and not pipes else out
        streams = (out, err) if split_streams and not pipes else (out,)
        try:
            proc = subprocess.Popen(
                wrapper, cwd=workdir / "cwd", env=env,
                stdin=subprocess.PIPE if pipes else subprocess.DEVNULL,
                stdout=subprocess.PIPE if pipes else out,
                stderr=out if pipes else err if split_streams else subprocess.STDOUT,
                start_new_session=True, close_fds=True)
        except OSError as exc:
            for s in streams:
                s.close()
            limits.remove()
            raise ContainerError(f"{_who(spec)}: could not start {program}: {exc.strerror}",
                                 role=spec.role, profile=spec.profile) from None
        if self.tracker is not None:
            self.tracker.track_pgid(proc.pid)
        handle = ProcessHandle(self, proc, spec, workdir, view, limits, argv, env, streams)
        with self._lock:
            self._live[proc.pid] = handle
        return handle

    def run(self, spec: LaunchSpec, *, timeout_s: float,
            should_stop: Callable[[], bool] | None = None) -> ToolResult:
        """Run ``spec`` to its end as a process and remove it (the same contract as
        :meth:`proofdiff.runtime.docker.DockerBackend.run`).

        Raises:
            ContainerError: the program is not found or could not be executed.
        """
        handle = self.start(spec, split_streams=True)
        try:
            deadline = time.monotonic() + timeout_s
            timed_out = stopped = False
            while handle.proc.poll() is None:
                remaining = deadline - time.monotonic()
                if remaining <= 0 or (should_stop is not None and should_stop()):
                    timed_out, stopped = remaining <= 0, remaining > 0
                    handle.kill()
                    break
                _wait_exit(handle.proc, min(POLL_S, remaining) if should_stop else remaining)
            code = -1 if (timed_out or stopped) else int(handle.state()["ExitCode"])
            for s in handle._streams:
                s.flush()
            out_dir = handle.workdir / "out"
            out = {p.name: p.read_bytes() for p in sorted(out_dir.iterdir()) if p.is_file()}
            return ToolResult(exit_code=code, timed_out=timed_out, stopped=stopped,
                              out_files=out, stdout=_tail(handle.workdir / "stdout.log", None),
                              stderr=_tail(handle.workdir / "stderr.log", None),
                              container_id=handle.short_id)
        finally:
            handle.remove()

    def _forget(self, handle: ProcessHandle) -> None:
        with self._lock:
            self._live.pop(handle.pid, None)
        if self.tracker is not None:
            self.tracker.untrack_pgid(handle.pid)
        handle.limits.remove()
        self._drop(handle.workdir)

    def _drop(self, workdir: Path) -> None:
        shutil.rmtree(workdir, ignore_errors=True)
        if self.tracker is not None:
            self.tracker.untrack_dir(workdir)

    def close(self) -> None:
        """Remove every process still running (idempotent)."""
        with self._lock:
            live = list(self._live.values())
        for h in live:
            h.remove()


def _wait_exit(proc: subprocess.Popen[bytes], timeout_s: float) -> None:
    """Return when ``proc`` exits or after ``timeout_s`` s, woken by the exit itself (a pidfd),
    not by ``Popen.wait``'s poll, which sleeps up to 50 ms between looks (a cost per tool run)."""
    try:
        fd = os.pidfd_open(proc.pid)
    except (AttributeError, OSError):  # before Linux 5.3: Popen's poll
        try:
            proc.wait(timeout=max(timeout_s, 0.01))
        except subprocess.TimeoutExpired:
            pass
        return
    try:
        select.select([fd], [], [], max(timeout_s, 0.0))
    finally:
        os.close(fd)


def _who(spec: LaunchSpec) -> str:
    return f"profile {spec.profile!r} ({spec.role})" if spec.profile else spec.role
