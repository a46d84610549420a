from __future__ import annotations

import re
from pathlib import Path

import pytest

from proofdiff.drivers.deadlines import deadlines_for
from proofdiff.model.profile_file import (PROFILE_KEYS, ProfileError, load_profiles, parse_override,
                              select_profiles)

PROFILES = "refprover"


def write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "p.toml"
    p.write_text(text, encoding="utf-8")
    return p


def test_repo_profiles_differ_like_real_ones() -> None:
    ps = load_profiles(PROFILES)
    assert list(ps) == ["bench", "prod"]
    bench, prod = ps["bench"], ps["prod"]
    assert (bench.concurrency, bench.job_ids) == (1, "uuid")
    assert (prod.concurrency, prod.job_ids) == (4, "curio")
    assert bench.effective_config()["pipeline"]["enabled"] is False
    assert prod.effective_config()["pipeline"]["enabled"] is True
    assert bench.effective_config()["synthesis"]["partition_workers"] == 1
    assert prod.effective_config()["synthesis"]["partition_workers"] == 4
    assert prod.param_read_path() == prod.param_mount_path() == "/var/tmp/filecoin-proof-parameters"
    assert bench.param_mount_path() == "/data/zk/params"
    assert "status_listen" in prod.effective_config()["daemon"]
    assert bench.launch_problems() == [] and prod.launch_problems() == []
    assert bench.image is None  # unset: the plan pins the reference image the build made


def test_unknown_key_names_key_file_profile_and_valid_keys(tmp_path: Path) -> None:
    p = write(tmp_path, '[defaults]\nimage="i"\nworkload="w"\n[profiles.bench]\nconcurency = 2\n')
    with pytest.raises(ProfileError) as ei:
        load_profiles(p)
    cause = ei.value.cause
    assert "'concurency'" in cause and str(p) in cause and "[profiles.bench]" in cause
    for key in PROFILE_KEYS:
        assert key in ei.value.fix


def test_malformed_toml_gives_file_and_line(tmp_path: Path) -> None:
    p = write(tmp_path, '[defaults]\nimage = "i"\n[profiles.bench\nconcurrency = 1\n')
    with pytest.raises(ProfileError, match=rf"^{p}:3: malformed TOML"):
        load_profiles(p)


def test_missing_file_says_how_to_fix(tmp_path: Path) -> None:
    with pytest.raises(ProfileError, match="does not exist") as err:
        load_profiles(tmp_path / "nope.toml")
    assert "--profiles" in err.value.fix


def test_bad_value_is_named(tmp_path: Path) -> None:
    p = write(tmp_path, '[defaults]\nimage="i"\nworkload="w"\n[profiles.a]\njob_ids = "sequential"\n')
    with pytest.raises(ProfileError, match=r"'job_ids' must be one of \('uuid', 'curio', 'fixed'\)"):
        load_profiles(p)


def test_the_stall_floor_is_a_profile_key_and_reaches_its_flows_deadlines() -> None:
    ps = load_profiles(PROFILES, ["prod.stall_s=5"])
    assert (deadlines_for(ps["prod"]).stall_s, deadlines_for(ps["bench"]).stall_s) == (5.0, 15.0)
    for bad in ("0", "-1", '"15"', "true"):
        with pytest.raises(ProfileError, match=r"'stall_s' must be a positive number of seconds"):
            load_profiles(PROFILES, [f"prod.stall_s={bad}"])


def test_override_parsing_literals_and_strings() -> None:
    o = parse_override("prod.env.REFPROVER_FAULTS=partition-race")
    assert (o.profile, o.path, o.value) == ("prod", ("env", "REFPROVER_FAULTS"), "partition-race")
    assert parse_override("prod.concurrency=8").value == 8
    assert parse_override("bench.config.pipeline.enabled=true").value is True
    assert parse_override('prod.command=["-l", "0.0.0.0:9820"]').value == ["-l", "0.0.0.0:9820"]
    for bad in ("prod", "prod=1", "=x", "prod..env=1"):
        with pytest.raises(ProfileError, match="PROFILE.KEY"):
            parse_override(bad)


def test_overrides_apply_to_one_profile_only() -> None:
    ps = load_profiles(PROFILES, ["prod.env.REFPROVER_FAULTS=partition-race",
                                  "prod.config.synthesis.partition_workers=8",
                                  "prod.config.newtable.key=1"])
    assert ps["prod"].env["REFPROVER_FAULTS"] == "partition-race"
    assert "REFPROVER_FAULTS" not in ps["bench"].env
    assert ps["prod"].effective_config()["synthesis"]["partition_workers"] == 8
    assert ps["prod"].config["newtable"] == {"key": 1}
    assert ps["prod"].overrides[0] == "prod.env.REFPROVER_FAULTS=partition-race"


def test_override_unknown_profile_lists_known() -> None:
    with pytest.raises(ProfileError, match="unknown profile 'staging'") as err:
        load_profiles(PROFILES, ["staging.concurrency=2"])
    assert re.search("known profiles .*: bench, prod", err.value.fix)


def test_override_unknown_key_is_rejected() -> None:
    with pytest.raises(ProfileError, match="unknown key 'concurrencyy'"):
        load_profiles(PROFILES, ["prod.concurrencyy=2"])


def test_select_profiles() -> None:
    ps = load_profiles(PROFILES)
    assert list(select_profiles(ps, ["prod", "bench"])) == ["prod", "bench"]
    assert list(select_profiles(ps, [])) == ["bench", "prod"]
    with pytest.raises(ProfileError, match="unknown profile 'nightly'") as err:
        select_profiles(ps, ["nightly"])
    assert err.value.fix.endswith("known profiles: bench, prod")


def test_preflight_catches_param_path_mismatch() -> None:
    ps = load_profiles(PROFILES, ["prod.config.srs.param_cache=/data/zk/params"])
    problems = ps["prod"].launch_problems()
    assert len(problems) == 1
    cause, fix = problems[0]
    assert "mounted at '/var/tmp/filecoin-proof-parameters'" in cause
    assert "srs.param_cache='/data/zk/params'" in cause
    assert "config.srs.param_cache = '/var/tmp/filecoin-proof-parameters'" in fix


def test_preflight_catches_port_mismatch() -> None:
    ps = load_profiles(PROFILES, ['bench.config.daemon.listen="0.0.0.0:7000"'])
    (cause, fix), = ps["bench"].launch_problems()
    assert "ports.grpc=9820" in cause and fix == "make them the same port"


def test_shipped_profile_sets_are_named_by_their_stem() -> None:
    from proofdiff.model.profile_file import profile_file, shipped_profile_sets

    assert set(shipped_profile_sets()) == {"refprover", "cuzk", "cuzk-host"}
    assert profile_file(None).name == "refprover.toml"
    assert profile_file("cuzk").name == "cuzk.toml"
    with pytest.raises(ProfileError, match="profile file 'nightly' does not exist") as err:
        profile_file("nightly")
    assert re.search("shipped profile set .cuzk, cuzk-host, refprover.", err.value.fix)


def test_written_config_is_the_profiles_own_keys_and_the_effective_one_the_daemons_defaults(
        ) -> None:
    cuzk = load_profiles("cuzk-host")["bench"]
    written = cuzk.written_config()
    # only what the profile set, plus the listen address and the param path made explicit
    assert written["daemon"] == {"listen": "0.0.0.0:9820"}
    assert written["srs"] == {"param_cache": "/data/zk/params"}
    assert "synthesis" not in written and "self_check" not in written["pipeline"]
    # an unset key means cuzk's default there, not refprover's
    assert cuzk.effective_config()["pipeline"]["max_parallel_synthesis"] == 18
    ref = load_profiles("refprover")["bench"]
    assert ref.effective_config()["pipeline"]["self_check"] is False
    with pytest.raises(ProfileError, match="key 'daemon' must be one of"):
        load_profiles("refprover", ["bench.daemon=lotus"])
