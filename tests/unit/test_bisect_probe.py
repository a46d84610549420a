"""How a bisection probe is classified (proofdiff.bisect.probe.judge), from constructed
records: FAIL only when it fails the way the bad profile fails (same check, same signature);
another failure, a partial, broken or interrupted run is "?" (UNRESOLVED); PASS needs the
checks of the bad profile's failure to have run and passed."""

from __future__ import annotations

from collections.abc import Sequence

from proofdiff.bisect.dd import FAIL, PASS, UNRESOLVED
from proofdiff.bisect.probe import failures_of, judge
from proofdiff.model.oracle_records import OracleRecord
from proofdiff.model.result import DifferentialResult
from proofdiff.model.status import Outcome, Verdict

WL = "wpost-2k"
INVALID = "validity of profile 'probe' on wpost-2k: {v}/4 valid, 4 completed: INVALID"


def rec(check: str, outcome: Outcome, message: str = "ok") -> OracleRecord:
    suite, oracle = check.split("/")
    return OracleRecord(suite=suite, oracle=oracle, profile="probe", workload=WL,
                        outcome=outcome, message=message)


def result(records: Sequence[OracleRecord], *, suites: Sequence[str] = ("preflight", "validity"),
           verdict: Verdict = Verdict.FAILED, errors: Sequence[str] = ()) -> DifferentialResult:
    return DifferentialResult(run_id="probe-01", created_unix_s=0.0, verdict=verdict,
                              verdict_line="", exit_code=verdict.exit_code, workloads=(WL,),
                              suites=tuple(suites), records=tuple(records),
                              errors=tuple(errors))


#: The bad profile's failure: validity/proofs INVALID with no valid proof.
BAD = failures_of([rec("validity/proofs", Outcome.FAIL, INVALID.format(v=0) + "\n  wpost-0 ...")])
CLEAN = [rec("preflight/params", Outcome.PASS), rec("validity/jobs", Outcome.PASS)]


def test_the_same_check_with_the_same_signature_is_fail() -> None:
    got = judge(result([*CLEAN, rec("validity/proofs", Outcome.FAIL, INVALID.format(v=2))]),
                "probe", "validity", expect=BAD)
    assert got[0] == FAIL and got[1] == ("validity/proofs",), got


def test_another_check_failing_is_unresolved_not_fail() -> None:
    got = judge(result([rec("preflight/params", Outcome.PASS),
                        rec("validity/proofs", Outcome.PASS),
                        rec("validity/jobs", Outcome.FAIL, "profile 'probe': 2 of 4 job(s) "
                            "did not complete")]), "probe", "validity", expect=BAD)
    assert got[0] == UNRESOLVED and got[1] == ("validity/jobs",), got
    assert "another way" in got[2]


def test_the_same_check_with_another_signature_is_unresolved() -> None:
    other = "validity of profile 'probe' on wpost-2k: proof is 100 bytes, expected 384"
    got = judge(result([*CLEAN, rec("validity/proofs", Outcome.FAIL, other)]), "probe",
                "validity/proofs", expect=BAD)
    assert got[0] == UNRESOLVED, got


def test_an_interrupted_probe_is_unresolved_even_with_the_failure_in_it() -> None:
    got = judge(result([*CLEAN, rec("validity/proofs", Outcome.FAIL, INVALID.format(v=0))],
                       verdict=Verdict.INTERRUPTED), "probe", "validity/proofs")
    assert got[0] == UNRESOLVED and "interrupted" in got[2], got


def test_a_partial_probe_is_unresolved() -> None:
    # preflight was selected but left no record: the run did not get through
    got = judge(result([rec("validity/proofs", Outcome.FAIL, INVALID.format(v=0))]), "probe",
                "validity/proofs")
    assert got[0] == UNRESOLVED and "preflight on probe/wpost-2k" in got[2], got


def test_a_run_level_error_is_unresolved_even_with_the_failure_in_it() -> None:
    got = judge(result([*CLEAN, rec("validity/proofs", Outcome.FAIL, INVALID.format(v=0))],
                       errors=["the verifier image is gone"]), "probe", "validity/proofs")
    assert got[0] == UNRESOLVED and "verifier image" in got[2], got


def test_a_pass_needs_the_bad_profiles_failing_check_to_have_passed() -> None:
    # nothing failed, but validity/proofs, the check the bad profile fails, was skipped
    got = judge(result([*CLEAN, rec("validity/proofs", Outcome.SKIPPED, "preflight blocked it")],
                       verdict=Verdict.INCOMPLETE), "probe", None, expect=BAD)
    assert got[0] == UNRESOLVED and "validity/proofs did not pass or fail" in got[2], got


def test_a_pass_is_every_check_of_the_oracle_passing() -> None:
    got = judge(result([*CLEAN, rec("validity/proofs", Outcome.PASS)], verdict=Verdict.SAME),
                "probe", "validity", expect=BAD)
    assert got[0] == PASS, got
