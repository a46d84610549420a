"""``proofdiff run`` with refprover's binaries as processes (target = "process"), as on a host
without Docker, and against a daemon it did not start (target = "attach").

The clean differential: bench and prod as processes agree on every default suite. The catalog
rows that apply: one run of bench and a prod copy per fault, each failing where its fault is
planted (a proof that does not verify, params read where none are, a deadlock caught by the
hang guard); nothing is left running after either."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import psutil
import pytest
import tomli_w

from proofdiff.model.choices import Runtime
from proofdiff.cli.cmd_catch_matrix import cells_of
from proofdiff.model.profile import Profile
from proofdiff.model.profile_file import profile_file
from proofdiff.model.status import Outcome, Verdict
from proofdiff.drivers.cuzk_client import status_probe
from proofdiff.runtime.daemon import start_daemon
from proofdiff.runtime.runner import Runner
from proofdiff.runtime.watchdog import Watchdog

pytestmark = pytest.mark.e2e

#: fault -> (suite, oracle) that must fail on its prod copy (the behaviour faults read the
#: daemon's own figures, the same for a process: tests/e2e/test_behaviour_and_params.py)
FAULTS = {"partition-race": ("validity", "proofs"), "param-path-default": ("preflight", "params"),
          "queue-deadlock": ("isolation", "hang")}


def _process_profiles(tmp_path: Path) -> Path:
    """The shipped refprover set as processes, prod replaced by one copy per fault."""
    doc = tomllib.loads(profile_file("refprover").read_text(encoding="utf-8"))
    doc["defaults"]["runtime"] = "process"
    prod = doc["profiles"].pop("prod")
    for fault in FAULTS:
        doc["profiles"][f"prod-{fault}"] = {**prod, "env": {**prod["env"],
                                                            "REFPROVER_FAULTS": fault}}
    # a deadlocked daemon answers nothing: end its flows at 40 s, not the 600 s job deadline
    doc["profiles"]["prod-queue-deadlock"]["timeout_s"] = 40
    path = tmp_path / "process.toml"
    path.write_text(tomli_w.dumps(doc), encoding="utf-8")
    return path


def _leftovers() -> list[str]:
    """Command lines of processes still running from a proofdiff process runtime's dir."""
    return [" ".join(p.info["cmdline"] or []) for p in psutil.process_iter(["cmdline"])
            if any("proofdiff-daemon-" in a for a in p.info["cmdline"] or [])]


def test_bench_vs_prod_as_processes_agree(cli_run: Any) -> None:
    # side by side (one core each here): the same verdict as one after the other
    r = cli_run("--set", "*.runtime=process", "--side-by-side", "on",
                run_id="e2e-process-clean")
    res = r.result
    assert r.rc == 0 and res.verdict is Verdict.SAME, (res.verdict_line, cells_of(res))
    assert {x.suite for x in res.records} == {"preflight", "validity", "warmup", "isolation",
                                              "behaviour"}
    for run in res.runs:
        assert run.daemon is not None and run.daemon.runtime == "process", run.profile
        assert run.image.digest.startswith("sha256:") and run.image.tag.endswith("/refprover")
    # each daemon pinned to its own CPUs, and the two workload runs proving at the same time
    sets = [set(run.daemon.cpuset) for run in res.runs if run.daemon]
    assert len(sets) == 2 and all(sets) and not sets[0] & sets[1], sets
    spans = [(min(j.started_unix_s for j in f.jobs), max(j.started_unix_s for j in f.jobs))
             for f in (run.workload_flow for run in res.runs) if f is not None]
    assert len(spans) == 2 and max(s[0] for s in spans) < min(s[1] for s in spans), spans
    assert r.record("preflight", "image", "prod").evidence["id"].startswith("sha256:")
    assert r.record("validity", "proofs", "prod").counts.valid == 4
    assert r.record("behaviour", "mode", "prod").evidence["reported_pipeline"] is True
    assert not _leftovers(), "daemon processes outlived the run"


def test_catalog_rows_as_processes(cli_run: Any, tmp_path: Path) -> None:
    r = cli_run("--profiles", str(_process_profiles(tmp_path)), "--suite", "preflight",
                "--suite", "validity", "--suite", "isolation", run_id="e2e-process-faults",
                timeout_s=1500)
    res = r.result
    assert res.verdict is Verdict.DIVERGED, (res.verdict_line, r.output[-3000:])
    cells = cells_of(res)
    assert not [c for cs in cells.values() for c in cs if c["profile"] == "bench"], cells
    for fault, (suite, oracle) in FAULTS.items():
        assert {"oracle": oracle, "profile": f"prod-{fault}"} in cells.get(suite, []), (fault, cells)
    assert "stuck job ids: iso-" in r.record("isolation", "hang", "prod-queue-deadlock").message
    assert not _leftovers(), "daemon processes outlived the run"


def test_attached_daemon_is_checked_and_left_running(cli_run: Any, artifacts: Any,
                                                     tmp_path: Path) -> None:
    doc = tomllib.loads(profile_file("refprover").read_text(encoding="utf-8"))
    prod = Profile(name="prod", workload="wpost-2k", runtime=Runtime.PROCESS,
                   config=doc["profiles"]["prod"]["config"],
                   mounts={"params": doc["profiles"]["prod"]["mounts"]["params"]},
                   ports={"grpc": 9820, "status": 9821})
    dog = Watchdog().start()
    runner = Runner("e2e-attach-target", tracker=dog, tool_dirs=[artifacts.bin_dir])
    daemon = start_daemon(runner, prod, artifacts.param_cache, probe=status_probe)  # "someone else's" daemon
    try:
        doc["defaults"]["runtime"] = "process"
        doc["profiles"]["prod"] = {
            "runtime": "attach", "address": daemon.address, "concurrency": 4, "job_ids": "curio",
            "status_url": f"http://127.0.0.1:{daemon.status_port}/status",
            "config": doc["profiles"]["prod"]["config"],
            "mounts": doc["profiles"]["prod"]["mounts"]}
        path = tmp_path / "attach.toml"
        path.write_text(tomli_w.dumps(doc), encoding="utf-8")
        r = cli_run("--profiles", str(path), "--suite", "validity", "--suite", "warmup",
                    run_id="e2e-attach")
        first = r.record("warmup", "first-proof", "prod")
        assert first.outcome is Outcome.SKIPPED and "did not start it" in first.message
        assert r.record("validity", "proofs", "prod").outcome is Outcome.PASS
        assert r.record("warmup", "liveness", "prod").outcome is Outcome.PASS
        assert r.rc == 2 and r.result.verdict is Verdict.INCOMPLETE, r.result.verdict_line
        assert daemon.state()["Status"] == "running"  # proofdiff never stopped it
    finally:
        daemon.remove()
        runner.close()
        dog.close()
