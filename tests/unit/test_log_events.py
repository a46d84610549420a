"""Work items and job totals from a daemon's log (proofdiff.oracles.log_events): refprover's
``tracing`` lines as its process writes them (copied from a prod daemon's log) and cuzk's
``TIMELINE`` lines in the format its source documents; only items that lie within their
requests' send and answer times are counted."""

from __future__ import annotations

from msgspec.structs import replace

from proofdiff.model.jobs import NO_TIMINGS, JobRecord
from proofdiff.model.status import JobStatus
from proofdiff.oracles.log_events import fitted, logged_items, logged_totals, max_overlap

#: A lone two-partition job on a refprover prod daemon (RUST_LOG=info,refprover=debug).
REFPROVER = """\
2026-12-07T17:39:15.816610Z DEBUG partition start job_id=925a seq=36 partition=0 worker=2
2026-12-07T17:39:15.816667Z  INFO generate_single_window_post_with_vanilla:start
2026-12-07T17:39:15.816696Z DEBUG partition start job_id=925a seq=36 partition=1 worker=0
2026-12-07T17:39:15.820525Z  INFO job queued job_id=925a seq=36 kind="WINDOW_POST_PARTITION" priority=3 position=0
2026-12-07T17:39:18.388093Z DEBUG partition done job_id=925a seq=36 partition=1 worker=0
2026-12-07T17:39:19.972117Z DEBUG refprover::engine: partition done job_id=925a seq=36 partition=0 worker=2
2026-12-07T17:39:19.972166Z  INFO job completed job_id=925a seq=36 total_ms=4155
"""
T0 = 1796665155.8  # the first log line's time, Unix seconds


def _job(rid: str, sent: float, wall_ms: float) -> JobRecord:
    return JobRecord(index=0, job="wpost-0", request_id=rid, status=JobStatus.COMPLETED,
                     started_unix_s=sent, wall_ms=wall_ms, timings=NO_TIMINGS)


def test_refprover_partitions_side_by_side_and_its_total() -> None:
    items = logged_items(REFPROVER)
    assert [(i.job_id, i.seq, i.partition, i.wall) for i in items] == [
        ("925a", 36, 0, True), ("925a", 36, 1, True)]
    assert round(items[0].end - items[0].start, 3) == 4.156
    assert max_overlap(items)[0] == 2 and max_overlap(items)[2] == ("925a#0", "925a#1")
    assert logged_totals(REFPROVER) == {"925a": [4155]}
    # one after the other: the second starts as the first ends (touching ends do not overlap)
    serial = REFPROVER.replace("17:39:15.816696Z DEBUG partition start job_id=925a seq=36 "
                               "partition=1", "17:39:19.972117Z DEBUG partition start "
                               "job_id=925a seq=36 partition=1").replace(
        "17:39:18.388093Z DEBUG partition done", "17:39:22.388093Z DEBUG partition done")
    assert max_overlap(logged_items(serial))[0] == 1


def test_curios_ids_with_spaces_are_read_whole() -> None:
    rid = "wdpost-1000-0-[219 155 147 89 151 100 219 25]"
    log = REFPROVER.replace("job_id=925a", f"job_id={rid}")
    assert {i.job_id for i in logged_items(log)} == {rid}
    assert logged_totals(log) == {rid: [4155]}


def test_only_items_within_their_requests_times_count() -> None:
    items = logged_items(REFPROVER)
    good, bad = fitted(items, [_job("925a", T0, 4200.0)])
    assert (len(good), bad) == (2, 0)
    # the client saw the request answered before the log says the item ended: not counted
    good, bad = fitted(items, [_job("925a", T0, 3000.0)])
    assert (len(good), bad) == (1, 1)
    # an id proofdiff never sent is neither (another client's work)
    assert fitted(items, [_job("other", T0, 9000.0)]) == ([], 0)


def test_cuzk_timeline_syntheses_per_partition() -> None:
    log = "\n".join([
        "TIMELINE,1000,SYNTH_START,porep-1000-7,partition=0",
        "TIMELINE,1002,SYNTH_START,porep-1000-7,partition=1",
        "TIMELINE,1004,SYNTH_START,porep-1000-8,kind=PoRepSealCommit",
        "TIMELINE,2500,SYNTH_END,porep-1000-7,partition=0,synth_ms=1500",
        "TIMELINE,2600,SYNTH_END,porep-1000-7,partition=1,synth_ms=1598",
        "TIMELINE,2700,GPU_START,porep-1000-7,partition=0",
        "TIMELINE,3004,SYNTH_END,porep-1000-8,synth_ms=2000",
        "2026-12-07T17:39:19Z  INFO cuzk_core::engine: Phase 7: all partitions complete, proof "
        "assembled job_id=porep-1000-7 proof_len=384 total_ms=5123 synth_ms=3098 gpu_ms=900",
    ])
    items = logged_items(log)
    assert [(i.job_id, i.partition, i.wall) for i in items] == [
        ("porep-1000-7", 0, False), ("porep-1000-7", 1, False), ("porep-1000-8", None, False)]
    assert max_overlap(items)[0] == 3
    assert logged_totals(log) == {"porep-1000-7": [5123]}
    # on the engine's own clock: counted for overlaps, never placed against the client's
    assert fitted(items, [replace(_job("porep-1000-7", 0.0, 9e9), job="porep-0")])[0] == []
