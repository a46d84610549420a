"""Heavy imports off a run's critical path.

A run's result assembly and report need scipy (the oracles' statistics), deepdiff (the config
delta), matplotlib with its SVG backend (the report's plots), jinja2, allure-python-commons
and junitparser (the report's files): a large part of a second each, seconds on a busy
host. :func:`start`, called as the run's first flow goes out
(:meth:`proofdiff.core.session.Session._prove`), imports them on a daemon thread while the main
thread waits on gRPC for proofs. Not before: a thread importing holds the GIL for most of its
time, and the plan, the daemon starts (their readiness polls) and preflight, all Python, would
take about twice as long beside it. When the main
thread later imports one, it finds it loaded, or waits on Python's per-module import lock for
the thread to finish it (a module is never imported twice). Only third-party libraries are
listed: they never import proofdiff, so the two threads cannot take module locks in opposite
orders. Once they are in, the thread draws one throwaway figure shaped like the report's (two
axes, titles, a legend, SVG): matplotlib's first figure reads its fonts and fills its text
caches (a first figure costs about twice the next), and that too can happen while daemons
prove.
"""

from __future__ import annotations

import importlib
import threading

# imported here, on the importing thread: the preload thread itself imports no proofdiff module
from proofdiff.report import figures

__all__ = ["HEAVY", "start"]

#: What a run imports later anyway, slowest first.
HEAVY: tuple[str, ...] = (
    "scipy.stats",  # proofdiff.stats: the warmup, behaviour and timing oracles
    "deepdiff",  # proofdiff.core.profile_delta
    "matplotlib.figure",  # proofdiff.report.figures
    "matplotlib.backends.backend_svg",  # Figure.savefig(format="svg")
    "matplotlib.font_manager",  # the font list, read on the first text drawn
    "allure_commons.model2",  # proofdiff.report.allure_results: attrs classes, slow to import
    "allure_commons.logger",
    "jinja2",  # proofdiff.report.writer
    "junitparser",  # proofdiff.report.junit_xml
)

_started = threading.Lock()
_thread: threading.Thread | None = None


def _load(modules: tuple[str, ...]) -> None:
    for name in modules:
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001 - the main thread's own import reports it
            pass
    if "matplotlib.figure" in modules:
        try:
            _warm_figure()
        except Exception:  # noqa: BLE001 - only a cache warm-up: the report draws its own
            pass


def _warm_figure() -> None:
    """Draw and discard one figure like :func:`proofdiff.report.gpu_section.gpu_plot_svg`'s,
    through the report's own :func:`~proofdiff.report.figures.svg_of` (its render lock: the
    SVG settings are matplotlib's global rcParams)."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(8.0, 2.2), dpi=96)
    left, right = fig.subplots(1, 2, squeeze=False)[0]
    left.plot([0.0, 1.0, 2.0], [0.0, 50.0, 100.0], lw=1, label="warm-up")
    right.plot([0.0, 1.0, 2.0], [0.5, 1.0, 1.5], lw=1)
    left.set(xlabel="s", ylabel="%", ylim=(0, 100))
    left.set_title("warm-up", fontsize=9)
    left.legend(fontsize=7)
    # a box plot, as the latency figure draws: its rcParams lookup imports matplotlib.pyplot
    # once, which would otherwise fall to the report, after the proofs
    right.boxplot([[1.0, 2.0, 3.0]], positions=[0], widths=0.5, showfliers=False)
    figures.svg_of(fig, "warm-up")


def start(modules: tuple[str, ...] = HEAVY) -> threading.Thread:
    """Import ``modules`` on a daemon thread, once per process (a later call returns the
    first call's thread). Never raises: a module that fails to import here fails again, with
    its error, where the run imports it."""
    global _thread
    with _started:
        if _thread is None:
            _thread = threading.Thread(target=_load, args=(modules,), name="proofdiff-preload",
                                       daemon=True)
            _thread.start()
        return _thread
