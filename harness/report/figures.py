"""Matplotlib figures as inline SVG, the one way every report page draws a plot (the run, the
gate, the nightly, the history): no script, no external resource, so a page works offline.

A figure is a bare :class:`matplotlib.figure.Figure` (no pyplot: no global state); :func:`svg_of`
renders it with its text kept as ``<text>`` (readable and searchable in the page) and ids salted
by its label (two plots on one page never share an id), without a date. Those two settings are
matplotlib's rcParams, which are global: :func:`svg_of` renders under one lock, so that figures
drawn on several threads (the run's plots are drawn while it proves:
:mod:`proofdiff.report.plots_ahead`) never render with another's settings (text drawn as
glyph paths was seen when two threads rendered at once).
"""

from __future__ import annotations

import html
import io
import re
import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # matplotlib is imported when a plot is drawn (seconds on a busy host)
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["PALETTE", "figure", "svg_of"]

#: One colour per profile (or side), in order: the baseline first.
PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2",
           "#7f7f7f")


#: Held while a figure renders under its rcParams (module docstring).
_RENDERING = threading.Lock()

#: Margins around the axes, inches: room for tick labels and an axis label at 7-9 pt on the
#: left and bottom, a title on top. Fixed, not ``layout="tight"``, which draws every figure
#: twice to measure it, and the report's plots are a large part of a run's fixed cost.
MARGINS_IN = {"left": 0.75, "right": 0.15, "bottom": 0.5, "top": 0.3, "between": 0.75}


def figure(width_in: float, height_in: float, ncols: int = 1) -> tuple[Figure, list[Axes]]:
    """A figure ``width_in`` x ``height_in`` inches (96 dpi) with ``ncols`` axes side by side,
    in the fixed margins :data:`MARGINS_IN`.

    Raises:
        ValueError: ``ncols`` < 1.
    """
    from matplotlib.figure import Figure

    if ncols < 1:
        raise ValueError(f"a figure needs at least one axis, not {ncols}")
    fig = Figure(figsize=(width_in, height_in), dpi=96)
    m = MARGINS_IN
    plot_w = (width_in - m["left"] - m["right"] - (ncols - 1) * m["between"]) / ncols
    fig.subplots_adjust(left=m["left"] / width_in, right=1 - m["right"] / width_in,
                        bottom=m["bottom"] / height_in, top=1 - m["top"] / height_in,
                        wspace=m["between"] / max(plot_w, 0.1))
    axes = fig.subplots(1, ncols, squeeze=False)[0]
    return fig, list(axes)


def svg_of(fig: Figure, label: str) -> str:
    """``fig`` as an ``<svg>`` element to embed in a page (module docstring), with
    ``role="img"`` and ``aria-label`` = ``label``."""
    import matplotlib

    buf = io.StringIO()
    with _RENDERING, matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": label}):
        fig.savefig(buf, format="svg", metadata={"Date": None})
    svg = buf.getvalue()
    # the XML prolog goes, and the RDF metadata (its only URLs are the creator's home page)
    svg = re.sub(r"\s*<metadata>.*?</metadata>", "", svg[svg.find("<svg"):], flags=re.S)
    return svg.replace("<svg ", f'<svg role="img" aria-label="{html.escape(label)}" ', 1)
