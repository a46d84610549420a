"""Allure's ``history/`` carried from one night to the next, so the report that ``allure
generate`` makes of tonight's allure-results shows each check's history and the trends.

Allure keeps its history in the report it generates (``<report>/history/``); the next run's
results must carry a copy (``allure-results/history/``) for ``allure generate`` to continue it.
proofdiff does not generate reports (that is Allure's CLI, run by CI): the nightly copies the
previous night's history into tonight's results. Where it comes from:

* ``--allure-history DIR``: the previous generated report's history, DIR being that report or
  its ``history/`` folder (what a CI recipe keeps between jobs; docs/guide/ci-recipes.md). A DIR that
  does not exist yet is the first night: nothing to carry, said so.
* otherwise the latest earlier night (on this machine, from the history) whose report folder in
  the report root holds ``allure-report/history/`` (CI generated it there), else the history
  its ``allure-results/`` carried (no report was generated that night: the history is then as
  of the night before it).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from proofdiff.report.allure_results import carry_history, history_folder

__all__ = ["ALLURE_REPORT", "carry_night", "find_history"]

#: The folder of a night's report where CI is expected to generate the Allure report.
ALLURE_REPORT = "allure-report"


def find_history(given: str, report_root: Path, nights: Sequence[str]) -> tuple[Path | None, str]:
    """The Allure history folder to carry (module docstring) and a line saying where it is
    from, or why there is none.

    Args:
        given: ``--allure-history`` ('' = look in the earlier nights' report folders).
        report_root: the report root. nights: the earlier nights' run ids, oldest first.
    """
    if given:
        path = Path(given).expanduser()
        found = history_folder(path) if path.is_dir() else None
        return found, (str(found) if found else
                       f"none yet: {path} holds no Allure history (the first night)")
    for night in reversed(nights):
        for where in (report_root / night / ALLURE_REPORT, report_root / night / "allure-results"):
            found = history_folder(where)
            if found is not None:
                return found, str(found)
    return None, (f"none: no earlier night's folder in {report_root} holds "
                  f"{ALLURE_REPORT}/history/ (pass --allure-history DIR)")


def carry_night(source: Path | None, run_dir: Path) -> str:
    """Copy ``source`` into ``run_dir/allure-results/history/`` (after the night's report is
    written); returns a line for the log: what was copied, or why nothing was."""
    if source is None:
        return "allure history: nothing carried"
    try:
        names = carry_history(source, run_dir / "allure-results")
    except OSError as exc:
        return f"allure history: NOT carried from {source}: {exc}"
    return f"allure history: carried {len(names)} file(s) from {source}"
