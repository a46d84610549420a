"""Change points over real stored runs: ``proofdiff history`` on a real SQLite history fed
with recorded real runs (tests/data/history/runs.jsonl.gz: ``proofdiff run --suite validity
--profile bench`` of the reference image and of a ``slow-prove=1.10`` image derived from it,
taken interleaved on a quiet 2-core development machine; PROVENANCE.md beside it says how).

The series are the test's nights: the runs, unchanged but for their time, are stored one a
night in the order the scenario needs (10 clean, then 5 slow; or 15 clean).

The step is flagged at its first slow run because these runs' run-to-run spread (3.0 %) is
under the ~4.3 % that a 10 % step over 5 runs needs at Otava's p < 0.001 (t > 4.22 at 13
degrees of freedom). Earlier recordings on lent GPU hosts (5.9-9.5 %) and on busier machines
(10.6-39.8 %) hid it; the noise lies between runs, not within them (PROVENANCE.md lists each).
The clean series, the metric read back and the page are asserted as well."""

from __future__ import annotations

import gzip
from pathlib import Path

import msgspec
import pytest

from proofdiff.cli import main
from proofdiff.history.changes import change_points
from proofdiff.history.database import history_url, open_history
from proofdiff.history.query import load_series
from proofdiff.history.store import store_result
from proofdiff.model import serde
from proofdiff.model.result import DifferentialResult

from tests.report_page import external_urls, open_page

DATA = Path(__file__).resolve().parents[1] / "data" / "history" / "runs.jsonl.gz"
#: The first night of a series, Unix seconds (a night at 03:00 UTC).
NIGHT0 = 1_793_502_000.0


@pytest.fixture(scope="module")
def recorded() -> dict[str, list[DifferentialResult]]:
    with gzip.open(DATA, "rt", encoding="utf-8") as f:
        runs = [serde.decode(line, DifferentialResult, where=str(DATA)) for line in f]
    return {"clean": [r for r in runs if "-clean-" in r.run_id],
            "slow": [r for r in runs if "-slow-" in r.run_id]}


def _history(tmp_path: Path, runs: list[DifferentialResult]) -> str:
    """A history holding ``runs``, one a night in this order."""
    url = history_url(str(tmp_path / "h.sqlite"), tmp_path)
    db = open_history(url)
    for night, r in enumerate(runs):
        store_result(db, msgspec.structs.replace(r, created_unix_s=NIGHT0 + 86400.0 * night),
                     command="run", commit={"id": "recorded"})
    db.close()
    return url


def test_the_step_is_flagged_at_the_first_slow_run(
        recorded: dict[str, list[DifferentialResult]], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    clean, slow = recorded["clean"][:10], recorded["slow"][:5]
    assert (len(clean), len(slow)) == (10, 5)
    url = _history(tmp_path, clean + slow)
    page = tmp_path / "history.html"
    rc = main(["history", "--history", url, "--profile", "bench", "--workload", "wpost-2k",
               "--html", str(page)])
    out = capsys.readouterr().out
    assert rc == 1, out  # a regression was flagged
    changes = [ln for ln in out.splitlines() if "change point:" in ln]
    assert len(changes) == 1, out
    assert f"change point: run {slow[0].run_id} " in changes[0]
    assert f"image {clean[-1].images[0].tag} -> {slow[0].images[0].tag}" in changes[0]
    assert "(regression)" in changes[0] and "Student's t-test p=" in out
    html = page.read_text(encoding="utf-8")
    assert "<svg" in html and slow[0].run_id in html and "1 change point(s)" in html
    assert "<script" not in html and external_urls(html) == []
    # the page in a real browser: nothing fetched from outside, no console error, its first
    # screen saved beside it
    facts = open_page(page, "history.png")
    assert facts.severe == [] and all(u.startswith("file:") for u in facts.resources), facts
    assert facts.screenshot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_clean_series_of_the_same_length_has_no_change_point(
        recorded: dict[str, list[DifferentialResult]], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    clean = recorded["clean"][:15]
    assert len(clean) == 15
    url = _history(tmp_path, clean)
    rc = main(["history", "--history", url, "--html", str(tmp_path / "h.html")])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "no change point in 15 valued runs" in out and "change point:" not in out


def test_the_stored_runs_read_back_as_their_own_latency(
        recorded: dict[str, list[DifferentialResult]], tmp_path: Path) -> None:
    import statistics

    runs = recorded["clean"][:10] + recorded["slow"][:5]
    db = open_history(_history(tmp_path, runs))
    [lat] = load_series(db, "latency")
    db.close()
    own = [statistics.median(j.wall_ms for j in r.runs[0].flows[0].jobs if j.index > 0)
           for r in runs]
    assert [p.value for p in lat.points] == own
    assert [p.image_tag for p in lat.points] == [r.runs[0].image.tag for r in runs]
    assert lat.machine.gpu_model == "" and lat.machine.cpus == 2  # the recording's machine


def test_a_series_too_short_to_split_has_no_change_point() -> None:
    assert change_points([100.0, 100.0, 200.0]) == []
