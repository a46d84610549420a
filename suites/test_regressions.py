"""Every regression case under ``regressions/`` (or ``$PROOFDIFF_REGRESSIONS``), replayed.

What must hold, per case: its oracle passes on its profile. A case whose bug is not fixed yet
(``status = "open"``) is a strict xfail that only its own bug satisfies: the replay must fail
with the recorded signature; a fix turns it into a reported XPASS (mark the case fixed), and a
different failure fails the test. Each case is also replayed with its ``[fix] overrides``, and
must hold with them (``test_regression_holds_with_its_fix``). A case whose image or inputs are
missing is skipped with what is missing and how to get it; a replay in which every case was
skipped judged nothing, and exits non-zero (``suites/conftest.py``).
"""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

from proofdiff.regressions import CaseError, RegressionCase, discover, load_case, replay
from proofdiff_pytest.plugin_options import Options
from proofdiff_pytest.plugin import options_of


class BugPresent(AssertionError):
    """The replay failed exactly as the case records: the bug is still there."""


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """One test per case folder under the run options' ``regressions_dir`` (an open case's
    pinned replay is a strict xfail; its replay with the fix is not)."""
    if "case" not in metafunc.fixturenames:
        return
    pinned = metafunc.function.__name__ == "test_regression"
    root = options_of(metafunc.config).run.regressions_dir
    params: list[object] = []
    for folder in discover(root):
        try:
            case = load_case(folder)
        except CaseError as exc:
            params.append(pytest.param(None, str(exc), id=folder.name))
            continue
        marks = [pytest.mark.xfail(strict=True, raises=BugPresent,
                                   reason=f"open: {case.title}")] if (
            pinned and case.status == "open") else []
        params.append(pytest.param(case, "", id=case.id, marks=marks))
    metafunc.parametrize(("case", "error"), params or [pytest.param(
        None, "", id="no-cases", marks=pytest.mark.skip(reason=f"no case under {root}"))])


@pytest.mark.proofdiff
def test_regression(case: RegressionCase | None, error: str, proofdiff_options: Options,
                    tmp_path: Path) -> None:
    if case is None:
        pytest.fail(f"malformed case: {error}", pytrace=False)
    got = replay(case, msgspec.structs.replace(proofdiff_options.run, report_dir=str(tmp_path)))
    if got.status == "missing":
        pytest.skip(f"{case.id}: {got.message}")
    if got.status == "reproduces":
        raise BugPresent(f"{case.id}: {got.message} (report {got.report})")
    assert got.status == "holds", f"{case.id}: {got.status}: {got.message} (report {got.report})"


@pytest.mark.proofdiff
def test_regression_holds_with_its_fix(case: RegressionCase | None, error: str,
                                       proofdiff_options: Options, tmp_path: Path) -> None:
    if case is None:
        pytest.fail(f"malformed case: {error}", pytrace=False)
    if not case.fix:
        pytest.skip(f"{case.id}: no [fix] recorded, so there is no fix to replay")
    got = replay(case, msgspec.structs.replace(proofdiff_options.run, report_dir=str(tmp_path)),
                 fixed=True)
    if got.status == "missing":
        pytest.skip(f"{case.id}: {got.message}")
    assert got.status == "holds", (f"{case.id} with its fix {list(case.fix)}: {got.status}: "
                                   f"{got.message} (report {got.report})")
