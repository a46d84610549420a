"""The bisection's units on the shipped bench -> prod delta: coupled items move together, and
applying every unit to bench gives prod's effective settings."""

from __future__ import annotations

from typing import Any

import msgspec

from proofdiff.bisect.bisection import BisectError, check_oracle
from proofdiff.bisect.units import apply_units, units_of
from proofdiff.core.profile_delta import profile_delta, profile_view
from proofdiff.model.profile_file import load_profiles

import pytest


def _pair() -> tuple:
    ps = load_profiles("refprover")
    img = "proofdiff/refprover:test"
    return (msgspec.structs.replace(ps["bench"], image=img),
            msgspec.structs.replace(ps["prod"], image=img))


def test_a_mount_moves_with_the_keys_that_name_its_path_and_a_port_with_its_listener() -> None:
    bench, prod = _pair()
    units = {u.label: u for u in units_of(profile_delta(bench, prod))}
    params = next(u for u in units.values() if "mounts.params" in u.paths)
    assert set(params.paths) == {"mounts.params", "config.srs.param_cache",
                                 "env.FIL_PROOFS_PARAMETER_CACHE"}
    status = next(u for u in units.values() if "ports.status" in u.paths)
    assert set(status.paths) == {"ports.status", "config.daemon.status_listen"}
    single = [u for u in units.values() if len(u.items) == 1]
    assert {"concurrency", "job_ids", "config.pipeline.enabled",
            "config.synthesis.partition_workers"} <= {u.paths[0] for u in single}


def test_every_unit_applied_to_bench_is_prod_and_none_is_bench() -> None:
    bench, prod = _pair()
    units = units_of(profile_delta(bench, prod))
    assert profile_view(apply_units(bench, units)) == profile_view(prod)
    assert profile_view(apply_units(bench, [])) == profile_view(bench)
    one = next(u for u in units if u.paths == ("config.pipeline.enabled",))
    mid = apply_units(bench, [one], name="probe")
    assert mid.effective_config()["pipeline"]["enabled"] is True and mid.concurrency == 1
    assert mid.overrides == ("config.pipeline.enabled: False -> True",)


def test_an_unknown_oracle_names_the_known_ones() -> None:
    assert check_oracle("validity/proofs") == "validity/proofs"
    with pytest.raises(BisectError, match="known: preflight") as err:
        check_oracle("valdity/proofs")
    assert "unknown suite 'valdity'" in err.value.cause and "validity" in err.value.fix
    with pytest.raises(BisectError, match="its oracles: ") as err:
        check_oracle("validity/prooofs")
    assert "proofs" in err.value.fix


def test_an_oracle_that_does_not_apply_to_a_probe_passes_it_and_one_that_ran_is_judged() -> None:
    from proofdiff.bisect.probe import judge, oracle_applies
    from proofdiff.model.oracle_records import OracleRecord
    from proofdiff.model.result import DifferentialResult
    from proofdiff.model.status import Outcome, Verdict

    bench, _prod = _pair()
    cli = msgspec.structs.replace(bench, driver="bench-cli")
    assert not oracle_applies("preflight/bench-cli", bench) and oracle_applies(
        "preflight/bench-cli", cli) and oracle_applies("validity", bench)
    rec = OracleRecord(suite="preflight", oracle="bench-cli", profile="probe",
                       workload="wpost-2k", outcome=Outcome.FAIL, message="rejected -n")
    res = DifferentialResult(run_id="r", created_unix_s=0.0, verdict=Verdict.FAILED,
                             verdict_line="", exit_code=2, records=(rec,))
    assert judge(res, "probe", "preflight/bench-cli", True)[0] == "FAIL"
    assert judge(res, "probe", "preflight/bench-cli", False)[0] == "PASS"
    broken = msgspec.structs.replace(res, records=(), errors=("the engine did not answer",))
    assert judge(broken, "probe", "preflight/bench-cli", False)[0] == "UNRESOLVED"


def test_an_oracle_that_never_runs_on_the_bad_profile_is_an_error_not_bad_passes(
        tmp_path: Any) -> None:
    from proofdiff.bisect.bisection import bisect_profiles
    from proofdiff.model.run_options import RunOptions

    bench, prod = _pair()  # prod talks gRPC: the bench command-line check never runs there
    res = bisect_profiles(RunOptions(report_dir=str(tmp_path)), oracle="preflight/bench-cli",
                          resolved={"bench": bench, "prod": prod}, write_report=False)
    assert res.status == "error" and res.exit_code == 3 and not res.probes, res.line
    assert "does not apply to the bad profile 'prod'" in res.line, res.line


def test_the_cuzk_host_delta_applies_unit_by_unit_with_the_bench_client_left_out() -> None:
    """cuzk-host's bench is bench-cli and prod grpc: the bench client's settings are absent
    from prod's view (they have no effect there); a probe that takes them over gets the
    profile's defaults, not the text '<absent>' (what crashed `proofdiff bisect --profiles
    cuzk-host` before its first probe)."""
    ps = load_profiles("cuzk-host")
    bench, prod = ps["bench"], ps["prod"]
    units = units_of(profile_delta(bench, prod))
    assert profile_view(apply_units(bench, units)) == profile_view(prod)
    for u in units:
        apply_units(bench, [u], name="probe")  # each probe is a valid profile
    client = [u for u in units if {"bench_tool", "bench_args"} & set(u.paths)]
    assert client and all(apply_units(bench, [u]).bench_args == () for u in client)
