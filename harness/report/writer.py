"""Write every report file of a result: ``<report dir>/<run id>/`` with summary.json,
index.html, junit.xml, allure-results/ and benchmarks/ (when timed)."""

from __future__ import annotations

from pathlib import Path

from proofdiff.model.result import DifferentialResult

from proofdiff.report.allure_results import write_allure
from proofdiff.report.benchmark_json import write_benchmarks
from proofdiff.report.html_page import write_html
from proofdiff.report.junit_xml import write_junit
from proofdiff.report.summary_json import write_summary

__all__ = ["write_report"]


def write_report(result: DifferentialResult, report_dir: Path) -> Path:
    """Write the report files; returns the run dir. summary.json is written first, so the
    machine-readable result survives a failure of a later writer."""
    run_dir = Path(report_dir) / result.run_id
    run_dir.mkdir(parents=True, exist_ok=True)
    write_summary(result, run_dir)
    write_html(result, run_dir)
    write_junit(result, run_dir)
    write_allure(result, run_dir)
    write_benchmarks(result, run_dir)
    return run_dir
