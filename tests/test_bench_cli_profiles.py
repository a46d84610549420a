"""Profile keys of the bench-cli driver, the ``*`` override, ``gpus = 'none'``, the config
delta of bench-cli settings, and how validity counts proofs a bench tool could not hand back."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from harness.config_delta import profile_delta
from harness.oracles import validity
from harness.profiles import PROFILE_KEYS, ProfileError, load_profiles
from harness.records import JobStatus
from tests.conftest import REPO, job, run

PROFILES = REPO / "profiles" / "refprover.toml"


def write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "p.toml"
    p.write_text(text, encoding="utf-8")
    return p


def test_bench_cli_keys_are_documented_and_parsed() -> None:
    assert {"bench_tool", "bench_args"} <= set(PROFILE_KEYS)
    assert "bench-cli" in PROFILE_KEYS["driver"]
    ps = load_profiles(PROFILES, ['bench.driver="bench-cli"',
                                  'bench.bench_args=["--timeout", "900"]'])
    bench = ps["bench"]
    assert (bench.driver, bench.bench_tool, bench.bench_args) == (
        "bench-cli", "bench", ("--timeout", "900"))


def test_bench_cli_needs_uuid_ids_because_the_tool_picks_them() -> None:
    with pytest.raises(ProfileError, match=r"job_ids' must be 'uuid' with driver 'bench-cli'"):
        load_profiles(PROFILES, ['prod.driver="bench-cli"'])  # prod has curio ids


@pytest.mark.parametrize("override, message", [
    ('bench.bench_args="-n 2"', "'bench_args' must be a list of strings"),
    ('bench.bench_tool=""', "'bench_tool' must be a non-empty string"),
    ('bench.driver="bench"', r"'driver' must be one of \('grpc', 'bench-cli'\)"),
])
def test_bad_bench_values_name_the_key(override: str, message: str) -> None:
    with pytest.raises(ProfileError, match=message):
        load_profiles(PROFILES, [override])


def test_star_override_applies_to_every_profile_in_order() -> None:
    ps = load_profiles(PROFILES, ["*.image=proofdiff/refprover:x", "prod.image=other:y"])
    assert ps["bench"].image == "proofdiff/refprover:x" and ps["prod"].image == "other:y"
    assert ps["bench"].overrides == ("*.image=proofdiff/refprover:x",)


@pytest.mark.parametrize("value", ["none", "0"])
def test_gpus_none_or_zero_means_no_request(tmp_path: Path, value: str) -> None:
    p = write(tmp_path, '[defaults]\nimage="i"\nworkload="w"\ngpus="all"\n[profiles.a]\n')
    assert load_profiles(p)["a"].gpus == "all"
    assert load_profiles(p, [f"a.gpus={value}"])["a"].gpus is None


def test_delta_shows_bench_settings_only_where_the_tool_runs() -> None:
    ps = load_profiles(PROFILES, ['bench.driver="bench-cli"', 'bench.bench_args=["-j", "1"]'])
    paths = {i.path: (i.left, i.right) for i in profile_delta(ps["bench"], ps["prod"]).items}
    assert paths["driver"] == ("bench-cli", "grpc")
    assert paths["bench_args"][0] == ["-j", "1"] and "bench_tool" in paths
    plain = load_profiles(PROFILES)
    assert not any(i.path.startswith("bench_")
                   for i in profile_delta(plain["bench"], plain["prod"]).items)


def test_unverifiable_proofs_are_counted_not_called_invalid() -> None:
    why = "the bench tool has no --save-proofs flag"
    jobs = [dataclasses.replace(job(i), proof=b"", unverifiable=why) for i in range(2)]
    jobs.append(job(2, JobStatus.FAILED, error="C1 parse failed: bad envelope"))
    o = validity(run("bench", jobs))
    assert o.outcome == "failed" and o.completed == 2 and o.valid == 0
    assert [b.kind for b in o.bad] == ["failed"] and len(o.unverified) == 2
    assert "2 completed proof(s) not verified: the bench tool has no --save-proofs" in o.explain()
    doc = o.to_json()
    assert doc["unverified"] == 2 and doc["unverified_reasons"] == [why]
    # round trip through the run cache keeps the reason
    from harness.records import JobResult
    assert JobResult.from_json(jobs[0].to_json()).unverifiable == why


def test_an_empty_proof_without_a_reason_is_still_invalid() -> None:
    o = validity(run("prod", [dataclasses.replace(job(0), proof=b"")]))
    assert o.outcome == "invalid" and "0 bytes" in o.bad[0].reason


def test_report_rows_show_unverified_proofs_next_to_valid_ones() -> None:
    from harness.report import build_summary, side_by_side

    ps = load_profiles(PROFILES, ['bench.driver="bench-cli"'])
    unverified = [dataclasses.replace(job(i), proof=b"", request_id="(bench tool uuid)",
                                      unverifiable="no --save-proofs") for i in range(4)]
    s = build_summary(run_id="r", profiles=ps, runs=[run("bench", unverified),
                                                     run("prod", [job(i) for i in range(4)])])
    rows = {r["profile"]: r for r in side_by_side(s)}
    assert (rows["bench"]["valid"], rows["bench"]["unverified"]) == (0, 4)
    assert (rows["prod"]["valid"], rows["prod"]["unverified"]) == (4, 0)
    assert s["verdict"] == "pass", "unverified is not a divergence from verified-valid"
