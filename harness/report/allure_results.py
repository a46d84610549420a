"""allure-results of a report view (allure-python-commons' model and file logger): one result
per check, with its text attached, its real start and stop (Allure's timeline) and a history id
stable across runs; ``environment.properties`` and ``categories.json`` from the view."""

from __future__ import annotations

import hashlib
import json
import shutil
import uuid
from pathlib import Path

from allure_commons.logger import AllureFileLogger
from allure_commons.model2 import Attachment, Label, Parameter, StatusDetails, TestResult

from proofdiff.report.view import ReportView

__all__ = ["carry_history", "history_folder", "write_allure"]

#: Allure's history folder: in a generated report (``allure generate``'s output) and, carried
#: over, in the next run's results (``allure-results/history/``), which the next ``allure
#: generate`` reads for its trends and each test's history.
HISTORY = "history"


def write_allure(view: ReportView, run_dir: Path) -> Path:
    """Write ``run_dir/allure-results/`` (read it with ``allure serve``); returns the dir."""
    out = run_dir / "allure-results"
    logger = AllureFileLogger(out, clean=True)  # type: ignore[no-untyped-call]
    for c in view.checks:
        att = f"{uuid.uuid4()}-attachment.txt"
        logger.report_attached_data(body=c.text or c.message, file_name=att)  # type: ignore[no-untyped-call]
        labels = [Label("parentSuite", f"proofdiff {view.kind}"), Label("suite", c.suite),
                  Label("subSuite", c.profile or view.kind)]
        if c.workload:
            labels.append(Label("tag", c.workload))
        params = [Parameter(k, v) for k, v in (("profile", c.profile), ("workload", c.workload))
                  if v]
        logger.report_result(TestResult(  # type: ignore[no-untyped-call]
            uuid=str(uuid.uuid4()),
            historyId=c.history_id or hashlib.md5(c.full_name.encode()).hexdigest(),
            fullName=c.full_name, name=f"{c.suite}/{c.name}" + (f" [{c.profile}]" if c.profile
                                                                 else ""),
            status=c.status.value, start=c.start_ms, stop=max(c.stop_ms, c.start_ms),
            statusDetails=StatusDetails(message=c.message), labels=labels, parameters=params,
            attachments=[Attachment(name=f"{c.suite}/{c.name}: {c.status.value}", source=att,
                                    type="text/plain")]))
    (out / "environment.properties").write_text(
        "".join(f"{k}={str(v).replace(chr(10), ' ')}\n" for k, v in view.environment.items()),
        encoding="utf-8")
    if view.categories:
        (out / "categories.json").write_text(json.dumps(list(view.categories), indent=1),
                                             encoding="utf-8")
    return out


def history_folder(path: Path) -> Path | None:
    """The Allure history folder that ``path`` names: ``path/history`` (a generated report, or
    a results folder that carried one), else ``path`` itself when it holds Allure's
    ``history.json`` (the history folder); ``None`` when neither exists."""
    if (path / HISTORY).is_dir():
        return path / HISTORY
    return path if (path / "history.json").is_file() else None


def carry_history(source: Path, results_dir: Path) -> list[str]:
    """Copy the files of the Allure history folder ``source`` into
    ``results_dir/history/`` (after the results are written: writing them cleans the folder),
    so the next ``allure generate`` continues the trends. Returns the names copied.

    Raises:
        OSError: a file could not be read or written.
    """
    out = results_dir / HISTORY
    out.mkdir(parents=True, exist_ok=True)
    names = sorted(p.name for p in source.iterdir() if p.is_file())
    for name in names:
        shutil.copyfile(source / name, out / name)
    return names
