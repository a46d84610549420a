"""The CLI answers at once: ``--help`` and a bad profile file load none of the heavy
libraries, checked through ``sys.modules`` of a fresh interpreter (not with a timing).

``--help`` of every command loads only argparse and the options table: not the suites (scipy),
the runtime (the docker SDK), the driver (grpc), the report (jinja2, matplotlib), rich or pytest.
A profile file that does not load is an ERROR result with its report, written before anything
is built or started: no session, no suite, no artifacts, no deepdiff, docker or grpc.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

#: Libraries a command imports only when it runs (top-level package names).
HEAVY = ("scipy", "numpy", "matplotlib", "docker", "grpc", "google.protobuf", "jsonschema",
         "deepdiff", "jinja2", "pytest", "pytest_benchmark", "rich", "psutil", "requests")

#: What a run whose profiles did not load may not touch: everything that builds or starts.
NOT_ON_A_BAD_PROFILE = ("scipy", "numpy", "matplotlib", "docker", "grpc", "google.protobuf",
                        "jsonschema", "deepdiff", "pytest", "proofdiff.core.session",
                        "proofdiff.artifacts", "proofdiff.runtime.runner", "proofdiff.drivers",
                        "proofdiff.oracles.evidence")

_PROBE = """
import json, sys
from proofdiff.cli import main
try:
    code = main(sys.argv[1:])
except SystemExit as exc:
    code = exc.code
print(json.dumps({"code": code, "modules": sorted(sys.modules)}), file=sys.stderr)
"""


def _modules_after(*argv: str) -> tuple[int, set[str], str]:
    """(exit code, every module name loaded, stdout) of ``proofdiff ARGV`` in a fresh
    interpreter."""
    proc = subprocess.run([sys.executable, "-c", _PROBE, *argv], capture_output=True, text=True,
                          timeout=120, check=False)
    last = proc.stderr.strip().splitlines()[-1]
    doc = json.loads(last)
    return int(doc["code"]), set(doc["modules"]), proc.stdout


def _loaded(modules: set[str], names: tuple[str, ...]) -> list[str]:
    return [n for n in names if any(m == n or m.startswith(n + ".") for m in modules)]


@pytest.mark.parametrize("command", ["", "run", "gate", "bisect", "repro", "build", "reap",
                                     "catch-matrix", "history", "nightly"])
def test_help_loads_no_heavy_module(command: str) -> None:
    code, modules, out = _modules_after(*([command] if command else []), "--help")
    assert code == 0 and "usage: proofdiff" in out, out
    assert _loaded(modules, HEAVY) == []
    suites = sorted(m for m in modules if m.startswith("proofdiff.oracles."))
    assert suites == ["proofdiff.oracles.suite_table"]


def test_a_bad_profile_file_is_reported_before_anything_is_built(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text("[profiles.bench\n", encoding="utf-8")
    code, modules, out = _modules_after("run", "--profiles", str(bad), "--report-dir",
                                        str(tmp_path / "rep"), "--run-id", "r-bad")
    assert code == 3 and f"{bad}:1: malformed TOML" in out, out
    assert _loaded(modules, NOT_ON_A_BAD_PROFILE) == []
    summary = json.loads((tmp_path / "rep" / "r-bad" / "summary.json").read_text())
    assert summary["verdict"] == "ERROR" and "malformed TOML" in summary["errors"][0]


def test_the_run_path_of_a_process_host_loads_no_docker_sdk() -> None:
    # a GPU host often has no Docker, and the SDK's import would be part of the fixed cost of
    # every process run: the session, the runner, the samplers and the artifacts package load
    # it only where a container is made or an image built; the regression replay and repro
    # too (`run --suite regressions` on a host without the SDK must not end in a traceback)
    code = ("import sys, proofdiff.cli.cmd_run, proofdiff.core.differential, "
            "proofdiff.core.session, proofdiff.runtime.resources, proofdiff.artifacts, "
            "proofdiff.regressions.replay_all, proofdiff.regressions.repro, "
            "proofdiff.fleet.executor, proofdiff.fleet.placement; "
            "print(sorted(m for m in sys.modules if m == 'docker' or m.startswith('docker.')))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, check=True)
    assert proc.stdout.strip() == "[]", proc.stdout
