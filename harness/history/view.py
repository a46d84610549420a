"""What ``proofdiff history`` shows: a terminal table per series and one HTML page with a plot
per series (matplotlib, inline SVG: the page works offline, no script, no CDN), each change
point marked with its run, the images before and after, and the step with its evidence."""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from rich.console import Console
from rich.table import Table
from rich.text import Text

from proofdiff.history.changes import MIN_SIZE, Step, change_points
from proofdiff.history.query import Point, Series
from proofdiff.report.figures import figure, svg_of

__all__ = ["Change", "SeriesView", "analyse", "print_series", "render_html", "too_short",
           "trend_svg", "write_html"]


@dataclass(frozen=True)
class Change:
    """A change point of a series, located: the step, the run it starts at, the image (tag
    and digest) before and after, and whether it is a regression (``None``: the metric has no
    worse direction)."""

    step: Step
    run_id: str
    created_at: datetime
    before: Point
    after: Point
    regression: bool | None

    def headline(self, unit: str) -> str:
        """``run R (YYYY-MM-DD HH:MM): +10.2 % (regression); image A -> B``."""
        what = ("regression" if self.regression else "improvement"
                if self.regression is not None else "change")
        imgs = (f"image {self.before.image_tag} -> {self.after.image_tag}"
                if (self.before.image_tag, self.before.image_digest)
                != (self.after.image_tag, self.after.image_digest)
                else f"same image {self.after.image_tag}")
        return (f"run {self.run_id} ({_when(self.created_at)}): {self.step.rel_change:+.1%} "
                f"in {unit} ({what}); {imgs}")


@dataclass(frozen=True)
class SeriesView:
    """One series with its change points."""

    series: Series
    changes: tuple[Change, ...]


def too_short(v: SeriesView) -> str:
    """Why ``v`` is too short to judge ('' when it is not): a change point needs
    :data:`~proofdiff.history.changes.MIN_SIZE` valued runs on each side."""
    n = len(v.series.valued)
    return (f"undecided: {n} valued run(s); a change point needs {2 * MIN_SIZE}"
            if n < 2 * MIN_SIZE else "")


def _when(t: datetime) -> str:
    return t.astimezone(UTC).strftime("%Y-%m-%d %H:%M") if t.tzinfo else t.strftime(
        "%Y-%m-%d %H:%M")


def analyse(series: Sequence[Series], *, max_pvalue: float, min_magnitude: float) -> list[SeriesView]:
    """Each series with its change points (:func:`proofdiff.history.changes.change_points`
    over the points that have a value)."""
    out = []
    for s in series:
        pts = s.valued
        steps = change_points([p.value for p in pts if p.value is not None],
                              max_pvalue=max_pvalue, min_magnitude=min_magnitude)
        worse = s.metric.worse
        out.append(SeriesView(s, tuple(Change(
            step=st, run_id=pts[st.index].run_id, created_at=pts[st.index].created_at,
            before=pts[st.index - 1], after=pts[st.index],
            regression=None if not worse else (st.rel_change > 0) == (worse == "higher"))
            for st in steps)))
    return out


def _fmt(v: float | None) -> str:
    return "-" if v is None else f"{v:.4g}"


def print_series(console: Console, views: Sequence[SeriesView], *, rows: int = 30) -> None:
    """One table per series (its last ``rows`` points), change points marked, then each change
    with its evidence."""
    for v in views:
        s = v.series
        starts = {c.run_id: c for c in v.changes}
        table = Table(title=f"{s.metric.name} ({s.metric.unit}) of {s.profile} on {s.workload}"
                            f" - {s.machine.label}", title_justify="left")
        for col in ("run", "time (UTC)", "image", "commit", "verdict", s.metric.unit, "change"):
            table.add_column(col, overflow="fold")
        for p in s.points[-rows:]:
            c = starts.get(p.run_id)
            table.add_row(p.run_id, _when(p.created_at), p.image_tag, p.commit[:10], p.verdict,
                          _fmt(p.value), Text(f"step {c.step.rel_change:+.1%}",
                                              style="bold red" if c.regression else "bold")
                          if c else "")
        console.print(table)
        if len(s.points) > rows:
            console.print(f"  ({len(s.points) - rows} older runs in the HTML page)", markup=False,
                          soft_wrap=True)
        for c in v.changes:
            console.print(Text(f"  change point: {c.headline(s.metric.unit)}",
                               style="bold red" if c.regression else "bold"), soft_wrap=True)
            console.print(f"    {c.step.evidence(s.metric.unit)}", markup=False, highlight=False,
                          soft_wrap=True)
        if not v.changes:
            console.print(f"  {too_short(v) or f'no change point in {len(s.valued)} valued runs'}",
                          markup=False, soft_wrap=True)


def trend_svg(v: SeriesView) -> str:
    """A series' values over runs (oldest first), each level's mean dashed, each change point
    a vertical line with its step and run, as inline SVG."""
    s, pts = v.series, v.series.valued
    fig, (ax,) = figure(8.0, 2.8)
    xs = list(range(len(pts)))
    ax.plot(xs, [p.value or 0.0 for p in pts], "o-", ms=4, lw=1, color="#1f77b4")
    bounds = [0, *(c.step.index for c in v.changes), len(pts)]
    for lo, hi in zip(bounds, bounds[1:]):
        seg = [p.value for p in pts[lo:hi] if p.value is not None]
        if seg:
            mean = sum(seg) / len(seg)
            ax.hlines(mean, lo - 0.3, hi - 0.7, colors="#888888", linestyles="dashed")
    if v.changes:  # headroom for the step labels, so that no point hides behind one
        y0, y1 = ax.get_ylim()
        ax.set_ylim(y0, y1 + 0.2 * (y1 - y0))
    for c in v.changes:
        ax.axvline(c.step.index - 0.5, color="#d62728" if c.regression else "#ff7f0e", lw=1.5)
        ax.annotate(f" {c.step.rel_change:+.1%} at {c.run_id}",
                    (c.step.index - 0.5, ax.get_ylim()[1]), xytext=(3, -3),
                    textcoords="offset points", color="#d62728", fontsize=8, ha="left",
                    va="top", bbox={"fc": "white", "ec": "none", "alpha": 0.8})
    step = max(1, len(pts) // 12)
    ax.set_xticks(xs[::step], [_when(p.created_at)[5:] for p in pts[::step]], rotation=30,
                  fontsize=7, ha="right")
    ax.set_ylabel(f"{s.metric.name} ({s.metric.unit})")
    ax.set_title(f"{s.profile} on {s.workload}", fontsize=9)
    return svg_of(fig, f"{s.metric.name} of {s.profile} on {s.workload} over runs, "
                       f"{len(v.changes)} change point(s)")


_STYLE = ("body{font-family:sans-serif;margin:1.5em;max-width:70em}table{border-collapse:"
          "collapse;font-size:85%}td,th{border:1px solid #ccc;padding:2px 6px;text-align:left}"
          ".reg{color:#b00;font-weight:bold}.chg{font-weight:bold}details{margin:.5em 0}")


def render_html(views: Sequence[SeriesView], *, url: str, metric: str, runs: int) -> str:
    """The page (module docstring): change points first, then each series' plot and table."""
    e = html.escape
    found = [(v, c) for v in views for c in v.changes]
    parts = [f"<!doctype html><html><head><meta charset='utf-8'><title>proofdiff history: "
             f"{e(metric)}</title><style>{_STYLE}</style></head><body>",
             f"<h1>proofdiff history: {e(metric)}</h1><p>{e(url)}: {runs} runs, "
             f"{len(views)} series (machine x profile x workload)</p>"]
    parts.append(f"<h2>{len(found)} change point(s)</h2>")
    if found:
        parts.append("<table><tr><th>series</th><th>run</th><th>image before</th>"
                     "<th>image after</th><th>step</th><th>evidence</th></tr>")
        for v, c in found:
            s = v.series
            parts.append(
                f"<tr class='{'reg' if c.regression else 'chg'}'><td>{e(s.profile)} / "
                f"{e(s.workload)}<br>{e(s.machine.label)}</td><td>{e(c.run_id)}<br>"
                f"{e(_when(c.created_at))}</td><td>{e(c.before.image_tag)}<br><small>"
                f"{e(c.before.image_digest[:19])}</small></td><td>{e(c.after.image_tag)}<br>"
                f"<small>{e(c.after.image_digest[:19])}</small></td><td>"
                f"{c.step.rel_change:+.1%}</td><td>{e(c.step.evidence(s.metric.unit))}</td></tr>")
        parts.append("</table>")
    for v in views:
        s = v.series
        parts.append(f"<h2>{e(s.profile)} on {e(s.workload)}</h2><p>{e(s.machine.label)}; "
                     f"{e(s.metric.title)}</p>")
        parts.append(trend_svg(v) if s.valued else "<p>no value recorded</p>")
        starts = {c.run_id for c in v.changes}
        rows = "".join(
            f"<tr{' class=reg' if p.run_id in starts else ''}><td>{e(p.run_id)}</td>"
            f"<td>{e(_when(p.created_at))}</td><td>{e(p.image_tag)}</td><td>{e(p.commit[:10])}"
            f"</td><td>{e(p.verdict)}</td><td>{_fmt(p.value)}</td><td>{p.n}</td></tr>"
            for p in s.points)
        parts.append(f"<details><summary>{len(s.points)} runs</summary><table><tr><th>run</th>"
                     f"<th>time (UTC)</th><th>image</th><th>commit</th><th>verdict</th>"
                     f"<th>{e(s.metric.unit)}</th><th>samples</th></tr>{rows}</table></details>")
    parts.append("</body></html>")
    return "\n".join(parts)


def write_html(path: Path, views: Sequence[SeriesView], *, url: str, metric: str,
               runs: int) -> Path:
    """Write :func:`render_html` to ``path`` (its folder made); returns ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_html(views, url=url, metric=metric, runs=runs), encoding="utf-8")
    return path
