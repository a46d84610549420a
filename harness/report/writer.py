"""The one report writer: every workflow's report folder, written the same way from its view
(:class:`~proofdiff.report.view.ReportView`).

``<run dir>/`` gets summary.json (first, so the machine-readable result survives a failure of a
later file), index.html, junit.xml, allure-results/ and the view's other files. A file that
fails to render is replaced by a note saying why (its text HTML-escaped); the others are still
written: a report is never lost.
"""

from __future__ import annotations

import html
import os
import traceback
from collections.abc import Callable
from pathlib import Path

import jinja2

from proofdiff.model import interrupt, serde
from proofdiff.model.result import DifferentialResult
from proofdiff.report.allure_results import write_allure
from proofdiff.report.junit_xml import junit_of
from proofdiff.report.view import ReportView

__all__ = ["render_page", "write_report", "write_view"]



def _bytecode_dir() -> str:
    """``jinja2/`` in proofdiff's cache (``$PROOFDIFF_CACHE``, else ``~/.cache/proofdiff``):
    kept with the other caches, never in the temp dir of a fleet's host."""
    path = Path(os.environ.get("PROOFDIFF_CACHE") or Path.home() / ".cache" / "proofdiff")
    (path / "jinja2").mkdir(parents=True, exist_ok=True)
    return str(path / "jinja2")


#: The pages' templates. Compiling index.html.j2 costs more than the rest of a failed run's
#: report; the compiled code is kept in jinja2's bytecode cache
#: (:func:`_bytecode_dir`, checked against each template's source checksum).
_ENV = jinja2.Environment(
    loader=jinja2.PackageLoader("proofdiff.report", "templates"),
    autoescape=jinja2.select_autoescape(["html", "j2"]), undefined=jinja2.StrictUndefined,
    bytecode_cache=jinja2.FileSystemBytecodeCache(_bytecode_dir()))


def render_page(view: ReportView) -> str:
    """index.html of a view: its template with ``r`` (the result), ``view`` and its context."""
    return _ENV.get_template(view.template).render(r=view.result, view=view, **view.context)


def write_view(view: ReportView | Callable[[], ReportView], run_dir: Path) -> Path:
    """Write every file of ``view`` into ``run_dir`` (module docstring); returns ``run_dir``.
    ``view`` may be the function that makes it (its plots drawn here). A Ctrl-C or SIGTERM
    while the view is made or written is held until the report is whole, then raised
    (:func:`proofdiff.model.interrupt.deferred`): an interrupted command still has its
    report."""
    with interrupt.deferred():
        return _write(view() if callable(view) else view, run_dir)


def _write(view: ReportView, run_dir: Path) -> Path:
    """:func:`write_view` of a view made."""
    run_dir.mkdir(parents=True, exist_ok=True)
    serde.write(run_dir / "summary.json", view.result, indent=2)
    for rel, data in view.files.items():
        path = run_dir / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    try:
        page = render_page(view)
    except Exception:  # noqa: BLE001 - a page that fails must not lose the rest of the report
        # the decision line and the traceback hold text a daemon, a case file or an exception
        # wrote: escaped, so that markup in them is shown, never run
        page = ("<pre>" + html.escape(f"{view.decision}: {view.decision_line}\n\nthe page did "
                                      f"not render:\n{traceback.format_exc()}") + "</pre>")
    (run_dir / "index.html").write_text(page, encoding="utf-8")
    junit_of(view).write(str(run_dir / "junit.xml"), pretty=True)
    write_allure(view, run_dir)
    return run_dir


def write_report(result: DifferentialResult, report_dir: Path) -> Path:
    """The differential's report: :func:`write_view` of its view into
    ``<report_dir>/<run id>/``; returns that dir."""
    from proofdiff.report.differential_view import differential_view

    return write_view(lambda: differential_view(result), Path(report_dir) / result.run_id)
