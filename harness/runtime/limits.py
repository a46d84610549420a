"""Memory and CPU limits for a process runtime: a cgroup v2 where this host lets us make one,
else ``prlimit``-style limits, and always a sentence saying which.

* cgroup v2: a child of this process's own cgroup (``/proc/self/cgroup`` ``0::PATH``), with
  ``memory.max`` (swap off) and ``cpu.max`` (``cpus`` x 100 ms per 100 ms), when the parent
  has the ``memory`` / ``cpu`` controllers enabled for its children (systemd delegation, or a
  cgroup we may enable them in). An OOM kill is then the cgroup's ``oom_kill`` count.
* otherwise: ``mem_limit`` as ``RLIMIT_AS`` (the address space, which also counts memory a
  program reserves but never touches: a GPU daemon reserving device address space may not start
  under it), and ``cpus`` as CPU affinity to ``ceil(cpus)`` cores (a cap on cores, not on
  shares). The note says so; the run record keeps it.

Docker's ``mem_limit`` syntax (``1200m``, ``4g``; binary units) is read by :func:`parse_bytes`.
"""

from __future__ import annotations

import math
import os
import re
import secrets
from dataclasses import dataclass
from pathlib import Path

__all__ = ["CGROUP_ROOT", "LimitPlan", "parse_bytes", "plan_limits"]

CGROUP_ROOT = Path("/sys/fs/cgroup")
_UNITS = {"": 1, "b": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


def parse_bytes(text: str) -> int:
    """Bytes of a docker-style size (``1200m`` = 1200 MiB, ``4g``, ``512k``, ``1048576``).

    Raises:
        ValueError: not a size.
    """
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([bkmgt]?)i?b?\s*", text.lower())
    if not m:
        raise ValueError(f"not a size: {text!r} (use docker's syntax: 1200m, 4g)")
    return int(float(m.group(1)) * _UNITS[m.group(2)])


@dataclass(frozen=True)
class LimitPlan:
    """How one process's limits are applied.

    Attributes:
        mem_limit_bytes, cpus: the limits asked for (``None``: none).
        cgroup: the cgroup v2 directory the process joins (``None``: no cgroup).
        rlimit_as_bytes: RLIMIT_AS to set instead (``None``: none).
        affinity_cores: cores to pin to instead of a CPU quota (``None``: none).
        enforced_by: ``cgroup v2``, ``prlimit`` or ``none``.
        note: one sentence on what was applied and what could not be (''  without limits).
    """

    mem_limit_bytes: int | None = None
    cpus: float | None = None
    cgroup: Path | None = None
    rlimit_as_bytes: int | None = None
    affinity_cores: int | None = None
    enforced_by: str = "none"
    note: str = ""

    def launcher_args(self) -> list[str]:
        """The options of ``python -m proofdiff.runtime.launch`` that apply this plan."""
        out = []
        if self.cgroup is not None:
            out += ["--cgroup", str(self.cgroup)]
        if self.rlimit_as_bytes is not None:
            out += ["--rlimit-as", str(self.rlimit_as_bytes)]
        if self.affinity_cores is not None:
            out += ["--affinity-cores", str(self.affinity_cores)]
        return out

    def oom_kills(self) -> int:
        """OOM kills the cgroup counted (0 without a cgroup or when it is gone)."""
        if self.cgroup is None:
            return 0
        try:
            for line in (self.cgroup / "memory.events").read_text().splitlines():
                key, _, value = line.partition(" ")
                if key == "oom_kill":
                    return int(value)
        except (OSError, ValueError):
            return 0
        return 0

    def remove(self) -> None:
        """Remove the cgroup (it must be empty: its processes ended); gone is fine."""
        if self.cgroup is not None:
            try:
                self.cgroup.rmdir()
            except OSError:
                pass


def _own_cgroup(root: Path) -> Path | None:
    try:
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            if line.startswith("0::"):
                return root / line[3:].lstrip("/")
    except OSError:
        return None
    return None


def _cgroup(name: str, mem: int | None, cpus: float | None, root: Path) -> tuple[Path | None, str]:
    """A fresh child cgroup with the limits, or (None, why not)."""
    if not (root / "cgroup.controllers").is_file():
        return None, f"no cgroup v2 at {root} (this host mounts cgroup v1 or a hybrid)"
    parent = _own_cgroup(root)
    if parent is None or not parent.is_dir():
        return None, "this process's cgroup v2 directory is not visible"
    want = {"memory"} if mem is not None else set()
    want |= {"cpu"} if cpus is not None else set()
    try:
        enabled = set((parent / "cgroup.subtree_control").read_text().split())
        missing = want - enabled
        if missing:
            (parent / "cgroup.subtree_control").write_text(
                " ".join(f"+{c}" for c in sorted(missing)))
        child = parent / f"proofdiff-{name}-{secrets.token_hex(3)}"
        child.mkdir()
    except OSError as exc:
        return None, f"cgroup {parent} is not writable for us ({exc.strerror})"
    try:
        if mem is not None:
            (child / "memory.max").write_text(str(mem))
            if (child / "memory.swap.max").exists():
                (child / "memory.swap.max").write_text("0")
        if cpus is not None:
            (child / "cpu.max").write_text(f"{int(cpus * 100_000)} 100000")
    except OSError as exc:
        child.rmdir()
        return None, f"cgroup {child} refused the limits ({exc.strerror})"
    return child, ""


def plan_limits(name: str, mem_limit: str | None, cpus: float | None, *,
                root: Path = CGROUP_ROOT) -> LimitPlan:
    """How to apply ``mem_limit`` (docker syntax) and ``cpus`` (cores) to a process named
    ``name``: a cgroup v2 when possible, else RLIMIT_AS and CPU affinity (module docstring).

    Raises:
        ValueError: ``mem_limit`` is not a size.
    """
    if mem_limit is None and cpus is None:
        return LimitPlan()
    mem = parse_bytes(mem_limit) if mem_limit is not None else None
    asked = ", ".join(x for x in (f"mem_limit={mem_limit}" if mem_limit else "",
                                  f"cpus={cpus}" if cpus is not None else "") if x)
    group, why = _cgroup(name, mem, cpus, root)
    if group is not None:
        return LimitPlan(mem_limit_bytes=mem, cpus=cpus, cgroup=group, enforced_by="cgroup v2",
                         note=f"{asked} applied by cgroup v2 {group}")
    cores = None
    if cpus is not None:
        cores = max(1, min(math.ceil(cpus), len(os.sched_getaffinity(0))))
    parts = []
    if mem is not None:
        parts.append(f"mem_limit as RLIMIT_AS={mem} bytes (address space, not resident memory)")
    if cores is not None:
        parts.append(f"cpus as CPU affinity to {cores} core(s) (no CPU quota)")
    return LimitPlan(mem_limit_bytes=mem, cpus=cpus, rlimit_as_bytes=mem, affinity_cores=cores,
                     enforced_by="prlimit",
                     note=f"{asked}: no cgroup v2 to enforce them ({why}), so applied "
                          f"{' and '.join(parts)}; run on a host with a writable cgroup v2, or "
                          "the docker runtime, for the real limits")
