"""The idle daemon's memory in the run history: each flow's reading before it stored
per run, read back as the ``daemon-memory`` metric, and a step up over the nights flagged by the
nightly's change points once, on a real SQLite history; level nights flag nothing."""

from __future__ import annotations

from pathlib import Path

import msgspec

from proofdiff.history.database import history_url, open_history
from proofdiff.history.query import load_series
from proofdiff.history.store import store_result
from proofdiff.model.jobs import UsageSample
from proofdiff.model.result import DifferentialResult
from proofdiff.nightly.nightly import compare_night
from tests.unit.test_history_store import COMMIT, result, timed_run

MIB = 2 ** 20


def _night(rid: str, day: int, idle_mib: float) -> DifferentialResult:
    """A night whose daemon held ``idle_mib`` before each flow after the warm-up (7 MiB before
    the first, as a fresh daemon does), 12 descriptors and 11 threads."""
    r = timed_run(1000.0 + (7 * day) % 11)
    flows = tuple(msgspec.structs.replace(f, usage=(
        UsageSample(0.0, 0, int((7.0 if n == 0 else idle_mib) * MIB), 12, 11, 1.0 + n),
        UsageSample(250.0, 1, int((idle_mib + 20) * MIB), 12, 11, 1.5 + n)),
        started_unix_s=1_764_000_000.0 + day * 86400 + n) for n, f in enumerate(r.flows))
    return msgspec.structs.replace(result(rid, t=1_764_000_000.0 + day * 86400),
                                   runs=(msgspec.structs.replace(r, flows=flows),))


def test_the_idle_memory_is_stored_per_flow_and_read_back(tmp_path: Path) -> None:
    db = open_history(history_url(str(tmp_path / "h.sqlite"), tmp_path))
    try:
        store_result(db, _night("r1", 1, 48.0), command="run", commit=COMMIT)
        [mem] = load_series(db, "daemon-memory")
        # the warm-up's reading (before the SRS load) is left out; the later one is the figure
        assert mem.metric.unit == "MiB" and mem.points[0].value == 48.0
    finally:
        db.close()


def test_a_step_up_in_the_idle_memory_is_flagged_over_the_nights_once(tmp_path: Path) -> None:
    hist = str(tmp_path / "history.sqlite")
    level = [48.0 + (5 * i) % 7 for i in range(10)]  # allocator noise, a few MiB
    leak = [150.0 + (3 * i) % 5 for i in range(3)]   # a leak: ~100 MiB more every night
    results = [compare_night(_night(f"n{i:02d}", i, m), history=hist, report_root=tmp_path,
                             run_id=f"n{i:02d}") for i, m in enumerate(level + leak)]
    flagged = [(r.run_id, s.metric, s.run_id) for r in results for s in r.slowdowns
               if s.metric == "daemon-memory"]
    # the step starts at night n10; a step needs two nights on each side (history.changes)
    assert flagged == [("n11", "daemon-memory", "n10")], flagged
    assert "daemon-memory on bench/wpost-2k" in results[11].decision_line
    assert all(not r.slowdowns for r in results[:10])
