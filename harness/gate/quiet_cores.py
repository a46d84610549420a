"""Where a gate's timing arm runs on a host with cores to spare: both builds' daemons on the
same cores, proofdiff itself on others.

A round sends one batch to each side in turn, so the two daemons never prove at once, and a
side-by-side split of the cores (:mod:`proofdiff.core.side_by_side`) would only halve each
one's cores. What does prove at the same time as a timed batch is proofdiff: its gRPC client
threads, the resource and GPU samplers, the verifier answering the previous batch, the report's
progress. On a CPU prover (refprover) every cycle of those taken from the daemon's cores is
noise in that batch's wall, and it falls on one side more than the other at random. So where
the host has :data:`QUIET_MIN_CORES` usable cores or more, the arm pins both daemons to the
same cores, all but the first :data:`HARNESS_CORES`, and proofdiff's own threads (and the
processes it starts during the arm, such as a served verifier) to those first cores
(:func:`harness_on`); with fewer there is no core to give up, and nothing is pinned.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Sequence

from proofdiff.core.side_by_side import Placement

__all__ = ["HARNESS_CORES", "QUIET_MIN_CORES", "harness_on", "quiet_placement", "split_cores"]

#: Usable cores from which the arm keeps proofdiff off the daemons' cores.
QUIET_MIN_CORES = 8
#: The cores proofdiff keeps for itself there.
HARNESS_CORES = 2


def split_cores(usable: Sequence[int]) -> tuple[tuple[int, ...], tuple[int, ...]] | None:
    """``(proofdiff's cores, the daemons' cores)`` of ``usable`` (sorted), or ``None`` below
    :data:`QUIET_MIN_CORES`."""
    cores = sorted(usable)
    if len(cores) < QUIET_MIN_CORES:
        return None
    return tuple(cores[:HARNESS_CORES]), tuple(cores[HARNESS_CORES:])


def quiet_placement(sides: Sequence[str], usable: Sequence[int]) -> Placement:
    """Both ``sides`` (their profile names) on the daemons' cores of :func:`split_cores`; no
    pinning (an empty placement, its reason said) below :data:`QUIET_MIN_CORES`."""
    split = split_cores(usable)
    if split is None:
        return Placement(cpusets={}, reason=f"both builds on any of the {len(usable)} usable "
                         f"core(s), proofdiff beside them (fewer than {QUIET_MIN_CORES}: no "
                         "core to keep apart)")
    mine, theirs = split
    return Placement(cpusets={s: theirs for s in sides}, reason=(
        f"both builds on cores {_span(theirs)}, proofdiff on {_span(mine)}"))


def _span(cores: Sequence[int]) -> str:
    return f"{cores[0]}-{cores[-1]}" if list(cores) == list(range(cores[0], cores[-1] + 1)) \
        else ",".join(str(c) for c in cores)


def _threads() -> list[int]:
    """This process's thread ids."""
    try:
        return [int(t) for t in os.listdir("/proc/self/task")]
    except OSError:
        return [0]


@contextlib.contextmanager
def harness_on(cores: Sequence[int]) -> Iterator[None]:
    """Every thread of this process on ``cores`` while the block runs (threads and processes
    started meanwhile inherit it), each thread's own affinity restored after; nothing when
    ``cores`` is empty. A thread that ended meanwhile is skipped."""
    if not cores:
        yield
        return
    before: dict[int, set[int]] = {}
    for tid in _threads():
        try:
            before[tid] = os.sched_getaffinity(tid)
            os.sched_setaffinity(tid, set(cores))
        except OSError:
            continue
    try:
        yield
    finally:
        for tid, was in before.items():
            try:
                os.sched_setaffinity(tid, was)
            except OSError:
                continue
