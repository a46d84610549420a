"""The shipped regression cases on the real image: each fails with its recorded bug against the
image as the case pins it (its fault on), and holds once fixed (``[fix]``: the fault off, or
the flag corrected). Then the suite itself: open cases are strict xfails, a fixed bug flips to
a reported XPASS, and ``proofdiff run --suite regressions`` judges the same way."""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import msgspec
import pytest
import tomli_w
import tomllib

from proofdiff.model.run_options import RunOptions
from proofdiff.regressions import discover, load_case, replay

from tests.e2e.conftest import REPO

pytestmark = pytest.mark.e2e

SHIPPED = discover(REPO / "regressions")


@pytest.mark.parametrize("folder", SHIPPED, ids=[f.name for f in SHIPPED])
def test_a_shipped_case_fails_with_its_bug_and_holds_once_fixed(
        folder: Path, run_opts: RunOptions, two_job_workload: str) -> None:
    # the first two jobs of the build's wpost-2k (tests/conftest.py two_job_workload: both in
    # flight at once on prod, as every shipped bug needs), given as a user gives their own
    # inputs: the case's workload by name, its file from the run options
    name, path = two_job_workload.split("=", 1)
    opts = msgspec.structs.replace(run_opts, workload_files={**run_opts.workload_files,
                                                             name: path})
    case = load_case(folder)
    got = replay(case, opts)
    if case.binaries and got.status == "missing":  # a real daemon's build, not made here
        pytest.skip(got.message)
    assert got.status == "reproduces", f"{got.status}: {got.message} ({got.report})"
    fixed = replay(case, opts, fixed=True)
    assert fixed.status == "holds", f"{fixed.status}: {fixed.message} ({fixed.report})"


def _one_case(tmp_path: Path, name: str, *, fixed_in_image: bool) -> Path:
    """A copy of shipped case ``name`` under ``tmp_path/cases``; ``fixed_in_image``: its fix
    applied to the pinned profiles themselves, as if the bug were gone where it replays."""
    root = tmp_path / "cases"
    shutil.copytree(REPO / "regressions" / name, root / name)
    if fixed_in_image:
        case = load_case(root / name)
        doc = tomllib.loads(case.path.read_text())
        from proofdiff.model.profile_file import profile_table
        doc["profiles"] = {n: profile_table(p) for n, p in case.resolved(fixed=True).items()}
        case.path.write_text(tomli_w.dumps(doc))
    return root


def _suite(root: Path, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PROOFDIFF_REGRESSIONS": str(root)}
    return subprocess.run([sys.executable, "-m", "pytest", "suites/test_regressions.py", "-q",
                           "-p", "no:cacheprovider", "-p", "no:randomly", "-rsxX",
                           f"--basetemp={tmp_path / 'pt'}"], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=900)


CHEAP = "bench-cli-count-flag"  # preflight only: seconds per replay


def test_an_open_case_is_an_xfail_and_its_fix_a_strict_xpass(artifacts: Any,
                                                               tmp_path: Path) -> None:
    proc = _suite(_one_case(tmp_path / "a", CHEAP, fixed_in_image=False), tmp_path / "a")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "1 passed, 1 xfailed" in proc.stdout, proc.stdout  # the fix holds; the bug xfails
    proc = _suite(_one_case(tmp_path / "b", CHEAP, fixed_in_image=True), tmp_path / "b")
    assert proc.returncode == 1 and "XPASS(strict)" in proc.stdout, proc.stdout + proc.stderr


def test_proofdiff_run_suite_regressions_judges_as_the_suite(artifacts: Any,
                                                             tmp_path: Path) -> None:
    env = {**os.environ, "PROOFDIFF_REGRESSIONS": str(_one_case(tmp_path, CHEAP,
                                                                fixed_in_image=False))}
    proc = subprocess.run([sys.executable, "-m", "proofdiff", "run", "--suite", "regressions",
                           "--report-dir", str(tmp_path / "r"), "--history"], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert CHEAP in proc.stdout and " ok " in proc.stdout.replace("│", " "), proc.stdout
    # both replays (as pinned, failing; with the fix, passing) are in the history as such
    with sqlite3.connect(tmp_path / "r" / "history.sqlite") as db:
        rows = db.execute("SELECT command, exit_code FROM runs ORDER BY created_at").fetchall()
    assert [c for c, _ in rows] == ["replay", "replay"], rows
    assert rows[0][1] != 0 and rows[1][1] == 0, rows  # the bug as pinned; its fix holds


def test_a_case_whose_image_is_missing_is_skipped_with_how_to_get_it(run_opts: RunOptions,
                                                                     tmp_path: Path) -> None:
    root = _one_case(tmp_path, CHEAP, fixed_in_image=False)
    path = root / CHEAP / "case.toml"
    doc = tomllib.loads(path.read_text())
    doc["image"] = {"tag": "proofdiff/absent:never", "digest": "sha256:" + "0" * 64,
                    "reference": False}
    path.write_text(tomli_w.dumps(doc))
    got = replay(load_case(root / CHEAP), run_opts)
    assert got.status == "missing" and "docker load" in got.message, got.message
    proc = _suite(root, tmp_path)  # as pinned and with its fix: both skipped, nothing judged
    assert "2 skipped" in proc.stdout and "proofdiff/absent:never" in proc.stdout, proc.stdout
    assert proc.returncode == 2, proc.stdout
