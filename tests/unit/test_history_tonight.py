"""Tonight against the recent nights (proofdiff.history.tonight), on real recorded runs stored
in a real SQLite history and read back as the nightly reads them (tests/data/history/
runs.jsonl.gz: 15 clean runs of the reference image and 5 of a ``slow-prove=1.10`` image on a
quiet 2-core machine; PROVENANCE.md beside it). Each run is one night here."""

from __future__ import annotations

import gzip
from dataclasses import replace
from pathlib import Path

import msgspec
import pytest

from proofdiff.history.database import history_url, open_history
from proofdiff.history.query import Point, Series, load_series
from proofdiff.history.store import store_result
from proofdiff.history.tonight import MIN_NIGHTS, NIGHT_ALPHA, tonight_test
from proofdiff.model import serde
from proofdiff.model.result import DifferentialResult

DATA = Path(__file__).resolve().parents[1] / "data" / "history" / "runs.jsonl.gz"


@pytest.fixture(scope="module")
def nights(tmp_path_factory: pytest.TempPathFactory) -> tuple[Series, list[Point], list[Point]]:
    """The latency series of every recorded run, and its clean and slow points."""
    with gzip.open(DATA, "rt", encoding="utf-8") as f:
        runs = [serde.decode(line, DifferentialResult, where=str(DATA)) for line in f]
    tmp = tmp_path_factory.mktemp("tonight")
    db = open_history(history_url(str(tmp / "h.sqlite"), tmp))
    for i, r in enumerate(runs):
        store_result(db, msgspec.structs.replace(r, created_unix_s=1.7e9 + 86400 * i),
                     command="nightly", commit={"id": "recorded"})
    [lat] = load_series(db, "latency")
    db.close()
    clean = [p for p in lat.points if "-clean-" in p.run_id]
    slow = [p for p in lat.points if "-slow-" in p.run_id]
    return lat, clean, slow


def test_no_clean_night_is_new_against_the_clean_nights_before_it(
        nights: tuple[Series, list[Point], list[Point]]) -> None:
    lat, clean, _ = nights
    got = [tonight_test(replace(lat, points=tuple(clean[:k + 1])), NIGHT_ALPHA)
           for k in range(len(clean))]
    assert all(t is not None for t in got)
    assert [t.undecided != "" for t in got if t] == [True] * MIN_NIGHTS + [False] * 12
    assert not [t.tonight.run_id for t in got if t and t.new]


def test_a_slow_night_is_new_on_its_first_night_naming_the_nights_and_builds(
        nights: tuple[Series, list[Point], list[Point]]) -> None:
    lat, clean, slow = nights
    t = tonight_test(replace(lat, points=(*clean[:10], slow[1])), NIGHT_ALPHA)
    assert t is not None and t.new and not t.still, t
    assert 0.10 < t.step < 0.14 and t.df == 9 and t.p < NIGHT_ALPHA
    assert t.recent == tuple(clean[:10])
    assert "proofdiff/refprover:history-slow-prove-1.10" in t.headline()
    assert "proofdiff/refprover:0.1.0-d807372841c1" in t.headline()
    assert "one-sided prediction t=" in t.evidence() and clean[0].run_id in t.evidence()
    # its MDE at this machine's spread (3 % a night): the step it flags 9 times in 10
    assert t.mde is not None and 0.12 < t.mde < 0.18
    # a slow night of this recording 4 % above the clean level is under that: not flagged
    small = tonight_test(replace(lat, points=(*clean[:10], slow[3])), NIGHT_ALPHA)
    assert small is not None and not small.new and small.step < small.mde  # type: ignore[operator]


def test_fewer_than_three_earlier_nights_are_undecided(
        nights: tuple[Series, list[Point], list[Point]]) -> None:
    lat, clean, slow = nights
    t = tonight_test(replace(lat, points=(*clean[:2], slow[4])), NIGHT_ALPHA)
    assert t is not None and not t.new and t.mde is None
    assert t.undecided == "2 earlier night(s) at the current level; 3 needed"


def test_a_second_slow_night_is_still_slower_not_new_again(
        nights: tuple[Series, list[Point], list[Point]]) -> None:
    lat, clean, slow = nights
    pts = [*clean[:10], slow[1], slow[4]]
    first = tonight_test(replace(lat, points=tuple(pts[:-1])), NIGHT_ALPHA)
    second = tonight_test(replace(lat, points=tuple(pts)), NIGHT_ALPHA)
    assert first is not None and first.new
    assert second is not None and not second.new
