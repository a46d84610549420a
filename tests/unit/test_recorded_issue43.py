"""The behaviour suite's checks of repeated work (growth, parallel, timings, control-plane,
in-flight) on recorded real runs: every flow of the behaviour suite on refprover's
bench and prod and on a copy of prod per fault, with the daemons' log lines the checks read and
their processes' last reading (tests/data/issue43/flows.json, made by
tests/data/issue43/record_flows.py on the reference image). The clean daemons pass every check;
each fault fails the check meant for it, and only on its own profile."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec
import pytest

from proofdiff.model.image import ImageInfo
from proofdiff.model.jobs import FlowRecord
from proofdiff.model.runs import DaemonFacts, RunRecord
from proofdiff.model.status import Outcome
from proofdiff.oracles import (control_plane, daemon_growth, in_flight, lone_parallel,
                               reported_timings)
from proofdiff.oracles.evidence import Recorder
from proofdiff.runtime.process_probe import Reading
from tests.unit.fakes import FakeEvidence, refprover_profiles

DATA = Path(__file__).parents[1] / "data" / "issue43" / "flows.json"
#: Each check with the fault meant for it.
CHECKS = {"growth": (daemon_growth.check, "retain-witness"),
          "parallel": (lone_parallel.check, "serialize-partitions"),
          "timings": (reported_timings.check, "compute-micros"),
          "control-plane": (control_plane.check, "status-waits"),
          "in-flight": (in_flight.check, "early-release")}


@pytest.fixture(scope="module")
def recorded() -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(DATA.read_text(encoding="utf-8"))
    return doc


def _evidence(recorded: dict[str, Any], workload_file: Path) -> FakeEvidence:
    shipped = refprover_profiles()
    profiles = {name: msgspec.structs.replace(shipped["bench" if name == "bench" else "prod"],
                                              name=name) for name in recorded}
    runs, reading = {}, {}
    for name, got in recorded.items():
        flows = tuple(msgspec.convert(f, FlowRecord) for f in got["flows"])
        runs[name] = RunRecord(profile=name, workload="wpost-2k", image=ImageInfo(tag="t"),
                               partitions=2, flows=flows,
                               daemon=DaemonFacts(log_tail=got["log"], state={"Status": "running"}))
        if got["end"]:
            reading[name] = Reading(**got["end"])
    return FakeEvidence(profiles=profiles, workload_file=workload_file, runs=runs,
                        reading=reading)


@pytest.mark.parametrize("oracle", CHECKS)
def test_each_check_passes_clean_and_fails_on_its_fault(recorded: dict[str, Any],
                                                        workload_file: Path,
                                                        oracle: str) -> None:
    check, fault = CHECKS[oracle]
    ev = _evidence(recorded, workload_file)
    rec = Recorder(ev, "behaviour", "wpost-2k")  # type: ignore[arg-type]
    clean = ["prod"] + ([] if oracle == "parallel" else ["bench"])  # bench promises no parallel
    for name in [*clean, f"prod-{fault}"]:
        check(ev, rec, name, "wpost-2k")  # type: ignore[arg-type]
    got = {r.profile: r for r in rec.records}
    for name in clean:
        assert got[name].outcome is Outcome.PASS, got[name].message
    bad = got[f"prod-{fault}"]
    assert bad.outcome is Outcome.FAIL, bad.message
    assert ev.calls == []  # every flow was recorded: nothing more was sent
