"""The daemon's process as the operating system sees it: resident memory, open file descriptors,
threads and CPU time, read in one go (a :class:`~proofdiff.model.jobs.UsageSample` without its
flow's fields).

A daemon's own figures are claims; these are the kernel's accounting of its process (psutil over
``/proc``), the same for every daemon whatever it reports. The process is found from the runtime:

* a process runtime: its pid and every child of it;
* a container: its main process on this host (``docker inspect`` ``State.Pid``), checked to be
  the container's by its cgroup (``/proc/PID/cgroup`` names the container id); an engine in a VM
  (Docker Desktop) or on another host shows pids that are not this host's, and gives no probe;
* an attached daemon: none (its process is not proofdiff's to read).

Open file descriptors need the right to list ``/proc/PID/fd``: another user's process (a
container's, run as 65534, read by a user who is not root) gives ``fds`` = ``None``, said so in
every check that reads them.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING

import psutil

from proofdiff.model.choices import Runtime
from proofdiff.runtime.process import ProcessHandle
from proofdiff.runtime.spec import Handle

if TYPE_CHECKING:
    from proofdiff.runtime.docker import Container

__all__ = ["ProcessProbe", "Reading", "probe_for"]


@dataclass(frozen=True)
class Reading:
    """One look at the process: ``rss_bytes`` (resident memory), ``fds`` (``None`` when
    ``/proc/PID/fd`` cannot be listed), ``threads``, ``cpu_s`` (user + system seconds since it
    started), summed over the process and its children."""

    rss_bytes: int
    fds: int | None
    threads: int
    cpu_s: float


class ProcessProbe:
    """Reads the process ``pid`` and its children (:meth:`read`); ``what`` says how it was found
    (``pid 42``, ``container 1a2b3c4d5e6f's pid 42``)."""

    def __init__(self, pid: int, what: str) -> None:
        self.pid, self.what = pid, what
        self._fds_denied = False
        self._lock = threading.Lock()  # one reader at a time: the guard's thread and the caller

    def read(self) -> Reading | None:
        """The process now, or ``None`` when it is gone (never raises)."""
        with self._lock:
            try:
                root = psutil.Process(self.pid)
                procs = [root, *root.children(recursive=True)]
            except psutil.Error:
                return None
            rss = threads = 0
            fds: int | None = 0
            cpu = 0.0
            for p in procs:
                try:
                    with p.oneshot():
                        rss += p.memory_info().rss
                        threads += p.num_threads()
                        t = p.cpu_times()
                        cpu += t.user + t.system
                        fds = self._fds(p, fds)
                except psutil.NoSuchProcess:
                    if p is root:
                        return None
                except psutil.AccessDenied:
                    continue
            return Reading(rss_bytes=int(rss), fds=fds, threads=threads, cpu_s=round(cpu, 3))

    def _fds(self, p: psutil.Process, so_far: int | None) -> int | None:
        if self._fds_denied or so_far is None:
            return None
        try:
            return so_far + p.num_fds()
        except psutil.AccessDenied:
            self._fds_denied = True  # another user's process: it will not change
            return None


def _container_pid(container: "Container") -> int | None:
    """The container's main process on this host, or ``None`` when the engine's pid is not one
    of this host's processes in the container's cgroup (module docstring)."""
    state = (container.inspect().get("State") or {})
    pid = int(state.get("Pid") or 0)
    if pid <= 0:
        return None
    try:
        with open(f"/proc/{pid}/cgroup", encoding="utf-8") as f:
            cgroups = f.read()
    except OSError:
        return None
    return pid if str(container.sdk.id) in cgroups else None


def probe_for(handle: Handle) -> ProcessProbe | None:
    """The probe of a started daemon's process (module docstring); ``None`` for an attached
    daemon or a container whose process is not on this host."""
    if isinstance(handle, ProcessHandle):
        return ProcessProbe(handle.pid, f"pid {handle.pid}")
    if handle.runtime is Runtime.DOCKER:
        from proofdiff.runtime.docker import Container

        if isinstance(handle, Container):
            pid = _container_pid(handle)
            if pid is not None:
                return ProcessProbe(pid, f"container {handle.short_id}'s pid {pid}")
    return None
