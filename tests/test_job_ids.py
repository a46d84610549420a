from __future__ import annotations

import uuid

import pytest

from harness.job_ids import FIXED_ID, JobIdError, make_job_id


def test_uuid_scheme_is_fresh_uuid4() -> None:
    a = make_job_id("uuid", proof_kind="WINDOW_POST_PARTITION", miner_id=1000, sector_ids=[1])
    b = make_job_id("uuid", proof_kind="WINDOW_POST_PARTITION", miner_id=1000, sector_ids=[1])
    assert a != b and uuid.UUID(a).version == 4


def test_curio_scheme_is_deterministic_and_collides_on_same_sectors() -> None:
    wp = make_job_id("curio", proof_kind="WINDOW_POST_PARTITION", miner_id=1000, sector_ids=[1, 2])
    assert wp == "wpost-1000-1"
    assert wp == make_job_id("curio", proof_kind="WINDOW_POST_PARTITION", miner_id=1000,
                             sector_ids=[1, 3])
    assert make_job_id("curio", proof_kind="POREP_SEAL_COMMIT", miner_id=1000,
                       sector_ids=[7]) == "porep-1000-7"


def test_fixed_scheme() -> None:
    assert make_job_id("fixed", proof_kind="WINDOW_POST_PARTITION", miner_id=1,
                       sector_ids=[]) == FIXED_ID


def test_errors() -> None:
    with pytest.raises(JobIdError, match="valid: uuid, curio, fixed"):
        make_job_id("serial", proof_kind="WINDOW_POST_PARTITION", miner_id=1, sector_ids=[1])
    with pytest.raises(JobIdError, match="at least one sector"):
        make_job_id("curio", proof_kind="WINDOW_POST_PARTITION", miner_id=1, sector_ids=[])
