"""The catch matrix's cells and row verdicts on results built from records (no Docker)."""

from __future__ import annotations

from proofdiff.cli.cmd_catch_matrix import CATALOG, cells_of, judge_row, unjudged_of
from proofdiff.core.differential import assemble
from proofdiff.model.oracle_records import OracleRecord
from proofdiff.model.status import Outcome


def _rec(suite: str, oracle: str, profile: str, outcome: Outcome) -> OracleRecord:
    return OracleRecord(suite=suite, oracle=oracle, profile=profile, workload="wpost-2k",
                        outcome=outcome)


def test_cells_are_the_failed_records_by_suite_and_rows_are_judged() -> None:
    res = assemble(run_id="r", profiles={}, runs=[], records=[
        _rec("validity", "proofs", "bench", Outcome.PASS),
        _rec("validity", "proofs", "prod", Outcome.FAIL),
        _rec("isolation", "distinct-inputs", "prod", Outcome.FAIL),
        _rec("timing", "aa", "bench", Outcome.PASS),
        _rec("warmup", "first-proof", "prod", Outcome.ERROR)])
    cells = cells_of(res)
    assert cells == {"validity": [{"oracle": "proofs", "profile": "prod"}],
                     "isolation": [{"oracle": "distinct-inputs", "profile": "prod"}],
                     "warmup": [{"oracle": "first-proof", "profile": "prod", "outcome": "error"}]}
    case = {c.name: c for c in CATALOG}
    assert judge_row(case["shared-witness"], cells, baseline="bench", faulty="prod") == (
        True, "caught by isolation/distinct-inputs")
    assert judge_row(case["serialize-pipeline"], cells, baseline="bench", faulty="prod") == (
        False, "MISSED by timing/concurrency")
    ok, why = judge_row(case["clean"], cells, baseline="bench", faulty="prod")
    assert not ok and why.startswith("FALSE ALARM: validity/proofs [prod]")
    cells["preflight"] = [{"oracle": "params", "profile": "bench"}]
    assert judge_row(case["shared-witness"], cells, baseline="bench", faulty="prod") == (
        False, "caught, but the baseline failed too: preflight/params")


def test_run_level_errors_are_a_column_of_their_own() -> None:
    res = assemble(run_id="r", profiles={}, runs=[], records=[],
                   errors=["image 'x' is not present locally; build it\nmore"])
    assert cells_of(res) == {"errors": [{"oracle": "image 'x' is not present locally; build it",
                                         "profile": "-"}]}


def test_the_clean_row_is_not_ok_when_a_check_judged_nothing() -> None:
    clean = CATALOG[0]
    res = assemble(run_id="r", profiles={}, runs=[], records=[
        _rec("validity", "proofs", "bench", Outcome.PASS),
        _rec("behaviour", "in-flight", "prod", Outcome.SKIPPED),
        _rec("timing", "aa", "bench", Outcome.INCONCLUSIVE)])
    assert cells_of(res) == {}
    assert judge_row(clean, cells_of(res), baseline="bench", faulty="prod",
                     unjudged=unjudged_of(res)) == (
        False, "NOT JUDGED: behaviour/in-flight [prod] skipped, timing/aa [bench] inconclusive")


def test_an_error_is_a_catch_only_in_the_oracle_meant_for_the_fault() -> None:
    res = assemble(run_id="r", profiles={}, runs=[], records=[
        _rec("isolation", "hang", "prod", Outcome.ERROR),
        _rec("warmup", "first-proof", "prod", Outcome.ERROR)])
    case = {c.name: c for c in CATALOG}
    cells = cells_of(res)
    assert judge_row(case["queue-deadlock"], cells, baseline="bench", faulty="prod") == (
        True, "caught by isolation/hang (error: it could not judge)")
    # the same ERROR on warmup is not read as warmup catching anything
    assert {"oracle": "first-proof", "profile": "prod"} not in cells["warmup"]
