"""What the daemon really does, and the params it reads, end to end on the real image: each
behaviour oracle passes on the clean image and fails on a fault switch that breaks its property
on prod only (bench stays clean); the params integrity check fails, naming the file, on a
flipped byte and on a truncated file, before any proof."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from harness.cli.catch_matrix import HOST_MEMORY_SETS, cells_of
from harness.model.status import Outcome, Verdict

pytestmark = pytest.mark.e2e

BEHAVIOUR = ("--suite", "behaviour")
LIMITED = tuple(x for s in HOST_MEMORY_SETS for x in ("--set", s.format(p="prod")))


def test_clean_image_behaves_as_each_profile_asks(cli_run: Any) -> None:
    r = cli_run(*BEHAVIOUR, *LIMITED, run_id="e2e-behaviour-clean")
    assert r.rc == 0, (r.result.verdict_line, r.output[-3000:])
    for profile in ("bench", "prod"):
        for oracle in ("priority", "mode", "in-flight"):
            rec = r.record("behaviour", oracle, profile)
            assert rec.outcome is Outcome.PASS, rec.message
    prio = r.record("behaviour", "priority", "prod").evidence
    assert prio["queued_at_arrival"] >= 1 and prio["ratio"] <= prio["bound"], prio
    mode = r.record("behaviour", "mode", "prod").evidence
    assert mode["observed_max_in_progress"] >= 2 and mode["reported_pipeline"] is True, mode
    use = r.record("behaviour", "resources", "prod").evidence
    assert 0 < use["peak_mem_bytes"] < 0.9 * use["mem_limit_bytes"], use
    run = r.result.run("prod", "wpost-2k")
    assert run and run.daemon and run.daemon.resources and run.daemon.resources.samples > 0


#: fault -> (extra args, oracle that must fail on prod, evidence text, a suspect it must name)
CASES = {
    "ignore-priority": ((), "priority", "schedules FIFO, not by priority", "env.REFPROVER_FAULTS"),
    "exceed-inflight": ((), "in-flight", "but pipeline.max_parallel_synthesis = 3",
                        "config.pipeline.max_parallel_synthesis"),
    "env-bool": ((), "mode", "the daemon reports pipeline_enabled=False",
                 "env.REFPROVER_DISABLE_PIPELINE"),
    "ignore-deprecated": ((), "mode", "the daemon reports 1 partition worker(s)",
                          "config.synthesis.partition_workers"),
    "host-memory": (LIMITED, "resources", "OOM-killed; peak memory", "mem_limit"),
}


@pytest.mark.parametrize("fault", list(CASES))
def test_each_behaviour_fault_is_caught_on_prod_only(cli_run: Any, fault: str) -> None:
    extra, oracle, evidence, suspect = CASES[fault]
    r = cli_run(*BEHAVIOUR, *extra, "--set", f"prod.env.REFPROVER_FAULTS={fault}",
                run_id=f"e2e-{fault}")
    res = r.result
    assert r.rc == 1 and res.verdict is Verdict.DIVERGED, (r.rc, res.verdict_line, r.output[-3000:])
    cells = cells_of(res)
    assert {"oracle": oracle, "profile": "prod"} in cells.get("behaviour", []), cells
    assert not [c for cs in cells.values() for c in cs if c["profile"] == "bench"], cells
    assert evidence in r.record("behaviour", oracle, "prod").message
    (div,) = [d for d in res.divergences if d.oracle == oracle]
    assert suspect in [s.path for s in div.suspects[:5]], div.suspects


def _corrupt_copy(artifacts: Any, tmp_path: Path, how: str) -> tuple[Path, str]:
    cache = tmp_path / "params"
    shutil.copytree(artifacts.param_cache, cache)
    victim = sorted(cache.glob("*.params"))[0] if how == "flip" else sorted(cache.glob("*.vk"))[0]
    data = bytearray(victim.read_bytes())
    if how == "flip":
        data[len(data) // 2] ^= 0x01
    else:
        data = data[: len(data) // 2]
    victim.write_bytes(bytes(data))
    return cache, victim.name


@pytest.mark.parametrize("how", ["flip", "truncate"])
def test_a_damaged_param_file_fails_preflight_naming_it(cli_run: Any, artifacts: Any,
                                                         tmp_path: Path, how: str) -> None:
    cache, name = _corrupt_copy(artifacts, tmp_path, how)
    r = cli_run("--suite", "preflight", "--param-cache", str(cache),
                "--params-manifest", str(Path(artifacts.param_cache) / "parameters.json"),
                run_id=f"e2e-params-{how}")
    for profile in ("bench", "prod"):
        rec = r.record("preflight", "params-integrity", profile)
        assert rec.outcome is Outcome.FAIL and name in rec.message, rec.message
        assert "corrupt or truncated" in rec.message and rec.evidence["hash_s"] >= 0
    assert r.result.verdict is Verdict.FAILED, r.result.verdict_line
