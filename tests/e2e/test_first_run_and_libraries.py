"""The library and first-run-artifact checks on the real image and daemon, each with the fault on prod and
bench as the control in the same run (the check passes there, so it fails only with the fault):

* ``preflight/libraries``: prod runs the reference image variant without ``libgcc_s.so.1``
  (proofdiff.artifacts.variant_images), which every refprover program needs; its proving is
  skipped with the reason.
* ``warmup/first-run-artifacts``: prod runs with ``REFPROVER_FAULTS=no-first-run-artifact``
  (its first proof writes no circuit summary); bench's is found, fresh and non-empty.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from proofdiff.model.status import Outcome

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def without_library(artifacts: Any) -> str:
    """The reference image without libgcc_s.so.1 (made once, cached by content)."""
    from proofdiff.artifacts.engine import connect
    from proofdiff.artifacts.variant_images import ensure_without_library

    client = connect()
    try:
        return ensure_without_library(client, Path(artifacts.cache_root), artifacts.image_tag,
                                      log=lambda _line: None)
    finally:
        client.close()


def test_a_program_missing_a_library_in_its_image_is_caught_before_any_proof(
        cli_run: Any, without_library: str, one_partition_workload: str) -> None:
    r = cli_run("--workload-file", one_partition_workload, "--suite", "preflight",
                "--suite", "warmup", "--set", f"prod.image={without_library}",
                run_id="e2e-libraries")
    prod = r.record("preflight", "libraries", "prod")
    assert prod.outcome is Outcome.FAIL, prod.message
    assert "/usr/local/bin/refprover (the daemon) needs libgcc_s.so.1: not found in image " \
        f"{without_library}" in prod.message
    assert prod.evidence["programs"][0]["missing"] == ["libgcc_s.so.1"]
    bench = r.record("preflight", "libraries", "bench")
    assert bench.outcome is Outcome.PASS, bench.message
    assert "libgcc_s.so.1" in bench.evidence["programs"][0]["found"]
    # what needs prod's first run is skipped with the reason; bench proves and writes its own
    skipped = r.record("warmup", "first-run-artifacts", "prod")
    assert skipped.outcome is Outcome.SKIPPED, skipped.message
    assert "preflight of profile 'prod' failed (libraries" in skipped.message
    assert r.record("warmup", "first-run-artifacts", "bench").outcome is Outcome.PASS


def test_a_first_run_that_leaves_nothing_is_caught_after_the_warmup(
        cli_run: Any, one_partition_workload: str) -> None:
    r = cli_run("--workload-file", one_partition_workload, "--suite", "warmup",
                "--set", "prod.env.REFPROVER_FAULTS=no-first-run-artifact",
                run_id="e2e-first-run")
    prod = r.record("warmup", "first-run-artifacts", "prod")
    assert prod.outcome is Outcome.FAIL, prod.message
    assert "the warmup proof completed but 1 of 1 first-run artifact(s)" in prod.message
    assert "no file matches /tmp/refprover/circuits.json" in prod.message
    bench = r.record("warmup", "first-run-artifacts", "bench")
    assert bench.outcome is Outcome.PASS, bench.message
    (files,) = bench.evidence["files"].values()
    assert files[0]["size_bytes"] > 0
    assert files[0]["mtime_unix_s"] >= int(bench.evidence["daemon_started_unix_s"])
    assert r.record("warmup", "first-proof", "prod").outcome is Outcome.PASS
