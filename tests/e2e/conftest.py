"""End-to-end tier: real Docker containers of the real refprover image, real proofs.

Every test here drives `proofdiff run` (the CLI users run) and reads the report it wrote. The
image, params and workload come from harness.build (`make test` builds them first; here they
are ensured once per session, cached outside the clone). Without a Docker engine the tier is
skipped with the reason.
"""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import docker
import pytest

REPO = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class CliRun:
    """One `proofdiff run`: its exit code, output and the summary.json it wrote."""

    rc: int
    output: str
    summary: dict[str, Any]
    report_dir: Path


@pytest.fixture
def proofdiff_run(artifacts: Any, tmp_path: Path) -> Iterator[Any]:
    """Runs `proofdiff run ARGS` in a subprocess with a 15-minute deadline."""

    run_ids: list[str] = []

    def run(*args: str, run_id: str) -> CliRun:
        # unique per call: container names derive from the run id, and another checkout's
        # e2e run may be going on the same engine
        run_id = f"{run_id}-{uuid.uuid4().hex[:6]}"
        run_ids.append(run_id)
        cmd = [sys.executable, "-m", "harness.cli", "run", "--report-dir", str(tmp_path),
               "--run-id", run_id, *args]
        proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=900)
        out = proc.stdout + proc.stderr
        summary_path = tmp_path / run_id / "summary.json"
        assert summary_path.is_file(), f"no report written by {cmd}:\n{out}"
        return CliRun(proc.returncode, out, json.loads(summary_path.read_text()), tmp_path / run_id)

    yield run
    api = docker.from_env().api  # low-level list: no per-container inspect to race removals
    for rid in run_ids:
        left = api.containers(all=True, filters={"label": f"proofdiff.run={rid}"})
        assert not left, f"run {rid} left containers behind: {[c['Names'] for c in left]}"


def all_errors(summary: dict[str, Any]) -> str:
    """Every error text of a report: run-level and per profile x workload outcome."""
    texts = list(summary.get("errors", []))
    for o in summary.get("outcomes", []):
        texts += o.get("errors", []) + [b.get("reason", "") for b in o.get("bad", [])]
    return "\n".join(texts)
