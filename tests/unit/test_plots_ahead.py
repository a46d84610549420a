"""The run page's plots drawn while the run proves (proofdiff.report.plots_ahead): the report
takes a drawing made ahead only when its own inputs are exactly those it was made of."""

from __future__ import annotations

import re

from msgspec.structs import replace

from proofdiff.report import plots_ahead
from proofdiff.report.run_plots import run_plots
from tests.conftest import job, run

PROFILES = ["bench", "prod"]


def drawn(plots: dict[str, str]) -> dict[str, str]:
    """The plots less matplotlib's element ids (clip paths, glyphs), which differ between two
    drawings of the same figure."""
    return {k: re.sub(r'(id="|#)[a-z]+[0-9a-f]{10}\b', r"\1ID", v) for k, v in plots.items()}


def runs(prod_ms: float = 600.0) -> list:
    return [run("bench", [job(i, wall_ms=1000.0 + i) for i in range(4)]),
            run("prod", [job(i, wall_ms=prod_ms + i) for i in range(4)])]


def test_the_report_takes_the_drawing_made_of_the_same_runs() -> None:
    made = runs()
    plots_ahead.draw(PROFILES, ["wpost-2k"], made)
    ahead = list(plots_ahead._drawn.values())[-1].result(timeout=60)
    # the result's runs are copies with the suites' flows appended: the same workload flows
    later = [replace(r, flows=(*r.flows, replace(r.flows[0], name="isolation"))) for r in made]
    first = plots_ahead.plots(PROFILES, ["wpost-2k"], later[::-1])
    again = plots_ahead.plots(PROFILES, ["wpost-2k"], later)
    assert first is ahead  # the drawing made ahead, taken as it is
    assert drawn(first) == drawn(again)  # drawn once ahead, then drawn again here: the same figures
    assert first is not again  # ...the second a drawing of its own (the first was taken)
    assert set(first) == {"latency", "in_flight"} and all(first.values())


def test_a_drawing_of_other_runs_is_never_used() -> None:
    plots_ahead.draw(PROFILES, ["wpost-2k"], runs(prod_ms=600.0))
    changed = runs(prod_ms=9000.0)  # prod's proofs 15x slower than in the drawing made ahead
    got = plots_ahead.plots(PROFILES, ["wpost-2k"], changed)
    assert drawn(got) == drawn(run_plots(PROFILES, ["wpost-2k"], changed))
    assert drawn(got) != drawn(run_plots(PROFILES, ["wpost-2k"], runs(prod_ms=600.0)))


def test_the_boxes_follow_the_profile_order_not_the_order_runs_were_made() -> None:
    made = runs()
    assert drawn(run_plots(PROFILES, ["wpost-2k"], made)) == drawn(
        run_plots(PROFILES, ["wpost-2k"], made[::-1]))


