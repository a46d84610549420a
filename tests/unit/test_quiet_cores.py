"""Where a gate's timing arm runs (proofdiff.gate.quiet_cores): both builds on the same cores,
proofdiff's own threads on others where the host has cores to spare, on this process's real
CPU affinity."""

from __future__ import annotations

import os
import threading

from proofdiff.gate.quiet_cores import (HARNESS_CORES, QUIET_MIN_CORES, harness_on,
                                        quiet_placement, split_cores)


def test_a_host_with_cores_to_spare_keeps_proofdiff_apart_and_both_builds_together() -> None:
    usable = list(range(16))
    assert split_cores(usable) == ((0, 1), tuple(range(2, 16)))
    placed = quiet_placement(["bench-baseline", "bench-candidate"], usable)
    assert placed.cpusets == {"bench-baseline": tuple(range(2, 16)),
                              "bench-candidate": tuple(range(2, 16))}
    assert placed.reason == "both builds on cores 2-15, proofdiff on 0-1"


def test_a_small_host_pins_nothing_and_says_why() -> None:
    assert QUIET_MIN_CORES > HARNESS_CORES
    assert split_cores([0, 1]) is None
    placed = quiet_placement(["a", "b"], [0, 1])
    assert placed.cpusets == {} and "fewer than 8" in placed.reason


def test_harness_on_moves_every_thread_and_restores_each() -> None:
    before = os.sched_getaffinity(0)
    one = {min(before)}
    seen: dict[str, set[int]] = {}
    started = threading.Event()
    stop = threading.Event()

    def older() -> None:  # a thread that exists before the block: it is moved too
        started.set()
        stop.wait(10)
        seen["older-after"] = os.sched_getaffinity(0)

    t = threading.Thread(target=older)
    t.start()
    assert started.wait(10)
    with harness_on(sorted(one)):
        seen["inside"] = os.sched_getaffinity(0)
        seen["older-inside"] = os.sched_getaffinity(t.native_id)  # type: ignore[arg-type]
        born = threading.Thread(target=lambda: seen.setdefault("born", os.sched_getaffinity(0)))
        born.start()
        born.join(10)
    stop.set()
    t.join(10)
    assert seen["inside"] == seen["older-inside"] == seen["born"] == one
    assert os.sched_getaffinity(0) == before == seen["older-after"]
    with harness_on(()):  # nothing to keep apart: nothing moves
        assert os.sched_getaffinity(0) == before
