"""What the daemon really does, and the params it reads, end to end on the real image: each
behaviour oracle fails on a fault switch that breaks its property where it is planted (bench,
and a clean prod under a memory limit, stay clean; the clean build passing every suite is
tests/e2e/test_process_target.py); the
params integrity check fails, naming the file, on a flipped byte and on a truncated file,
before any proof."""

from __future__ import annotations

import shutil
import tomllib
from pathlib import Path
from typing import Any

import pytest
import tomli_w

from proofdiff.cli.cmd_catch_matrix import cells_of
from proofdiff.model.profile import deep_merge
from proofdiff.model.profile_file import profile_file
from proofdiff.model.status import Outcome, Verdict

from tests.conftest import smaller_workload

pytestmark = pytest.mark.e2e

BEHAVIOUR = ("--suite", "behaviour")


#: fault -> (extra profile keys, oracle that must fail, evidence text, a suspect it must name)
CASES = {
    "ignore-priority": ({}, "priority", "schedules FIFO, not by priority",
                        "config.pipeline.enabled"),
    "exceed-inflight": ({}, "in-flight", "but pipeline.max_parallel_synthesis = 3",
                        "config.pipeline.max_parallel_synthesis"),
    "env-bool": ({}, "mode", "the daemon reports pipeline_enabled=False",
                 "env.REFPROVER_DISABLE_PIPELINE"),
    "ignore-deprecated": ({}, "mode", "the daemon reports 1 partition worker(s)",
                          "config.synthesis.partition_workers"),
    "host-memory": ({"mem_limit": "1200m", "config": {"memory": {
        "partition_working_set": "400MiB"}}}, "resources", "OOM-killed; peak memory", "mem_limit"),
}


#: prod under a memory limit with 400 MiB work items (4 workers would need 1.6 GiB): a daemon
#: that sizes itself from the cgroup, as the clean one does, stays under it; host-memory's
#: does not.
LIMITED = CASES["host-memory"][0]


#: The faults that show only where a job has several partitions: exceed-inflight counts
#: requests, not work items, against the synthesis limit, so one-partition jobs never tell the
#: two apart. The others show on one-partition jobs (half the proving).
PER_PARTITION = ("exceed-inflight",)


def _fault_profiles(tmp_path: Path, faults: list[str]) -> Path:
    """The shipped refprover set plus one copy of prod per fault of ``faults``
    (``prod-<fault>``) and a clean copy under :data:`LIMITED` (``prod-limited``): one run with
    bench as the baseline checks every fault against it, so bench runs once."""
    shipped = tomllib.loads(profile_file("refprover").read_text(encoding="utf-8"))
    prod = shipped["profiles"].pop("prod")
    for fault in faults:
        copy = deep_merge(prod, CASES[fault][0])
        copy["env"] = {**prod.get("env", {}), "REFPROVER_FAULTS": fault}
        shipped["profiles"][f"prod-{fault}"] = copy
    shipped["profiles"]["prod-limited"] = deep_merge(prod, LIMITED)
    path = tmp_path / "faults.toml"
    path.write_text(tomli_w.dumps(shipped), encoding="utf-8")
    return path


# slow: two full runs of every behaviour fault; the oracles' failing paths are
# tests/unit/test_behaviour.py's, on recorded flows
@pytest.mark.slow
def test_each_behaviour_fault_is_caught_where_it_is_planted(
        cli_run: Any, artifacts: Any, tmp_path: Path, one_partition_workload: str) -> None:
    # One-partition jobs: the priority flow's 5 jobs put 4 items in flight on prod, past its
    # memory limit. The faults of PER_PARTITION in a second run, against bench, on one job of
    # two partitions: the priority flow's 5 requests are 10 items, past prod's limit of 3.
    profiles = _fault_profiles(tmp_path, [f for f in CASES if f not in PER_PARTITION])
    r = cli_run(*BEHAVIOUR, "--profiles", str(profiles), "--workload-file",
                one_partition_workload, run_id="e2e-faults", timeout_s=1500)
    one_job = smaller_workload(Path(artifacts.workloads["wpost-2k"]), tmp_path, jobs=1)
    per_item = tmp_path / "per-item"
    per_item.mkdir()
    r2 = cli_run(*BEHAVIOUR, "--profiles", str(_fault_profiles(per_item, [*PER_PARTITION])),
                 "--profile", "bench", *[x for f in PER_PARTITION for x in
                                         ("--profile", f"prod-{f}")],
                 "--workload-file", f"wpost-2k={one_job}", run_id="e2e-faults-per-item")
    assert r2.rc == 1 and r2.result.verdict is Verdict.DIVERGED, (r2.result.verdict_line,
                                                                  r2.output[-3000:])
    res = r.result
    assert r.rc == 1 and res.verdict is Verdict.DIVERGED, (r.rc, res.verdict_line, r.output[-3000:])
    cells = cells_of(res)
    clean = ("bench", "prod-limited")
    assert not [c for cs in cells.values() for c in cs if c["profile"] in clean], cells
    # one-partition jobs: a lone job has nothing to put side by side (behaviour/parallel); the
    # behaviour suite alone sends too few flows after the warm-up to judge growth, which says so
    assert {x.outcome for x in res.records if x.profile in clean
            and x.check not in ("behaviour/parallel", "behaviour/growth")} == {Outcome.PASS}
    for profile in clean:
        growth = r.record("behaviour", "growth", profile)
        assert growth.outcome is Outcome.PASS or (growth.outcome is Outcome.SKIPPED and
                                                  "too little repeated work" in growth.message)
    assert "one partition" in r.record("behaviour", "parallel", "prod-limited").message
    use = r.record("behaviour", "resources", "prod-limited").evidence
    assert 0 < use["peak_mem_bytes"] < 0.9 * use["mem_limit_bytes"], use
    run = res.run("prod-limited", "wpost-2k")
    assert run and run.daemon and run.daemon.resources and run.daemon.resources.samples > 0
    for fault, (_extra, oracle, evidence, suspect) in CASES.items():
        profile, run_of = f"prod-{fault}", r2 if fault in PER_PARTITION else r
        assert {"oracle": oracle, "profile": profile} in cells_of(run_of.result).get(
            "behaviour", []), (fault, cells_of(run_of.result))
        assert evidence in run_of.record("behaviour", oracle, profile).message, fault
        (div,) = [d for d in run_of.result.divergences
                  if d.oracle == oracle and d.profile == profile]
        assert suspect in [s.path for s in div.suspects[:5]], (fault, div.suspects)
    assert {x.outcome for x in r2.result.records if x.profile == "bench"
            and x.check != "behaviour/growth"} == {Outcome.PASS}


def _corrupt_copy(artifacts: Any, tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A copy of the param cache with one ``.params`` file flipped (one bit in the middle) and
    one ``.vk`` file truncated (to half); returns it and ``{how: the damaged file's name}``."""
    cache = tmp_path / "params"
    shutil.copytree(artifacts.param_cache, cache)
    damaged = {}
    for how, victim in (("flip", sorted(cache.glob("*.params"))[0]),
                        ("truncate", sorted(cache.glob("*.vk"))[0])):
        data = bytearray(victim.read_bytes())
        if how == "flip":
            data[len(data) // 2] ^= 0x01
        else:
            data = data[: len(data) // 2]
        victim.write_bytes(bytes(data))
        damaged[how] = victim.name
    return cache, damaged


def test_a_damaged_param_file_fails_preflight_naming_it(cli_run: Any, artifacts: Any,
                                                         tmp_path: Path) -> None:
    # one run for both kinds of damage: preflight lists every file with a problem
    cache, damaged = _corrupt_copy(artifacts, tmp_path)
    r = cli_run("--suite", "preflight", "--param-cache", str(cache),
                "--params-manifest", str(Path(artifacts.param_cache) / "parameters.json"),
                run_id="e2e-params-damaged")
    for profile in ("bench", "prod"):
        rec = r.record("preflight", "params-integrity", profile)
        assert rec.outcome is Outcome.FAIL, rec.message
        for how, name in damaged.items():
            assert name in rec.message, (how, rec.message)
        assert "corrupt or truncated" in rec.message and rec.evidence["hash_s"] >= 0
    assert r.result.verdict is Verdict.FAILED, r.result.verdict_line
