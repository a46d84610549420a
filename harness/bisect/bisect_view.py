"""A bisection's report: ``summary.json`` (the :class:`~proofdiff.bisect.bisection.BisectResult`),
``index.html`` (the conclusion, the minimal change with both values, the probe table; template
``harness/report/templates/bisect.html.j2``) and the console's table (rich)."""

from __future__ import annotations

from pathlib import Path

import jinja2
from rich.console import Console
from rich.table import Table

from proofdiff.model import serde

from proofdiff.bisect.bisection import BisectResult

__all__ = ["print_bisect", "write_bisect_report"]


def write_bisect_report(result: BisectResult, run_dir: Path) -> Path:
    """Write summary.json and index.html into ``run_dir``; returns summary.json's path."""
    run_dir.mkdir(parents=True, exist_ok=True)
    summary = serde.write(run_dir / "summary.json", result, indent=2)
    env = jinja2.Environment(loader=jinja2.PackageLoader("proofdiff.report", "templates"),
                             autoescape=jinja2.select_autoescape(["html", "j2"]))
    try:
        html = env.get_template("bisect.html.j2").render(r=result)
    except jinja2.TemplateError as exc:
        html = f"<pre>{result.line}\n\nthe report did not render: {exc}</pre>"
    (run_dir / "index.html").write_text(html, encoding="utf-8")
    return summary


def print_bisect(result: BisectResult, console: Console) -> None:
    """The probe table, the minimal change and the conclusion, on the console."""
    probes = Table(title=f"bisect {result.run_id}: {result.good} -> {result.bad}, "
                         f"oracle {result.oracle or 'any failure'}")
    for col in ("#", f"units applied to {result.good}", "outcome", "failing", "s"):
        probes.add_column(col)
    for p in result.probes:
        probes.add_row(f"{p.index}{' again' if p.fresh else ''}",
                       " + ".join(p.units) or f"(none: {result.good})", p.outcome,
                       ", ".join(p.failing), f"{p.wall_s:.0f}")
    console.print(probes)
    if result.change:
        change = Table(title="minimal failure-inducing change")
        for col in ("item", result.good, result.bad):
            change.add_column(col)
        for c in result.change:
            change.add_row(c.path, repr(c.good), repr(c.bad))
        console.print(change)
    console.print(f"{result.line}  ({result.n_probes} probes, {result.wall_s:.0f} s; "
                  f"exit {result.exit_code})", markup=False)
