"""Profile keys of the bench-cli driver, the ``*`` override, ``gpus = 'none'``, the config
delta of bench-cli settings, and how validity counts proofs a bench tool could not hand back."""

from __future__ import annotations

from pathlib import Path

import pytest
from msgspec.structs import replace

from proofdiff.core.profile_delta import profile_delta
from proofdiff.core.differential import assemble
from proofdiff.drivers.bench_inputs import starts
from proofdiff.model.profile import PROFILE_KEYS
from proofdiff.model.profile_file import ProfileError, load_profiles
from proofdiff.model.status import JobStatus, Outcome, Verdict
from proofdiff.oracles.validity import judge_run
from proofdiff.report.table_rows import side_by_side
from tests.conftest import job, recorder, run

PROFILES = "refprover"


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


def _validity(r):  # type: ignore[no-untyped-def]
    rec = recorder("validity")
    judge_run(rec, r)
    return {x.oracle: x for x in rec.records}


def test_unverifiable_proofs_are_counted_and_never_called_valid() -> None:
    why = "the bench tool has no --save-proofs flag"
    jobs = [replace(job(i, parts=None), proof=b"", unverifiable=why) for i in range(2)]
    jobs.append(job(2, JobStatus.FAILED, error="C1 parse failed: bad envelope"))
    got = _validity(run("bench", jobs))
    assert got["proofs"].outcome is Outcome.SKIPPED  # unverifiable: never a pass, not an error
    assert got["proofs"].counts.unverified == 2
    assert got["proofs"].counts.unverified_reasons == (why,)
    assert "2 completed proof(s) not verified: the bench tool has no --save-proofs" in \
        got["proofs"].message
    assert got["jobs"].outcome is Outcome.FAIL


def test_a_completed_proof_the_tool_did_not_hand_back_is_invalid() -> None:
    missing = replace(job(0, parts=None), proof=b"",
                      error="the bench tool reported COMPLETED but wrote no 1.proof under --save-proofs")
    got = _validity(run("bench", [missing]))["proofs"]
    assert got.outcome is Outcome.FAIL
    assert got.evidence["bad"][0]["reason"] == (
        "proof is 0 bytes, expected 384 (2 partitions x 192): the bench tool reported COMPLETED "
        "but wrote no 1.proof under --save-proofs")


def test_report_rows_show_unverified_proofs_next_to_valid_ones() -> None:
    ps = load_profiles(PROFILES, ['bench.driver="bench-cli"'])
    unverified = [replace(job(i, parts=None), proof=b"", request_id="(bench tool uuid)",
                          unverifiable="no --save-proofs") for i in range(4)]
    runs = [run("bench", unverified), run("prod", [job(i) for i in range(4)])]
    rec = recorder("validity")
    for r in runs:
        judge_run(rec, r)
    res = assemble(run_id="r", profiles=ps, records=rec.records, runs=runs)
    rows = {r["profile"]: r for r in side_by_side(res)}
    assert (rows["bench"]["valid"], rows["bench"]["unverified"]) == (0, 4)
    assert (rows["prod"]["valid"], rows["prod"]["unverified"]) == (4, 0)
    # bench's client hands out no proof: unverifiable, covered by prod's verified proofs, and
    # named in the verdict's line (the other checks decide the run)
    assert res.verdict is Verdict.SAME and not res.divergences
    assert "UNVERIFIABLE: validity/proofs on bench/wpost-2k: no --save-proofs" in res.verdict_line


def test_bench_tool_start_times_follow_its_workers() -> None:
    assert starts([1000.0, 1000.0, 1000.0], 1) == [0.0, 1000.0, 2000.0]
    assert starts([1000.0, 400.0, 300.0, 500.0], 2) == [0.0, 0.0, 400.0, 700.0]


def test_a_tool_without_save_proofs_hands_out_proofs_through_single_where_it_prints_them() -> None:
    """cuzk-bench has no flag to write proofs; its ``single`` prints a proof whole up to 256
    bytes: a 2 KiB PoRep (192 bytes) goes through ``single`` and is verified, a 32 GiB PoRep
    (10 partitions, 1920 bytes) through ``batch`` (unverifiable); refprover's bench saves its
    proofs, so it keeps ``batch``."""
    from proofdiff.drivers.bench_cli import BenchCliDriver
    from proofdiff.model.workload import POREP, Sector, Shape, WorkloadJob

    cuzk = load_profiles("cuzk", [])["bench"]
    driver = BenchCliDriver(None, cuzk)  # type: ignore[arg-type]  # command lines need no runner
    cuzk_flags = frozenset({"--c1", "--vanilla", "--count", "--concurrency"})

    def porep(partitions: int, size: int) -> WorkloadJob:
        return WorkloadJob(name="porep-0", miner_id=1000, sectors=(Sector(1, "00" * 32),),
                           shape=Shape(POREP, size, 8, "1.1.0", partitions), c1=b"{}")
    assert driver.single_runs(porep(1, 2048), cuzk_flags) == [None]
    argv = driver.command_line(porep(1, 2048), "porep", 1, 1, "http://d:9820", cuzk_flags,
                               single=True)
    assert argv[2:4] == ["single", "-t"] and "-c" not in argv and "--partition" not in argv
    assert driver.single_runs(porep(10, 32 << 30), cuzk_flags) is None
    assert driver.single_runs(porep(1, 2048), cuzk_flags | {"--save-proofs"}) is None
