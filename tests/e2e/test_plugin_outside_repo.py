"""The installed pytest plugin from another repository: a user's own test file in a temporary
directory outside this checkout asks for the proofdiff fixtures against the built image (found
from the last build, with no crate and no profile file of theirs) and passes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from proofdiff.model.status import Verdict
from proofdiff.report.summary_json import load_summary

from tests.e2e.conftest import REPO, unique

pytestmark = pytest.mark.e2e

USER_TESTS = '''
from proofdiff import Outcome


def test_every_job_of_my_workload_completes(proofdiff_run, proofdiff_profile_name):
    flow = proofdiff_run.workload_flow
    assert flow is not None and len(flow.completed()) == len(flow.jobs) == 2


def test_my_proofs_verify(proofdiff_check, proofdiff_profile_name):
    rec = proofdiff_check("validity", "proofs")
    assert rec.outcome is Outcome.PASS and rec.counts.valid == 2


def test_bench_and_prod_agree(proofdiff_divergences, proofdiff_workload_name):
    assert proofdiff_divergences("validity") == []
'''


def test_a_users_own_tests_use_the_fixtures_from_a_temp_dir(artifacts: Any, tmp_path: Path,
                                                             two_job_workload: str) -> None:
    project = tmp_path / "their-repo"
    project.mkdir()
    (project / "test_mine.py").write_text(USER_TESTS, encoding="utf-8")
    rid = unique("e2e-plugin")
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           f"--proofdiff-run-id={rid}", "test_mine.py",
                           # their own workload file: the first two jobs of the build's
                           f"--proofdiff-workload-file={two_job_workload}"], cwd=project,
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert "5 passed" in proc.stdout, proc.stdout[-2000:]
    assert not (project / "targets").exists() and REPO not in project.parents
    res = load_summary(project / "reports" / rid)
    assert res.verdict is Verdict.SAME and res.images[0].tag == artifacts.image_tag
