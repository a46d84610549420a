"""Which divergence ``proofdiff run --bisect`` bisects (proofdiff.bisect.on_divergence), from
constructed results: the first the bisection can judge, and none at all is said, not skipped
in silence."""

from __future__ import annotations

from proofdiff.bisect.on_divergence import bisect_first_divergence, bisectable
from proofdiff.model.oracle_records import Divergence
from proofdiff.model.result import DifferentialResult
from proofdiff.model.run_options import RunOptions
from proofdiff.model.status import Outcome, Verdict


def div(check: str, outcome: Outcome, baseline: Outcome | None) -> Divergence:
    suite, oracle = check.split("/")
    return Divergence(suite=suite, oracle=oracle, workload="wpost-2k", baseline="bench",
                      profile="prod", outcome=outcome, baseline_outcome=baseline)


def result(*divs: Divergence) -> DifferentialResult:
    v = Verdict.DIVERGED if divs else Verdict.SAME
    return DifferentialResult(run_id="r", created_unix_s=0.0, verdict=v, verdict_line="",
                              exit_code=v.exit_code, divergences=divs)


def test_the_first_divergence_a_bisection_can_judge_is_bisected() -> None:
    # an ERROR is no failure to isolate; timing throughput prod vs bench has no baseline record
    res = result(div("validity/jobs", Outcome.ERROR, Outcome.PASS),
                 div("timing/throughput", Outcome.FAIL, None),
                 div("validity/proofs", Outcome.FAIL, Outcome.PASS))
    got = bisectable(res)
    assert got is not None and (got.suite, got.oracle) == ("validity", "proofs"), got


def test_nothing_to_bisect_is_stated_in_the_report() -> None:
    res, bis = bisect_first_divergence(result(div("timing/throughput", Outcome.FAIL, None)),
                                       RunOptions())
    assert bis is None and res.extra["bisect"]["status"] == "not run", res.extra
    assert "no divergence a bisection can judge" in str(res.extra["bisect"]["line"])
