"""Memory and CPU use of a container under its limits, sampled from ``docker stats``.

A thread follows the engine's stats stream (one sample about every second) for as long as the
container runs and keeps the peaks. Memory use is the cgroup's usage less its inactive file
cache (what ``docker stats`` shows); CPU use is the share of the host's CPU time the container
took between two samples, in cores.
"""

from __future__ import annotations

import threading
from typing import Any

import docker.errors
import requests

from harness.model.runs import ResourceUsage

from .containers import Container

__all__ = ["ResourceSampler", "cpu_cores", "memory_bytes"]


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


class ResourceSampler:
    """Follows ``container``'s stats until it stops (or :meth:`stop`); :meth:`usage` gives the
    peaks so far with the limits from ``docker inspect``."""

    def __init__(self, container: Container) -> None:
        self.container = container
        self.peak_mem, self.peak_cpu, self.samples = 0, 0.0, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._follow, name="proofdiff-stats", daemon=True)
        self._thread.start()

    def _follow(self) -> None:
        try:
            for stats in self.container.sdk.stats(stream=True, decode=True):
                if self._stop.is_set():
                    return
                if not stats.get("read", "").startswith("0001"):  # a real sample
                    self.peak_mem = max(self.peak_mem, memory_bytes(stats))
                    self.peak_cpu = max(self.peak_cpu, cpu_cores(stats))
                    self.samples += 1
        except (docker.errors.DockerException, requests.exceptions.RequestException, ValueError):
            return  # the container went away: the peaks so far stand

    def stop(self) -> None:
        """Stop following (the stream ends with the container anyway)."""
        self._stop.set()

    def usage(self) -> ResourceUsage:
        """The peaks so far and the container's limits."""
        host = (self.container.inspect().get("HostConfig") or {})
        mem, nano = host.get("Memory") or 0, host.get("NanoCpus") or 0
        return ResourceUsage(mem_limit_bytes=int(mem) or None, cpus=nano / 1e9 if nano else None,
                             peak_mem_bytes=self.peak_mem, peak_cpu_cores=round(self.peak_cpu, 3),
                             samples=self.samples)
