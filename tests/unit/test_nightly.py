"""The nightly's comparison without Docker: standings from outcomes over nights (new, still
failing, flaky, fixed; accepted ones left out), the decision and its exit codes, an error or a
missing check never clean, and a fleet's night the gravest of its hosts. Whole nights in a real
history: tests/unit/test_nightly_history.py."""

from __future__ import annotations

import pytest

from proofdiff.model.status import Verdict
from proofdiff.nightly.compare import FLAKY_FLIPS, decide, standings
from proofdiff.nightly.nightly_result import CheckStanding, NightDecision, Standing


A = ("validity/proofs", "prod", "wpost-2k")
B = ("isolation/colliding-ids", "prod", "wpost-2k")
C = ("behaviour/priority", "prod", "wpost-2k")
D = ("warmup/first-proof", "prod", "wpost-2k")
E = ("isolation/reused-id", "prod", "wpost-2k")
F = ("validity/jobs", "prod", "wpost-2k")


def _by_key(found: list[CheckStanding]) -> dict[tuple[str, str, str], Standing]:
    return {(c.check, c.profile, c.workload): c.standing for c in found}


def test_each_failure_gets_its_standing_over_the_nights() -> None:
    past = [{A: "pass", B: "fail", C: "fail", D: "fail", F: "pass"},
            {A: "pass", B: "fail", C: "pass", D: "fail", F: "skipped"},
            {A: "pass", B: "fail", C: "fail", D: "fail"}]
    tonight = {A: "fail", B: "error", C: "pass", D: "pass", E: "fail", F: "fail"}
    found = standings(tonight, past)
    assert _by_key(found) == {
        A: Standing.NEW,            # passed every night before
        B: Standing.ERROR,          # nothing judged tonight: no failure, no pass
        C: Standing.FIXED,          # passes tonight after failing last night (flips 2+)
        D: Standing.FIXED,
        E: Standing.NEW,            # no night ran it
        F: Standing.NEW}            # a skipped night and a missing one say nothing
    c_flips = next(c for c in found if (c.check, c.profile, c.workload) == C).flips
    assert c_flips == 3


def test_a_check_that_flips_between_nights_is_flaky_not_new() -> None:
    past = [{A: "fail"}, {A: "pass"}]
    (c,) = standings({A: "fail"}, past)
    assert c.standing is Standing.FLAKY and c.flips == FLAKY_FLIPS == 2
    assert c.past == ("fail", "pass")


def test_an_accepted_failure_has_no_standing() -> None:
    assert standings({A: "fail"}, [{A: "pass"}], accepted={A}) == []


@pytest.mark.parametrize(("standing", "verdict", "errors", "code"), [
    (Standing.NEW, Verdict.DIVERGED, (), 1),
    (Standing.STILL_FAILING, Verdict.DIVERGED, (), 0),
    (Standing.FLAKY, Verdict.FAILED, (), 0),
    (Standing.FIXED, Verdict.INCOMPLETE, (), 2),
    (Standing.NEW, Verdict.ERROR, ("history h.sqlite is locked",), 3),
])
def test_the_decision_and_its_exit_code(standing: Standing, verdict: Verdict,
                                        errors: tuple[str, ...], code: int) -> None:
    c = CheckStanding(check=A[0], profile=A[1], workload=A[2], standing=standing,
                      outcome="fail")
    decision, line = decide(verdict=verdict, verdict_line="v", checks=[c], slowdowns=[],
                            nights=3, errors=errors, passed=5)
    assert decision.exit_code == code, line
    if standing in (Standing.STILL_FAILING, Standing.FLAKY):
        assert line.startswith("CLEAN: nothing new against 3 earlier night(s)")
        assert f"1 {standing.value}" in line


def test_an_error_is_never_flaky_still_failing_or_clean() -> None:
    # a night whose daemon never started (its records ERROR) is neither "still failing"
    # from the night before nor CLEAN; an ERROR that flipped twice is not "flaky"
    (c,) = standings({A: "error"}, [{A: "fail"}])
    assert c.standing is Standing.ERROR and c.flips == 0
    (c,) = standings({A: "error"}, [{A: "fail"}, {A: "pass"}, {A: "fail"}])
    assert c.standing is Standing.ERROR
    decision, line = decide(verdict=Verdict.ERROR, verdict_line="validity/proofs on prod: "
                            "the daemon did not start", checks=[c], slowdowns=[], nights=3,
                            passed=0)
    assert decision is NightDecision.ERROR and decision.exit_code == 3, line
    assert "could not be judged tonight: validity/proofs on prod/wpost-2k" in line
    # an ERROR beside a divergence still failing (the verdict DIVERGED): at best ERROR
    still = CheckStanding(check=B[0], profile=B[1], workload=B[2],
                          standing=Standing.STILL_FAILING, outcome="fail")
    decision, _ = decide(verdict=Verdict.DIVERGED, verdict_line="v", checks=[c, still],
                         slowdowns=[], nights=3, passed=4)
    assert decision is NightDecision.ERROR
    # the past nights' ERRORs say nothing: tonight's failure after a pass, then an ERROR, is new
    (c,) = standings({A: "fail"}, [{A: "pass"}, {A: "error"}])
    assert c.standing is Standing.NEW and c.flips == 1


def test_a_check_of_last_night_missing_tonight_has_a_standing_and_no_clean() -> None:
    (c,) = standings({A: "pass"}, [{A: "pass", B: "pass"}][-1:] + [{A: "pass", B: "fail"}])
    assert (c.check, c.standing, c.outcome) == (B[0], Standing.MISSING, "")
    decision, line = decide(verdict=Verdict.SAME, verdict_line="v", checks=[c], slowdowns=[],
                            nights=2, passed=1)
    assert decision is NightDecision.UNDECIDED and decision.exit_code == 2, line
    assert "have no record tonight: isolation/colliding-ids on prod/wpost-2k" in line
    # a check that an earlier night had but not the last one is not missing
    assert standings({A: "pass"}, [{A: "pass", B: "pass"}, {A: "pass"}]) == []


def test_no_check_passed_tonight_is_never_clean() -> None:
    still = CheckStanding(check=A[0], profile=A[1], workload=A[2],
                          standing=Standing.STILL_FAILING, outcome="fail")
    decision, line = decide(verdict=Verdict.FAILED, verdict_line="v", checks=[still],
                            slowdowns=[], nights=3, passed=0)
    assert decision is NightDecision.UNDECIDED, line
    assert "no check passed tonight" in line


def test_a_fleets_night_takes_the_gravest_decision_of_its_hosts() -> None:
    from proofdiff.nightly.nightly_result import NightDecision as D
    from proofdiff.nightly.nightly_result import worst

    assert worst([D.CLEAN, D.CLEAN]) is D.CLEAN
    assert worst([D.CLEAN, D.UNDECIDED]) is D.UNDECIDED
    assert worst([D.CLEAN, D.ERROR, D.UNDECIDED]) is D.ERROR  # a host that could not run
    assert worst([D.ERROR, D.NEW, D.CLEAN]) is D.NEW  # a new failure anywhere fails the night
    assert worst([D.NEW, D.INTERRUPTED]) is D.INTERRUPTED
    assert worst([]) is D.ERROR  # no host at all is never clean
