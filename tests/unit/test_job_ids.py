from __future__ import annotations

import pytest

from proofdiff.drivers.protocol import plan_workload
from proofdiff.drivers.job_ids import JobIdError, make_job_id, partition_request_id
from proofdiff.model.profile_file import load_profiles
from proofdiff.model.workload import load_workload


def test_uuid_scheme_leaves_the_id_to_the_driver() -> None:
    # the driver makes a fresh UUID v4 as it sends (tests/host/test_driver_grpc.py sees them)
    assert make_job_id("uuid", proof_kind="WINDOW_POST_PARTITION", miner_id=1000,
                       sector_ids=[1]) is None


def test_curio_scheme_is_curios_own_format() -> None:
    # curio e0294b0f lib/ffi/cuzk_funcs.go: fmt.Sprintf("wdpost-%d-%d-%d", minerID,
    # partitionIdx, randomness[:8]) and fmt.Sprintf("porep-%d-%d", miner, sector)
    rand = bytes(range(200, 232))
    wp = make_job_id("curio", proof_kind="WINDOW_POST_PARTITION", miner_id=1000,
                     sector_ids=[1, 2], randomness=rand)
    assert wp == "wdpost-1000-0-[200 201 202 203 204 205 206 207]"
    # the same partition and randomness collide (a retry); other randomness does not
    assert wp == make_job_id("curio", proof_kind="WINDOW_POST_PARTITION", miner_id=1000,
                             sector_ids=[3], randomness=rand)
    assert wp != make_job_id("curio", proof_kind="WINDOW_POST_PARTITION", miner_id=1000,
                             sector_ids=[1, 2], randomness=bytes(32))
    assert make_job_id("curio", proof_kind="POREP_SEAL_COMMIT", miner_id=1000,
                       sector_ids=[7]) == "porep-1000-7"  # a retried sector reuses its id


def test_one_request_per_partition_gets_that_partitions_id() -> None:
    assert partition_request_id("wdpost-1000-0-[1 2 3 4 5 6 7 8]", 1) == \
        "wdpost-1000-1-[1 2 3 4 5 6 7 8]"
    assert partition_request_id("6f1c-uuid", 1) == "6f1c-uuid-p1"
    assert partition_request_id("proofdiff-fixed", 0) == "proofdiff-fixed-p0"


def test_fixed_scheme() -> None:
    assert make_job_id("fixed", proof_kind="WINDOW_POST_PARTITION", miner_id=1,
                       sector_ids=[]) == "proofdiff-fixed"


def test_errors() -> None:
    with pytest.raises(JobIdError, match="unknown job id scheme 'serial'") as err:
        make_job_id("serial", proof_kind="WINDOW_POST_PARTITION", miner_id=1, sector_ids=[1])
    assert err.value.fix.endswith("valid scheme: uuid, curio, fixed")
    with pytest.raises(JobIdError, match="at least one sector") as err:
        make_job_id("curio", proof_kind="WINDOW_POST_PARTITION", miner_id=1, sector_ids=[])
    assert "job_ids to 'uuid'" in err.value.fix


def test_the_workload_plan_uses_the_profiles_miner_for_curio_ids(workload_file) -> None:  # type: ignore[no-untyped-def]
    wl = load_workload(workload_file)
    ps = load_profiles("refprover", ["prod.miner_id=42"])
    specs = plan_workload(ps["prod"], wl)
    assert [(s.index, s.job) for s in specs] == [
        (0, "wpost-0"), (1, "wpost-1"), (2, "wpost-2"), (3, "wpost-3")]
    ids = [s.request_id or "" for s in specs]
    assert all(i.startswith("wdpost-42-0-[") for i in ids) and len(set(ids)) == 4, ids
    assert {s.request_id for s in plan_workload(load_profiles("refprover", ["bench.jobs=6"])["bench"], wl)} == {None}
    assert [s.job for s in plan_workload(load_profiles("refprover", ["bench.jobs=6"])["bench"], wl)] == [
        "wpost-0", "wpost-1", "wpost-2", "wpost-3", "wpost-0", "wpost-1"]
