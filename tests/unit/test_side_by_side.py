"""The side-by-side schedule: when the profiles may prove at the same time, on which CPUs, and
that a process daemon really runs on the CPUs it was given."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from msgspec.structs import replace

import proofdiff.runtime.launch as launch
from proofdiff.core.side_by_side import AUTO_MIN_CORES, place
from proofdiff.model.choices import Runtime, SideBySide
from proofdiff.model.profile_file import load_profiles

PROFILES = load_profiles("refprover")
DEFAULT = ("preflight", "validity", "warmup", "isolation", "behaviour")


def test_auto_splits_the_usable_cores_into_disjoint_contiguous_sets() -> None:
    got = place(PROFILES, DEFAULT, range(16), SideBySide.AUTO)
    assert got.side_by_side and list(got.cpusets) == list(PROFILES)
    assert got.cpusets == {"bench": tuple(range(8)), "prod": tuple(range(8, 16))}
    assert "2 profiles side by side on 16 usable cores, 8 each" == got.reason


def test_an_odd_core_is_left_unused_rather_than_shared() -> None:
    got = place(PROFILES, DEFAULT, [0, 2, 4, 6, 8, 10, 12, 14, 15], SideBySide.AUTO)
    assert got.cpusets == {"bench": (0, 2, 4, 6), "prod": (8, 10, 12, 14)}


@pytest.mark.parametrize(("suites", "cores", "mode", "why"), [
    (DEFAULT, range(2), SideBySide.AUTO, "2 usable cores, fewer than 4 per profile"),
    ((*DEFAULT, "timing"), range(64), SideBySide.ON, "the timing suite compares their speed"),
    (DEFAULT, range(64), SideBySide.OFF, "--side-by-side off"),
    (DEFAULT, range(1), SideBySide.ON, "1 usable cores, fewer than 1 per profile"),
])
def test_when_the_profiles_stay_one_after_the_other(suites: tuple[str, ...], cores: range,
                                                    mode: SideBySide, why: str) -> None:
    got = place(PROFILES, suites, cores, mode)
    assert not got.side_by_side and got.cpusets == {} and why in got.reason


def test_on_pins_each_profile_to_one_core_where_auto_would_not() -> None:
    assert place(PROFILES, DEFAULT, range(2), SideBySide.ON).cpusets == {"bench": (0,),
                                                                         "prod": (1,)}
    auto = place(PROFILES, DEFAULT, range(2 * AUTO_MIN_CORES - 1), SideBySide.AUTO)
    assert not auto.side_by_side and "--side-by-side on pins them" in auto.reason


def test_gpu_and_attached_profiles_are_never_placed_side_by_side() -> None:
    gpu = {**PROFILES, "prod": replace(PROFILES["prod"], gpus="all")}
    assert "ask for GPUs" in place(gpu, DEFAULT, range(64), SideBySide.ON).reason
    att = {**PROFILES, "prod": replace(PROFILES["prod"], runtime=Runtime.ATTACH,
                                       address="127.0.0.1:9820")}
    assert "did not start, which it cannot pin" in place(att, DEFAULT, range(64),
                                                         SideBySide.ON).reason
    assert place({"bench": PROFILES["bench"]}, DEFAULT, range(64), SideBySide.ON).reason == \
        "a single profile"


def test_the_launcher_pins_the_program_to_its_cpuset() -> None:
    cpu = min(os.sched_getaffinity(0))
    out = subprocess.run([sys.executable, "-I", "-S", str(Path(launch.__file__)), "--cpuset",
                          str(cpu), "--", sys.executable, "-c",
                          "import os; print(sorted(os.sched_getaffinity(0)))"],
                         capture_output=True, text=True, timeout=30, check=True)
    assert out.stdout.strip() == f"[{cpu}]"


@pytest.mark.parametrize("word", ["off", "on", "auto"])
def test_the_flag_reaches_the_schedule_as_given(word: str) -> None:
    # `--side-by-side off` once reached `place` as the string "off", which is no SideBySide
    # member by identity, so the schedule ran side by side whatever the user asked
    from proofdiff.model.run_options import options_from, side_by_side

    opts = options_from({"side_by_side": side_by_side(word)})
    got = place(PROFILES, DEFAULT, range(16), opts.side_by_side)
    assert opts.side_by_side is SideBySide(word)
    assert got.side_by_side is (word != "off"), got.reason
