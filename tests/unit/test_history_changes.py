"""Change points over real stored runs: ``proofdiff history`` on a real SQLite history fed
with recorded real runs (tests/data/history/runs.jsonl.gz: ``proofdiff run --suite validity
--profile bench`` of refprover and of a ``slow-prove=1.10`` build of it, taken interleaved on
the lent H200 host; PROVENANCE.md beside it says how).

The series are the test's nights: the runs, unchanged but for their time, are stored one a
night in the order the scenario needs (10 clean, then 5 slow; or 15 clean).

On these runs the step is NOT flagged: the host's run-to-run spread (5.9 %) leaves a 10 % step
over 5 runs at p = 0.006, short of Otava's 0.001. The test that asks for it is a strict xfail
until runs recorded on a quieter machine replace the file (benchmarks/record_history_runs.py);
the clean series, the metric read back and the page are asserted as they are. More samples per
run would not do: a run's proofs vary by 3.5 % here, about 2.4 % of the median's 5.9 %; the rest
is between runs. A recording on the 2-core development machine shared with other sessions was
noisier still (39.8 %, p = 0.76) and was not kept (PROVENANCE.md)."""

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

DATA = Path(__file__).resolve().parents[1] / "data" / "history" / "runs.jsonl.gz"
#: The first night of a series (2026-11-01 03:00 UTC).
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


@pytest.mark.xfail(strict=True, reason="the recorded runs' run-to-run spread (5.9 %) leaves the "
                   "10 % step at p=0.006, short of 0.001: re-record on a quiet machine")
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
    assert "<script" not in html and "http://" not in html.replace("http://www.w3.org", "")


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
    assert lat.machine.gpu_model == "NVIDIA H200" and lat.machine.cpus == 16


def test_a_series_too_short_to_split_has_no_change_point() -> None:
    assert change_points([100.0, 100.0, 200.0]) == []
