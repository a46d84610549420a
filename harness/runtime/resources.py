"""Memory and CPU use of a daemon under its limits, sampled.

* a container (:class:`ResourceSampler`): a thread follows the engine's stats stream (one
  sample about every second) for as long as it runs and keeps the peaks. Memory use is the
  cgroup's usage less its inactive file cache (what ``docker stats`` shows); CPU use is the
  share of the host's CPU time it took between two samples, in cores;
* a process (:class:`ProcessSampler`, psutil): every second, the resident memory of the
  process and its children, and their CPU time between two samples, in cores.

:func:`sampler_for` picks the one for a handle.
"""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING, Any

import psutil

from proofdiff.model.runs import ResourceUsage

from proofdiff.model.choices import Runtime
from proofdiff.runtime.process import ProcessHandle
from proofdiff.runtime.spec import Handle

if TYPE_CHECKING:  # the docker SDK is imported for containers only (a process host has none)
    from proofdiff.runtime.docker import Container

__all__ = ["ProcessSampler", "ResourceSampler", "cpu_cores", "memory_bytes", "sampler_for"]

#: Seconds between two samples of a process.
PROCESS_SAMPLE_S = 1.0


def memory_bytes(stats: dict[str, Any]) -> int:
    """Memory in use in one stats sample, bytes (usage less inactive file cache)."""
    mem = stats.get("memory_stats") or {}
    cache = (mem.get("stats") or {}).get("inactive_file", 0)
    return max(0, int(mem.get("usage", 0)) - int(cache))


def cpu_cores(stats: dict[str, Any]) -> float:
    """CPU in use between a sample and the one before it (``precpu_stats``), in cores."""
    cpu, pre = stats.get("cpu_stats") or {}, stats.get("precpu_stats") or {}
    used = (cpu.get("cpu_usage") or {}).get("total_usage", 0) - \
        (pre.get("cpu_usage") or {}).get("total_usage", 0)
    system = cpu.get("system_cpu_usage", 0) - pre.get("system_cpu_usage", 0)
    online = cpu.get("online_cpus") or len((cpu.get("cpu_usage") or {}).get("percpu_usage") or [1])
    return used / system * online if used > 0 and system > 0 else 0.0


class _Peaks:
    """What a sampler keeps: the highest memory (bytes) and CPU (cores) seen, how many
    samples, and the latest CPU sample (:attr:`latest`); a daemon thread named ``thread_name``
    runs the subclass's ``_follow`` until it returns or :meth:`stop` is called."""

    def __init__(self, thread_name: str) -> None:
        self.peak_mem, self.peak_cpu, self.samples = 0, 0.0, 0
        self._latest: tuple[float, float] | None = None
        self._stop = threading.Event()
        threading.Thread(target=self._follow, name=thread_name, daemon=True).start()

    def _follow(self) -> None:
        raise NotImplementedError

    def _seen(self, mem_bytes: int, cpu_cores: float | None) -> None:
        self.peak_mem = max(self.peak_mem, mem_bytes)
        if cpu_cores is not None:
            self.peak_cpu = max(self.peak_cpu, cpu_cores)
            self._latest = (time.monotonic(), cpu_cores)
        self.samples += 1

    def latest(self) -> tuple[float, float] | None:
        """The latest CPU sample: ``(time.monotonic() when taken, cores in use over the second
        before)``; ``None`` before the first (the hang guard's CPU observation)."""
        return self._latest

    def stop(self) -> None:
        """Stop sampling (the peaks so far stand)."""
        self._stop.set()


class ResourceSampler(_Peaks):
    """Follows ``container``'s stats until it stops (or :meth:`stop`); :meth:`usage` gives the
    peaks so far with the limits from ``docker inspect``."""

    def __init__(self, container: "Container") -> None:
        self.container = container
        super().__init__("proofdiff-stats")

    def _follow(self) -> None:
        import docker.errors
        import requests

        try:
            for stats in self.container.sdk.stats(stream=True, decode=True):
                if self._stop.is_set():
                    return
                if not stats.get("read", "").startswith("0001"):  # a real sample
                    pre = (stats.get("precpu_stats") or {}).get("system_cpu_usage")
                    self._seen(memory_bytes(stats), cpu_cores(stats) if pre else None)
        except (docker.errors.DockerException, requests.exceptions.RequestException, ValueError):
            return  # the container went away: the peaks so far stand

    def usage(self) -> ResourceUsage:
        """The peaks so far and the container's limits."""
        host = (self.container.inspect().get("HostConfig") or {})
        mem, nano = host.get("Memory") or 0, host.get("NanoCpus") or 0
        return ResourceUsage(mem_limit_bytes=int(mem) or None, cpus=nano / 1e9 if nano else None,
                             peak_mem_bytes=self.peak_mem, peak_cpu_cores=round(self.peak_cpu, 3),
                             samples=self.samples, enforced_by="docker")


class ProcessSampler(_Peaks):
    """Samples a process runtime and its children every :data:`PROCESS_SAMPLE_S` until it
    ends (or :meth:`stop`); :meth:`usage` gives the peaks with the limits it runs under."""

    def __init__(self, handle: ProcessHandle) -> None:
        self.handle = handle
        super().__init__("proofdiff-psutil")

    def _follow(self) -> None:
        try:
            root = psutil.Process(self.handle.pid)
            last: tuple[float, float] | None = None
            while not self._stop.is_set() and self.handle.proc.poll() is None:
                rss = cpu = 0.0
                for p in (root, *root.children(recursive=True)):
                    try:
                        rss += p.memory_info().rss
                        t = p.cpu_times()
                        cpu += t.user + t.system + t.children_user + t.children_system
                    except (psutil.NoSuchProcess, psutil.AccessDenied):
                        continue
                now = time.monotonic()
                rate = (cpu - last[1]) / (now - last[0]) if last and now > last[0] else None
                last = (now, cpu)
                self._seen(int(rss), rate)
                self._stop.wait(PROCESS_SAMPLE_S)
        except psutil.Error:
            return  # it ended: the peaks so far stand

    def usage(self) -> ResourceUsage:
        """The peaks so far and the limits (with how they were enforced)."""
        lim = self.handle.limits
        return ResourceUsage(mem_limit_bytes=lim.mem_limit_bytes, cpus=lim.cpus,
                             peak_mem_bytes=self.peak_mem, peak_cpu_cores=round(self.peak_cpu, 3),
                             samples=self.samples, enforced_by=lim.enforced_by, note=lim.note)


def sampler_for(handle: Handle) -> ResourceSampler | ProcessSampler | None:
    """The sampler of a container or a process; ``None`` for an attached daemon."""
    if isinstance(handle, ProcessHandle):
        return ProcessSampler(handle)
    if handle.runtime is Runtime.DOCKER:
        from proofdiff.runtime.docker import Container

        if isinstance(handle, Container):
            return ResourceSampler(handle)
    return None
