"""Every regression case under ``regressions/`` (or ``$PROOFDIFF_REGRESSIONS``), replayed.

What must hold, per case: its oracle passes on its profile. A case whose bug is not fixed yet
(``status = "open"``) is a strict xfail that only its own bug satisfies: the replay must fail
with the recorded signature; a fix turns it into a reported XPASS (mark the case fixed), and a
different failure fails the test. A case whose image or inputs are missing is skipped with what
is missing and how to get it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from proofdiff.regressions import Case, CaseError, cases_dir, discover, load_case, replay


class BugPresent(AssertionError):
    """The replay failed exactly as the case records: the bug is still there."""


def _params() -> list[object]:
    out: list[object] = []
    for folder in discover(cases_dir()):
        try:
            case = load_case(folder)
        except CaseError as exc:
            out.append(pytest.param(None, str(exc), id=folder.name))
            continue
        marks = [pytest.mark.xfail(strict=True, raises=BugPresent,
                                   reason=f"open: {case.title}")] if case.status == "open" else []
        out.append(pytest.param(case, "", id=case.id, marks=marks))
    return out or [pytest.param(None, "", id="no-cases",
                                marks=pytest.mark.skip(reason=f"no case under {cases_dir()}"))]


@pytest.mark.proofdiff
@pytest.mark.parametrize(("case", "error"), _params())
def test_regression(case: Case | None, error: str, tmp_path: Path) -> None:
    if case is None:
        pytest.fail(f"malformed case: {error}", pytrace=False)
    got = replay(case, report_dir=tmp_path)
    if got.status == "missing":
        pytest.skip(f"{case.id}: {got.message}")
    if got.status == "reproduces":
        raise BugPresent(f"{case.id}: {got.message} (report {got.report})")
    assert got.status == "holds", f"{case.id}: {got.status}: {got.message} (report {got.report})"
