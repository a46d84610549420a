"""``proofdiff run`` with refprover's binaries as processes (target = "process"), as on a host
without Docker, and against a daemon it did not start (target = "attach").

The clean differential: bench and prod as processes, side by side, pass every suite but
timing. The catalog rows that apply: one run of bench and a prod copy per fault, each failing where its fault is
planted (a proof that does not verify, params read where none are, a deadlock caught by the
hang guard, distinct inputs answered with one witness's proofs), with its evidence and top
suspect; nothing is left running after either."""

from __future__ import annotations

import tempfile
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

#: Every suite but timing.
CORRECTNESS_SUITES = ("preflight", "validity", "warmup", "isolation", "behaviour")
#: fault -> (suite, oracle) that must FAIL on its prod copy, the evidence text it gives and its
#: top suspect (what the evidence names, else the first key of the subsystem the check
#: exercises; never the fault switch, which has no rank of its own). The behaviour faults read
#: the daemon's own figures, the same for a process: tests/e2e/test_behaviour_and_params.py.
FAULTS = {
    "partition-race": ("validity", "proofs", "invalid", "config.pipeline.enabled"),
    "param-path-default": ("preflight", "params", "does NOT read the configured srs.param_cache",
                           "config.srs.param_cache"),
    "queue-deadlock": ("isolation", "hang", "stuck job ids: iso-", "concurrency"),
    "shared-witness": ("isolation", "distinct-inputs", "byte-identical",
                       "concurrency"),
}


def _process_profiles(tmp_path: Path) -> Path:
    """The shipped refprover set as processes, prod replaced by one copy per fault."""
    doc = tomllib.loads(profile_file("refprover").read_text(encoding="utf-8"))
    doc["defaults"]["runtime"] = "process"
    prod = doc["profiles"].pop("prod")
    for fault in FAULTS:
        doc["profiles"][f"prod-{fault}"] = {**prod, "env": {**prod["env"],
                                                            "REFPROVER_FAULTS": fault}}
    # a deadlocked daemon answers nothing: end its flows at 40 s, not the 600 s job deadline,
    # and give it up as stalled after 5 s of idle CPU, not the default 15 (in each of its flows)
    doc["profiles"]["prod-queue-deadlock"]["timeout_s"] = 40
    doc["profiles"]["prod-queue-deadlock"]["stall_s"] = 5
    path = tmp_path / "process.toml"
    path.write_text(tomli_w.dumps(doc), encoding="utf-8")
    return path


def _leftovers() -> list[str]:
    """Command lines of processes still running from a proofdiff process runtime's dir under
    this test's temp dir (a test running beside, tests/conftest.py ``BESIDE``, has its own)."""
    here = str(Path(tempfile.gettempdir()) / "proofdiff-daemon-")
    return [" ".join(p.info["cmdline"] or []) for p in psutil.process_iter(["cmdline"])
            if any(here in a for a in p.info["cmdline"] or [])]


# slow: every suite through the process runtime; make test runs the process runtime through the
# fleet's SSH hosts (tests/e2e/test_fleet_ssh.py) and the attached daemon below
@pytest.mark.slow
def test_the_clean_build_passes_every_suite_as_processes_side_by_side(
        cli_run: Any, two_job_workload: str) -> None:
    # Every suite but timing (whose verdicts need a quiet host: an undecided arm makes a run
    # INCOMPLETE by design, no property of the build), side by side (one core each here): every
    # check passes, nothing fails, is skipped or left undecided. The clean daemon under a memory
    # limit is tests/e2e/test_behaviour_and_params.py's (a process runtime here has RLIMIT_AS
    # only, which a daemon's address space outgrows).
    suites = [x for s in CORRECTNESS_SUITES for x in ("--suite", s)]
    # two jobs of two partitions: 4 work items in flight on prod, past its synthesis limit
    r = cli_run("--set", "*.runtime=process", "--side-by-side", "on", *suites,
                "--workload-file", two_job_workload, run_id="e2e-process-clean")
    res = r.result
    assert r.rc == 0 and res.verdict is Verdict.SAME, (res.verdict_line, cells_of(res))
    assert cells_of(res) == {} and {x.suite for x in res.records} == set(CORRECTNESS_SUITES)
    assert [x for x in res.records if x.outcome is not Outcome.PASS] == []
    for run in res.runs:
        assert run.daemon is not None and run.daemon.runtime == "process", run.profile
        assert run.image.digest.startswith("sha256:") and run.image.tag.endswith("/refprover")
    # each daemon pinned to its own CPUs, and the two profiles proving at the same time: their
    # workload runs, and the flows of the suites after it (not the workload runs alone, with
    # prod's later flows starting once bench's had all ended)
    sets = [set(run.daemon.cpuset) for run in res.runs if run.daemon]
    assert len(sets) == 2 and all(sets) and not sets[0] & sets[1], sets
    for later in (False, True):
        spans = [(min(j.started_unix_s for j in jobs),
                  max(j.started_unix_s + j.wall_ms / 1000 for j in jobs))
                 for run in res.runs
                 for jobs in [[j for f in run.flows if (f.name != "workload") is later
                               for j in f.jobs]]]
        assert len(spans) == 2 and max(s[0] for s in spans) < min(s[1] for s in spans), spans
    assert r.record("preflight", "image", "prod").evidence["id"].startswith("sha256:")
    assert r.record("validity", "proofs", "prod").counts.valid == 2
    for profile in ("bench", "prod"):
        assert {x.oracle for x in res.records_of("isolation", profile)} == {
            "hang", "lost-or-twice", "colliding-ids", "reused-id", "distinct-inputs"}
        assert r.record("warmup", "first-proof", profile).evidence["warmup"]["verified"] is True
        # what the daemon really does is what each profile asks
        assert {x.oracle for x in res.records_of("behaviour", profile)} >= {
            "priority", "mode", "in-flight", "lone-request"}
    warm = r.record("warmup", "first-proof", "prod").evidence  # 2 jobs at concurrency 4
    assert warm["floor_basis"] == "solo proof", warm
    prio = r.record("behaviour", "priority", "prod").evidence
    assert prio["queued_at_arrival"] >= 1 and prio["ratio"] <= prio["bound"], prio
    mode = r.record("behaviour", "mode", "prod").evidence
    assert mode["observed_max_in_progress"] >= 2 and mode["reported_pipeline"] is True, mode
    assert "<h2>Oracles</h2>" in (r.report_dir / "index.html").read_text()
    assert not _leftovers(), "daemon processes outlived the run"


# slow: the same faults are caught in containers by tests/e2e/test_fault_catalog.py; this runs
# them once more through the process runtime
@pytest.mark.slow
def test_catalog_rows_as_processes(cli_run: Any, tmp_path: Path, three_job_workload: str) -> None:
    # three jobs: a third distinct input, which shared-witness answers with another's proofs
    # whatever order the daemon ends the first two's partitions in (with two inputs it showed
    # only in some orders: tests/conftest.py three_job_workload)
    r = cli_run("--profiles", str(_process_profiles(tmp_path)), "--workload-file",
                three_job_workload, "--suite", "preflight",
                "--suite", "validity", "--suite", "isolation", run_id="e2e-process-faults",
                timeout_s=1500)
    res = r.result
    assert res.verdict is Verdict.DIVERGED, (res.verdict_line, r.output[-3000:])
    cells = cells_of(res)
    assert not [c for cs in cells.values() for c in cs if c["profile"] == "bench"], cells
    for fault, (suite, oracle, evidence, top) in FAULTS.items():
        profile = f"prod-{fault}"
        assert {"oracle": oracle, "profile": profile} in cells.get(suite, []), (fault, cells)
        rec = r.record(suite, oracle, profile)
        assert rec.outcome is Outcome.FAIL and evidence in rec.message, (fault, rec.message)
        (div,) = [d for d in res.divergences
                  if (d.suite, d.oracle, d.profile) == (suite, oracle, profile)]
        assert div.suspects[0].path == top, (fault, div.suspects[:3])
        assert f"{suite}/{oracle} diverged" in r.output, fault
    assert not _leftovers(), "daemon processes outlived the run"


def test_attached_daemon_is_checked_and_left_running(cli_run: Any, artifacts: Any,
                                                     tmp_path: Path, two_job_workload: str
                                                     ) -> None:
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
                    "--workload-file", two_job_workload, run_id="e2e-attach")
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
