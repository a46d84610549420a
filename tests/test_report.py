from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.profiles import load_profiles
from harness.records import JobStatus
from harness.report import SCHEMA_VERSION, build_summary, load_summary, side_by_side, write_report
from tests.conftest import REPO, job, run

PROFILES = REPO / "profiles" / "refprover.toml"
T0 = 1_700_000_000.0


def diverged_summary() -> dict:  # type: ignore[type-arg]
    ps = load_profiles(PROFILES, ["prod.env.REFPROVER_FAULTS=partition-race"])
    runs = [run("bench", [job(i, wall_ms=1000 + i) for i in range(4)]),
            run("prod", [job(i, rid="wpost-1000-1", wall_ms=600) for i in range(3)]
                + [job(3, JobStatus.FAILED, rid="wpost-1000-1", error="partition 1 already inserted")],
                bad={1: [True, False]})]
    return build_summary(run_id="20240101-000000-abcdef", profiles=ps, runs=runs,
                         image_tag="proofdiff/refprover:0.1.0-abc", image_digest="sha256:ff",
                         pytest_info={"exitstatus": 1, "passed": 1, "failed": 2},
                         created_unix_s=T0)


def test_summary_schema_and_verdict() -> None:
    s = diverged_summary()
    assert s["schema_version"] == SCHEMA_VERSION and s["created_unix_s"] == T0
    assert s["verdict"] == "diverged"
    assert s["verdict_line"] == "validity diverged on wpost-2k: bench=valid, prod=invalid"
    assert s["image"] == {"tag": "proofdiff/refprover:0.1.0-abc", "digest": "sha256:ff"}
    assert set(s["profiles"]) == {"bench", "prod"}
    assert s["profiles"]["prod"]["env"]["REFPROVER_FAULTS"] == "partition-race"
    assert s["profiles"]["prod"]["overrides"] == ["prod.env.REFPROVER_FAULTS=partition-race"]
    assert s["start_to_ready_ms"] == {"bench": 180.0, "prod": 180.0}
    (div,) = s["divergences"]
    assert div["suspects"][0]["path"] == "env.REFPROVER_FAULTS"
    assert [b["name"] for b in div["right"]["bad"]] == ["wpost-1", "wpost-3"]
    assert s["runs"][0]["jobs"][0]["proof"] == "00" * 384
    assert s["config_delta"][0]["left"] == "bench"
    json.dumps(s)  # JSON-ready throughout


def test_side_by_side_rows() -> None:
    rows = side_by_side(diverged_summary())
    bench, prod = rows
    assert (bench["outcome"], bench["proofs"], bench["valid"], bench["median_ms"]) == \
        ("valid", 4, 4, 1001.5)
    assert (prod["outcome"], prod["proofs"], prod["invalid"], prod["failed"]) == \
        ("invalid", 3, 1, 1)
    assert prod["start_to_ready_ms"] == 180.0


def test_write_report_files(tmp_path: Path) -> None:
    out = write_report(tmp_path, diverged_summary())
    assert out == tmp_path / "20240101-000000-abcdef"
    assert load_summary(out)["verdict"] == "diverged"
    html = (out / "index.html").read_text(encoding="utf-8")
    # divergences come before the side-by-side table and the job table
    assert html.index("Divergences") < html.index("Side by side") < html.index("Jobs")
    assert "env.REFPROVER_FAULTS: &lt;absent&gt; -&gt; &#39;partition-race&#39;" in html
    assert "partition 1 already inserted" in html
    assert not list(out.glob("*.tmp"))


def test_pass_and_error_verdicts(tmp_path: Path) -> None:
    ps = load_profiles(PROFILES)
    ok = build_summary(run_id="r1", profiles=ps, runs=[run("bench", [job(0)]), run("prod", [job(0)])])
    assert ok["verdict"] == "pass" and ok["verdict_line"].startswith("SAME: every proof verified")
    err = build_summary(run_id="r2", profiles={}, runs=[],
                        errors=["image 'x' is not present locally; build it with `make image`"])
    assert err["verdict"] == "error" and "not present locally" in err["verdict_line"]
    out = write_report(tmp_path, err)  # a report even with nothing but an error
    assert "not present locally" in (out / "index.html").read_text(encoding="utf-8")


def test_load_summary_rejects_other_schema(tmp_path: Path) -> None:
    (tmp_path / "summary.json").write_text('{"schema_version": 99}', encoding="utf-8")
    with pytest.raises(ValueError, match="schema_version 99"):
        load_summary(tmp_path)
