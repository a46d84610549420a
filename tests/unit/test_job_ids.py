from __future__ import annotations

import pytest

from harness.drivers.base import plan_workload
from harness.drivers.job_ids import JobIdError, make_job_id
from harness.model.profile_file import load_profiles
from harness.model.workload import load_workload


def test_uuid_scheme_leaves_the_id_to_the_driver() -> None:
    # the driver makes a fresh UUID v4 as it sends (tests/host/test_driver_grpc.py sees them)
    assert make_job_id("uuid", proof_kind="WINDOW_POST_PARTITION", miner_id=1000,
                       sector_ids=[1]) is None


def test_curio_scheme_is_deterministic_and_collides_on_same_sectors() -> None:
    wp = make_job_id("curio", proof_kind="WINDOW_POST_PARTITION", miner_id=1000, sector_ids=[1, 2])
    assert wp == "wpost-1000-1"
    assert wp == make_job_id("curio", proof_kind="WINDOW_POST_PARTITION", miner_id=1000,
                             sector_ids=[1, 3])
    assert make_job_id("curio", proof_kind="POREP_SEAL_COMMIT", miner_id=1000,
                       sector_ids=[7]) == "porep-1000-7"


def test_fixed_scheme() -> None:
    assert make_job_id("fixed", proof_kind="WINDOW_POST_PARTITION", miner_id=1,
                       sector_ids=[]) == "proofdiff-fixed"


def test_errors() -> None:
    with pytest.raises(JobIdError, match="valid: uuid, curio, fixed"):
        make_job_id("serial", proof_kind="WINDOW_POST_PARTITION", miner_id=1, sector_ids=[1])
    with pytest.raises(JobIdError, match="at least one sector"):
        make_job_id("curio", proof_kind="WINDOW_POST_PARTITION", miner_id=1, sector_ids=[])


def test_the_workload_plan_uses_the_profiles_miner_for_curio_ids(workload_file) -> None:  # type: ignore[no-untyped-def]
    wl = load_workload(workload_file)
    ps = load_profiles("refprover", ["prod.miner_id=42"])
    specs = plan_workload(ps["prod"], wl)
    assert [(s.index, s.job, s.request_id) for s in specs] == [
        (0, "wpost-0", "wpost-42-1"), (1, "wpost-1", "wpost-42-1"), (2, "wpost-2", "wpost-42-1"),
        (3, "wpost-3", "wpost-42-1")]
    assert {s.request_id for s in plan_workload(load_profiles("refprover", ["bench.jobs=6"])["bench"], wl)} == {None}
    assert [s.job for s in plan_workload(load_profiles("refprover", ["bench.jobs=6"])["bench"], wl)] == [
        "wpost-0", "wpost-1", "wpost-2", "wpost-3", "wpost-0", "wpost-1"]
