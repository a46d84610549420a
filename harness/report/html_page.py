"""index.html: the verdict first, then divergences with suspects, errors, workflow sections,
every oracle record, timing plots, the side-by-side table, config deltas and the jobs (jinja2)."""

from __future__ import annotations

from pathlib import Path

import jinja2

from proofdiff.model.result import DifferentialResult
from proofdiff.model.status import Outcome

from proofdiff.report.table_rows import side_by_side

__all__ = ["render_html", "write_html"]

_ORDER = {Outcome.FAIL: 0, Outcome.ERROR: 1, Outcome.SKIPPED: 2, Outcome.INCONCLUSIVE: 3,
          Outcome.PASS: 4}
_ENV = jinja2.Environment(
    loader=jinja2.PackageLoader("proofdiff.report", "templates"),
    autoescape=jinja2.select_autoescape(["html", "j2"]), undefined=jinja2.StrictUndefined)


def render_html(result: DifferentialResult) -> str:
    """The page (records worst first; timing plots for records that carry samples)."""
    records = sorted(result.records, key=lambda r: (_ORDER[r.outcome], r.suite, r.profile))
    timing = [r for r in result.records if r.suite == "timing" and r.evidence.get("a_ms")
              is not None and (r.evidence.get("a_ms") or r.evidence.get("b_ms"))]
    return _ENV.get_template("index.html.j2").render(r=result, records=records, timing=timing,
                                                      rows=side_by_side(result))


def write_html(result: DifferentialResult, run_dir: Path) -> Path:
    """Write ``run_dir/index.html``; returns its path."""
    path = run_dir / "index.html"
    path.write_text(render_html(result), encoding="utf-8")
    return path
