"""The end-to-end tier: real containers of the real reference image, real proofs.

Tests drive ``proofdiff run`` (the CLI users run, in a subprocess) or call
``run_differential`` directly, and read the report back as a typed DifferentialResult. The
image, params and workload come from proofdiff.artifacts (`make test` builds them first; here they are
ensured once per session, cached outside the clone). Without a Docker engine the tier is
skipped with the reason.
"""

from __future__ import annotations

import io
import subprocess
import sys
import tomllib
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import docker
import pytest
import tomli_w
from rich.console import Console

from proofdiff import RunOptions, run_differential
from proofdiff.model.oracle_records import OracleRecord
from proofdiff.model.profile import deep_merge
from proofdiff.model.profile_file import profile_file
from proofdiff.model.result import DifferentialResult
from proofdiff.report.console import print_result
from proofdiff.report.summary_json import load_summary

REPO = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class CliRun:
    """One ``proofdiff run``: its exit code, output, the result it wrote and its report dir."""

    rc: int
    output: str
    result: DifferentialResult
    report_dir: Path

    def record(self, suite: str, oracle: str, profile: str,
               workload: str = "wpost-2k") -> OracleRecord:
        """The one record of that check (fails the test when there is none)."""
        found = self.result.records_of(suite, profile, workload, oracle)
        assert len(found) == 1, (suite, oracle, profile, [r.check for r in self.result.records])
        return found[0]


def unique(name: str) -> str:
    """A run id unique per call: container names derive from it, and another checkout's e2e
    run may be going on the same engine."""
    return f"{name}-{uuid.uuid4().hex[:6]}"


def run_cli(*args: str, run_id: str, report_dir: Path, ids: list[str],
            timeout_s: float = 900) -> CliRun:
    """``proofdiff run ARGS`` in a subprocess with a unique id made from ``run_id`` (appended
    to ``ids`` before it starts, for :func:`assert_no_containers`), its report in
    ``report_dir``; fails the test when no report was written."""
    rid = unique(run_id)
    ids.append(rid)
    cmd = [sys.executable, "-m", "proofdiff", "run", "--report-dir", str(report_dir),
           "--run-id", rid, *args]
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=timeout_s)
    out = proc.stdout + proc.stderr
    assert (report_dir / rid / "summary.json").is_file(), f"no report written by {cmd}:\n{out}"
    return CliRun(proc.returncode, out, load_summary(report_dir / rid), report_dir / rid)


def assert_no_containers(run_ids: list[str]) -> None:
    """No container labelled with any of ``run_ids`` is left (running or not)."""
    api = docker.from_env().api  # low-level list: no per-container inspect to race removals
    for rid in run_ids:
        left = api.containers(all=True, filters={"label": f"proofdiff.run={rid}"})
        assert not left, f"run {rid} left containers behind: {[c['Names'] for c in left]}"


@pytest.fixture
def cli_run(artifacts: Any, tmp_path: Path) -> Iterator[Any]:
    """``cli_run(*args, run_id=...)``: ``proofdiff run ARGS`` in a subprocess (15 min deadline);
    afterwards, no container of the run may be left."""
    run_ids: list[str] = []

    def run(*args: str, run_id: str, timeout_s: float = 900) -> CliRun:
        return run_cli(*args, run_id=run_id, report_dir=tmp_path, ids=run_ids,
                       timeout_s=timeout_s)

    yield run
    assert_no_containers(run_ids)


#: profile -> what it changes on prod: the validity faults that tests/e2e/test_bench_vs_prod.py
#: and test_run_differential.py read from one run (:func:`validity_faults`).
#: shared-assembler: one id for every job, as deterministic ids give retried sectors (curio's
#: porep-<miner>-<sector>; its WindowPoSt ids carry the randomness, so they do not collide here).
#: params-elsewhere: prod reads srs.param_cache=/var/tmp/filecoin-proof-parameters; the params
#: are mounted elsewhere.
VALIDITY_FAULTS: dict[str, dict[str, Any]] = {
    "prod-race": {"env": {"REFPROVER_FAULTS": "partition-race"}},
    "prod-asm": {"env": {"REFPROVER_FAULTS": "shared-assembler"}, "job_ids": "fixed"},
    "prod-noparams": {"mounts": {"params": "/data/elsewhere"}},
}
#: partition-race on bench too: latent in its monolithic config, so between bench and
#: prod-race only config differs (the switch is no part of the delta the suspects rank).
BENCH_FAULTS: dict[str, Any] = {"env": {"REFPROVER_FAULTS": "partition-race"}}


@pytest.fixture(scope="session")
def validity_faults(artifacts: Any, tmp_path_factory: pytest.TempPathFactory,
                    two_job_workload: str) -> Iterator[CliRun]:
    """One run of the validity suite on bench (the baseline, proving once, with
    :data:`BENCH_FAULTS`) and a copy of prod per fault of :data:`VALIDITY_FAULTS`, over the
    first two jobs of wpost-2k (both in flight at once on prod: every fault shows), through
    :func:`proofdiff.run_differential`, the library call under ``proofdiff run`` (no pytest in
    its path). ``rc`` is the result's exit
    code (what ``proofdiff run`` exits with), ``output`` the console view it prints
    (:func:`proofdiff.report.console.print_result`); no container may be left."""
    doc = tomllib.loads(profile_file("refprover").read_text(encoding="utf-8"))
    prod = doc["profiles"].pop("prod")
    doc["profiles"]["bench"] = deep_merge(doc["profiles"]["bench"], BENCH_FAULTS)
    for name, change in VALIDITY_FAULTS.items():
        doc["profiles"][name] = deep_merge(prod, change)
    tmp = tmp_path_factory.mktemp("validity-faults")
    path = tmp / "faults.toml"
    path.write_text(tomli_w.dumps(doc), encoding="utf-8")
    rid = unique("e2e-validity-faults")
    result = run_differential(RunOptions.from_env(
        profiles=str(path), suites=("validity",), run_id=rid, report_dir=str(tmp),
        param_cache=str(artifacts.param_cache),
        workload_files=dict([two_job_workload.split("=", 1)]),
        verifier_image=artifacts.verifier_image, bin_dir=str(artifacts.bin_dir)))
    out = io.StringIO()
    print_result(Console(file=out, width=200, highlight=False), result)
    yield CliRun(result.exit_code, out.getvalue(), result, tmp / rid)
    assert_no_containers([rid])


def errors_of(result: DifferentialResult) -> str:
    """Every error text of a result: run-level errors and every failed record's message."""
    return "\n".join([*result.errors, *(r.message for r in result.failed())])
