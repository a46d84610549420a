"""Whether a run's profiles prove side by side, and on which CPUs.

Profiles are independent daemons: where the host has the cores, bench's and prod's workload
runs can prove at the same time, each daemon pinned to its own CPUs, so the run's wall falls
toward that of the slower profile. They never do when:

* the timing suite is selected: timing compares the profiles' speed, so they alternate, one at
  a time, on the same CPUs;
* a profile is attached: that daemon is someone else's, and cannot be pinned;
* a profile asks for GPUs: two daemons on one GPU is itself a production configuration (the
  incident of two workers on one GPU), so proofdiff does not create it by placement;
* ``auto`` and fewer than :data:`AUTO_MIN_CORES` usable cores per profile (``on``: fewer than
  one), since a daemon squeezed onto too few cores proves slower than it would alone.

The usable cores are this process's CPU affinity (``os.sched_getaffinity``), which a container
or a cgroup cpuset already narrows.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import msgspec

from proofdiff.model.choices import Runtime, SideBySide
from proofdiff.model.profile import Profile

__all__ = ["AUTO_MIN_CORES", "Placement", "place"]

#: Usable cores per profile below which ``auto`` keeps the profiles one after the other.
AUTO_MIN_CORES = 4


class Placement(msgspec.Struct, frozen=True, kw_only=True):
    """The schedule of one run.

    Attributes:
        cpusets: profile -> the host CPUs its daemon is pinned to; empty when the profiles run
            one after the other.
        reason: why (``"2 profiles side by side on 16 usable cores"``, or what prevents it).
    """

    cpusets: dict[str, tuple[int, ...]]
    reason: str

    @property
    def side_by_side(self) -> bool:
        """The profiles prove at the same time."""
        return bool(self.cpusets)


def _split(cpus: Sequence[int], n: int) -> list[tuple[int, ...]]:
    """``cpus`` (sorted) in ``n`` contiguous parts of equal size (the remainder unused)."""
    size = len(cpus) // n
    return [tuple(cpus[i * size:(i + 1) * size]) for i in range(n)]


def place(profiles: Mapping[str, Profile], suites: Sequence[str], usable_cpus: Sequence[int],
          mode: SideBySide) -> Placement:
    """The placement of ``profiles`` (module docstring for the rules).

    Args:
        profiles: the run's profiles, by name. suites: the selected suite names.
        usable_cpus: the host CPUs this process may use. mode: ``--side-by-side``.
    """
    n, cores = len(profiles), sorted(usable_cpus)
    if mode is SideBySide.OFF:
        return Placement(cpusets={}, reason="one profile after the other (--side-by-side off)")
    if n < 2:
        return Placement(cpusets={}, reason="a single profile")
    if "timing" in suites:
        return Placement(cpusets={}, reason="one profile after the other: the timing suite "
                         "compares their speed, so they alternate on the same CPUs")
    attached = [k for k, p in profiles.items() if p.runtime is Runtime.ATTACH]
    if attached:
        return Placement(cpusets={}, reason=f"one profile after the other: {attached} attach "
                         "to a daemon proofdiff did not start, which it cannot pin")
    gpu = [k for k, p in profiles.items() if p.gpus is not None]
    if gpu:
        return Placement(cpusets={}, reason=f"one profile after the other: {gpu} ask for GPUs, "
                         "and proofdiff does not put two daemons on one GPU by placement")
    need = AUTO_MIN_CORES if mode is SideBySide.AUTO else 1
    if len(cores) < need * n:
        return Placement(cpusets={}, reason=f"one profile after the other: {len(cores)} usable "
                         f"cores, fewer than {need} per profile for {n} profiles"
                         + (" (--side-by-side on pins them with 1 core each)"
                            if mode is SideBySide.AUTO and len(cores) >= n else ""))
    sets = dict(zip(profiles, _split(cores, n)))
    return Placement(cpusets=sets, reason=f"{n} profiles side by side on {len(cores)} usable "
                     f"cores, {len(cores) // n} each")
