"""Divergences, suspects and the verdict, from records only (proofdiff.core.verdict/suspects):
never SAME on a skipped check, a missing outcome or an empty run."""

from __future__ import annotations

import msgspec

from proofdiff.core.profile_delta import profile_delta
from proofdiff.core.differential import assemble
from proofdiff.core.suspects import rank
from proofdiff.core.verdict import divergences, missing_cells, uncompared, verdict
from proofdiff.model.oracle_records import OracleRecord
from proofdiff.model.profile_file import load_profiles
from proofdiff.model.status import Comparison, Outcome, Verdict
from proofdiff.model.timing_verdict import SampleSummary, TimingVerdict


def rec(suite: str, oracle: str, profile: str, outcome: Outcome, message: str = "m",
        names: tuple[str, ...] = ()) -> OracleRecord:
    return OracleRecord(suite=suite, oracle=oracle, profile=profile, workload="wpost-2k",
                        outcome=outcome, message=message, names=names)


P, F, E, S, I = Outcome.PASS, Outcome.FAIL, Outcome.ERROR, Outcome.SKIPPED, Outcome.INCONCLUSIVE


def _verdict(records, missing=()):  # type: ignore[no-untyped-def]
    return verdict(records, divergences(records, "bench", {}), [], list(missing), [])


def test_a_failure_on_prod_only_is_a_divergence() -> None:
    recs = [rec("validity", "proofs", "bench", P), rec("validity", "proofs", "prod", F)]
    (d,) = divergences(recs, "bench", {})
    assert d.headline == "validity/proofs diverged on wpost-2k: bench=pass, prod=fail"
    assert _verdict(recs)[0] is Verdict.DIVERGED


def test_a_comparison_oracle_without_a_baseline_record_diverges() -> None:
    recs = [rec("timing", "concurrency", "prod", F)]
    (d,) = divergences(recs, "bench", {})
    assert d.baseline_outcome is None and "bench=n/a, prod=fail" in d.headline


def test_both_failing_is_failed_not_diverged_and_a_skipped_baseline_cannot_be_compared() -> None:
    both = [rec("preflight", "params", "bench", F), rec("preflight", "params", "prod", F)]
    assert divergences(both, "bench", {}) == [] and _verdict(both)[0] is Verdict.FAILED
    skipped = [rec("isolation", "hang", "bench", S), rec("isolation", "hang", "prod", F)]
    assert divergences(skipped, "bench", {}) == []


def test_skipped_records_and_missing_cells_are_never_same() -> None:
    # prod blocked by a failed preflight, only --suite isolation selected: bench passes alone
    recs = [rec("isolation", "hang", "bench", P),
            rec("isolation", "hang", "prod", S, "preflight of profile 'prod' failed (params)")]
    v, line = _verdict(recs)
    assert v is Verdict.INCOMPLETE and v.exit_code == 2
    assert "isolation/hang skipped on prod/wpost-2k: preflight of profile 'prod' failed" in line
    every_blocked = [rec("isolation", o, p, S, "blocked") for o in ("hang", "reused-id")
                     for p in ("bench", "prod")]
    assert _verdict(every_blocked)[0] is Verdict.INCOMPLETE
    assert missing_cells(recs[:1], ["bench", "prod"], ["wpost-2k"], ["isolation"]) == [
        "isolation on prod/wpost-2k"]
    assert _verdict(recs[:1], ["isolation on prod/wpost-2k"])[0] is Verdict.INCOMPLETE
    assert _verdict([])[0] is Verdict.INCOMPLETE


def test_errors_name_their_cause_once() -> None:
    assert _verdict([rec("validity", "proofs", "bench", E, "verifier: exited 2"),
                     rec("validity", "proofs", "prod", E, "verifier: exited 2")])[0] is Verdict.ERROR
    assert verdict([], [], ["image 'x' is not present locally"], [], [])[1] == \
        "image 'x' is not present locally"  # the cause, said once


def test_a_skipped_record_is_uncompared_not_agreement() -> None:
    recs = [rec("validity", "proofs", "bench", P),
            rec("validity", "proofs", "prod", S, "unverifiable: the client handed out no proof"),
            rec("validity", "jobs", "bench", S, "blocked"), rec("validity", "jobs", "prod", P)]
    assert divergences(recs, "bench", {}) == []
    assert uncompared(recs, "bench") == [
        "validity/proofs skipped on prod/wpost-2k: unverifiable: the client handed out no proof",
        "validity/jobs skipped on bench/wpost-2k: blocked",
        "validity/jobs on prod/wpost-2k: the baseline 'bench' was skipped"]
    assert uncompared(recs[:1], "bench") == []


def test_an_undecided_timing_metric_is_incomplete_and_named() -> None:
    undecided = TimingVerdict(
        arm="A/A bench", metric="per-proof cost", left="bench:A1", right="bench:A2",
        verdict=Comparison.INCONCLUSIVE, test="Mann-Whitney U on log samples", ratio=1.04,
        ratio_ci=(0.81, 1.3), left_summary=SampleSummary(n=6, median=3500.0, q1=3400.0,
                                                          q3=3600.0, min=3300.0, max=3900.0),
        right_summary=SampleSummary(n=6, median=3640.0, q1=3500.0, q3=3800.0, min=3400.0,
                                    max=4400.0))
    recs = [rec("validity", "proofs", "bench", P),
            msgspec.structs.replace(rec("timing", "aa", "bench", I, "A/A noisy"),
                                    timing=undecided)]
    v, line = _verdict(recs)
    assert v is Verdict.INCOMPLETE and v.exit_code == 2
    assert line == ("timing/aa on bench/wpost-2k undecided: per-proof cost (A/A bench) "
                    "INCONCLUSIVE, ratio 1.040 [0.810, 1.300] (6+6 samples)")


def test_suspects_rank_the_evidence_first_and_leave_out_unused_items() -> None:
    ps = load_profiles("refprover", ["prod.config.pipline.enabled=true"])
    delta = profile_delta(ps["bench"], ps["prod"])
    keys = rec("preflight", "config-keys", "prod", F, names=("config.pipline.enabled",))
    assert rank(delta, keys)[0].path == "config.pipline"  # a new table: the delta names the table
    assert rank(delta, keys)[0].why == "named in the evidence"
    iso = rec("isolation", "colliding-ids", "prod", F)
    assert "job_ids" not in [s.path for s in rank(delta, iso)]


def test_assemble_puts_it_together() -> None:
    ps = load_profiles("refprover", ["prod.env.REFPROVER_FAULTS=partition-race"])
    recs = [rec("validity", "proofs", "bench", P), rec("validity", "proofs", "prod", F)]
    res = assemble(run_id="r", profiles=ps, records=recs, runs=[], created_unix_s=1.0)
    assert res.verdict is Verdict.DIVERGED and res.exit_code == 1
    assert res.divergences[0].suspects[0].path == "config.pipeline.enabled"
    assert [d.right for d in res.deltas] == ["prod"]


def _proofs_rec(profile: str, outcome: Outcome, valid: int, unverified: int = 0,
                workload: str = "porep-2k") -> OracleRecord:
    from proofdiff.model.oracle_records import ProofCounts
    return OracleRecord(
        suite="validity", oracle="proofs", profile=profile, workload=workload, outcome=outcome,
        message="m", counts=ProofCounts(total=2, completed=2, valid=valid, invalid=0, failed=0,
                                        unverified=unverified),
        evidence={"unverifiable": "cuzk-bench prints no proof"} if unverified else {})


def test_an_unverifiable_profile_is_covered_by_another_profiles_verified_proofs() -> None:
    """bench unverifiable (cuzk-bench), prod verified: the other oracles decide, and the line
    names what could not be verified."""
    recs = [_proofs_rec("bench", S, 0, unverified=2), _proofs_rec("prod", P, 2)]
    v, line = _verdict(recs)
    assert v is Verdict.SAME
    assert "UNVERIFIABLE: validity/proofs on bench/porep-2k: cuzk-bench prints no proof" in line
    diverged = [*recs, rec("isolation", "colliding-ids", "bench", P),
                rec("isolation", "colliding-ids", "prod", F)]
    diverged = [msgspec.structs.replace(r, workload="porep-2k") for r in diverged]
    assert _verdict(diverged)[0] is Verdict.DIVERGED


def test_unverifiable_everywhere_is_incomplete() -> None:
    recs = [_proofs_rec("bench", S, 0, unverified=2),
            _proofs_rec("prod", P, 2, workload="wpost-2k")]  # verified, but another workload
    v, line = _verdict(recs)
    assert v is Verdict.INCOMPLETE and "validity/proofs skipped on bench/porep-2k" in line
