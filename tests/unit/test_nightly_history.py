"""Whole nights stored in a real SQLite history (tests/unit/test_history_store.py's records): a
failure is new once, then still failing; a latency step is a slowdown on the night the history
first shows it, and not again the night after; a slow drift is found by the change points; a
night that cannot run exits 3, is stored and notifies; only new divergences are bisected; the
night's Allure results carry real times and the previous night's history."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import msgspec
import pytest

from proofdiff.cli import main
from proofdiff.history.database import history_url, open_history
from proofdiff.history.query import run_count

from proofdiff.bisect.bisect_result import ChangeItem
from proofdiff.model.oracle_records import Divergence, OracleRecord
from proofdiff.model.run_options import RunOptions
from proofdiff.model.result import DifferentialResult
from proofdiff.model.status import Outcome, Verdict
from proofdiff.nightly.night_bisect import bisect_new, new_divergences
from proofdiff.nightly.nightly import compare_night, with_bisections
from proofdiff.nightly.nightly_result import (CheckStanding, NightBisection, NightDecision,
                                              Standing)
from proofdiff.nightly.nightly_view import write_nightly_report
from tests.unit.test_history_store import result, timed_run
from tests.unit.test_notify import Hook, hook  # noqa: F401 - the served webhook fixture
from tests.report_page import open_page
from tests.unit.test_nightly import A, B, C, D  # the checks the standings tests name


def _night(rid: str, day: int, *, prod: Outcome = Outcome.PASS, wall_ms: float = 1000.0
           ) -> DifferentialResult:
    recs = (OracleRecord(suite="validity", oracle="proofs", profile="bench",
                         workload="wpost-2k", outcome=Outcome.PASS, message="4/4 valid"),
            OracleRecord(suite="validity", oracle="proofs", profile="prod", workload="wpost-2k",
                         outcome=prod, message="4/4 valid" if prod is Outcome.PASS
                         else "3/4 valid: partition 1 INVALID"))
    verdict = Verdict.SAME if prod is Outcome.PASS else Verdict.DIVERGED
    base = result(rid, (timed_run(wall_ms),), verdict=verdict, t=1_764_000_000.0 + day * 86400)
    return msgspec.structs.replace(base, records=recs)


def test_nights_in_a_real_history(tmp_path: Path) -> None:
    hist = str(tmp_path / "history.sqlite")

    def night(rid: str, day: int, **kw: object) -> tuple[NightDecision, str]:
        r = compare_night(_night(rid, day, **kw), history=hist,  # type: ignore[arg-type]
                          report_root=tmp_path, run_id=rid)
        assert not r.errors, r.errors
        return r.decision, r.decision_line

    assert night("n01", 1) == (NightDecision.CLEAN,
                               "CLEAN: nothing new against 0 earlier night(s); timing not "
                               "compared yet on 2 series (undecided: 0 earlier night(s) at the "
                               "current level; 3 needed); tonight's run: SAME")
    decision, line = night("n02", 2, prod=Outcome.FAIL)
    assert decision is NightDecision.NEW
    assert line == "NEW: validity/proofs on prod/wpost-2k fails (fail)"
    decision, line = night("n03", 3, prod=Outcome.FAIL)
    assert decision is NightDecision.CLEAN and "1 still-failing" in line
    decision, line = night("n04", 4)
    assert decision is NightDecision.CLEAN and "1 fixed" in line


def test_a_night_whose_daemons_never_started_is_error_then_a_lost_check_undecided(
        tmp_path: Path) -> None:
    hist = str(tmp_path / "history.sqlite")

    def night(rid: str, day: int, records: tuple[OracleRecord, ...], verdict: Verdict
              ) -> tuple[NightDecision, str]:
        d = msgspec.structs.replace(_night(rid, day), records=records, verdict=verdict,
                                    verdict_line="v", exit_code=verdict.exit_code)
        r = compare_night(d, history=hist, report_root=tmp_path, run_id=rid)
        assert not r.errors, r.errors
        return r.decision, r.decision_line

    assert night("n01", 1, _night("n01", 1).records, Verdict.SAME)[0] is NightDecision.CLEAN
    assert night("n02", 2, _night("n02", 2, prod=Outcome.FAIL).records,
                 Verdict.DIVERGED)[0] is NightDecision.NEW
    dark = tuple(OracleRecord(suite="validity", oracle="proofs", profile=p, workload="wpost-2k",
                              outcome=Outcome.ERROR, message=f"profile {p!r} has no daemon")
                 for p in ("bench", "prod"))
    decision, line = night("n03", 3, dark, Verdict.ERROR)  # was "1 still-failing", CLEAN
    assert decision is NightDecision.ERROR and "2 check(s) could not be judged" in line, line
    bench = _night("n04", 4).records[:1]  # prod's check ran the night before: missing tonight
    decision, line = night("n04", 4, bench, Verdict.SAME)
    assert decision is NightDecision.UNDECIDED and "validity/proofs on prod/wpost-2k" in line


def test_a_latency_step_is_new_on_its_first_night_and_confirmed_once(tmp_path: Path) -> None:
    hist = str(tmp_path / "history.sqlite")
    walls = [1000.0 + (7 * i) % 11 for i in range(10)] + [1100.0 + (5 * i) % 9 for i in range(3)]
    results = [compare_night(_night(f"n{i:02d}", i, wall_ms=w), history=hist,
                             report_root=tmp_path, run_id=f"n{i:02d}")
               for i, w in enumerate(walls)]
    flagged = [(r.run_id, s.kind, s.metric, s.run_id) for r in results for s in r.slowdowns]
    # the step starts at night n10: tonight against the ten nights before it, on that night
    assert flagged == [("n10", "tonight", "latency", "n10"),
                       ("n10", "tonight", "throughput", "n10")]
    r = results[10]
    assert r.decision is NightDecision.NEW and r.exit_code == 1
    assert "latency on bench/wpost-2k: night n10 (proofdiff/refprover:test): +9." in \
        r.decision_line
    (lat,) = [s for s in r.slowdowns if s.metric == "latency"]
    assert lat.before == tuple(f"n{i:02d}" for i in range(10)) and lat.image_after
    assert 0.09 < lat.step < 0.11 and "one-sided prediction t=" in lat.evidence
    assert [x.decision for x in results[:10]] == [NightDecision.CLEAN] * 10
    # the next night the change point at n10 appears (two nights after it): it confirms the
    # step flagged then, and is not new again
    n11 = results[11]
    assert n11.decision is NightDecision.CLEAN and not n11.slowdowns
    assert [(c.metric, c.confirms) for c in n11.confirmed] == [("latency", "n10"),
                                                               ("throughput", "n10")]
    assert "2 step(s) confirmed (latency on bench/wpost-2k at n10" in n11.decision_line
    assert results[12].decision is NightDecision.CLEAN  # the new level: too few nights yet
    assert {t.outcome for t in results[12].timing} == {"undecided"}
    out = write_nightly_report(results[11], tmp_path / "n11", history=hist)
    trend_page = (out / "index.html").read_text(encoding="utf-8")
    # the trend: the history's latency series with its change point at n10, plotted
    trend = trend_page[trend_page.index('<section id="trend">'):]
    assert "change point: run n10" in trend
    assert 'aria-label="latency of bench on wpost-2k over runs, 1 change point(s)"' in trend
    assert "at n10</text>" in trend
    out = write_nightly_report(r, tmp_path / "n10", history=hist)
    page = (out / "index.html").read_text(encoding="utf-8")
    assert "New since the last night" in page and "Slower: latency on bench/wpost-2k" in page
    timing = page[page.index('<section id="timing">'):]
    assert "Timing against the recent nights" in timing and ">new</td>" in timing
    # the page in a real browser: no script error, the slowdown on the first screen
    facts = open_page(out / "index.html")
    assert facts.severe == [] and facts.divergence_top is not None
    assert facts.divergence_top < facts.inner_height


def test_a_night_that_cannot_run_exits_3_is_stored_and_notifies(
        tmp_path: Path, hook: Hook, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text("[profiles.bench\n", encoding="utf-8")
    rc = main(["nightly", "--profiles", str(bad), "--report-dir", str(tmp_path / "rep"),
               "--run-id", "night-1", "--notify", hook.url])
    assert rc == 3
    assert "ERROR: the night could not run or be compared" in capsys.readouterr().out
    run_dir = tmp_path / "rep" / "night-1"
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["decision"] == "error" and "malformed TOML" in summary["errors"][0]
    assert (run_dir / "differential" / "summary.json").is_file()
    db = open_history(history_url("default", tmp_path / "rep"))
    try:
        assert run_count(db) == 1  # a night that could not run is stored as such
    finally:
        db.close()
    body = hook.got[0]["body"]
    assert (body["kind"], body["decision"], body["exit_code"]) == ("nightly", "error", 3)
    assert body["report"] == str(run_dir / "index.html")


def _div(check: str, profile: str = "prod", outcome: Outcome = Outcome.FAIL,
         baseline: Outcome | None = Outcome.PASS) -> Divergence:
    suite, oracle = check.split("/")
    return Divergence(suite=suite, oracle=oracle, workload="wpost-2k", baseline="bench",
                      profile=profile, outcome=outcome, baseline_outcome=baseline)


def _standing(key: tuple[str, str, str], standing: Standing) -> CheckStanding:
    return CheckStanding(check=key[0], profile=key[1], workload=key[2], standing=standing,
                         outcome="fail")


def test_only_new_divergences_are_bisected_within_the_budget(tmp_path: Path) -> None:
    diff = msgspec.structs.replace(
        result("n1"), divergences=(_div(A[0]), _div(B[0]), _div(C[0], outcome=Outcome.ERROR),
                                   _div(D[0], baseline=None)))
    checks = [_standing(A, Standing.NEW), _standing(B, Standing.STILL_FAILING),
              _standing(C, Standing.NEW), _standing(D, Standing.NEW)]
    assert [d.oracle for d in new_divergences(diff, checks)] == ["proofs", "priority",
                                                                  "first-proof"]
    off = bisect_new(diff, checks, RunOptions(), budget_s=0, run_dir=tmp_path)
    assert [(b.check, b.status) for b in off] == [
        (A[0], "disabled"), (C[0], "not-bisectable"), (D[0], "not-bisectable")]
    assert off[0].line == "not bisected: --bisect-budget 0"
    assert off[1].line == "not bisected: prod is error, not a failure to isolate"
    assert off[2].line == "not bisected: bench has no record of warmup/first-proof"
    # a budget spent before the first probe: no bisection starts, none is guessed
    spent = bisect_new(diff, checks, RunOptions(), budget_s=1e-9, run_dir=tmp_path)
    assert spent[0].status == "budget-spent" and not spent[0].change and not spent[0].run_id
    assert not list(tmp_path.iterdir())  # no bisection report: none ran


def test_the_decision_names_the_proven_change_and_an_interrupt_ends_the_night(
        tmp_path: Path) -> None:
    night = compare_night(_night("n1", 1, prod=Outcome.FAIL), history=str(tmp_path / "h.db"),
                          report_root=tmp_path, run_id="n1")
    found = NightBisection(check=A[0], workload=A[2], baseline="bench", profile="prod",
                           status="found", line="found", run_id="bisect-1", probes=8,
                           change=(ChangeItem(path="config.pipeline.enabled", good=False,
                                              bad=True, unit="config.pipeline"),))
    unresolved = msgspec.structs.replace(found, check=B[0], status="unresolved", change=(),
                                         line="UNRESOLVED: probe 3 broke")
    r = with_bisections(night, [found, unresolved], budget_s=1800, wall_s=99.0)
    assert r.decision is NightDecision.NEW and r.exit_code == 1
    assert r.decision_line.endswith("validity/proofs on prod/wpost-2k fails (fail); bisected "
                               "validity/proofs on prod: config.pipeline.enabled; 1 not "
                                   "resolved by bisection"), r.decision_line
    out = write_nightly_report(r, tmp_path / "n1")
    page = (out / "index.html").read_text(encoding="utf-8")
    assert "<code>config.pipeline.enabled</code>: False &rarr; True" in page
    assert "UNRESOLVED</span>: UNRESOLVED: probe 3 broke" in page
    allure = {json.loads(p.read_text())["name"]: json.loads(p.read_text())["status"]
              for p in (out / "allure-results").glob("*-result.json")}
    assert allure["bisect/validity/proofs [prod]"] == "passed"
    assert allure["bisect/isolation/colliding-ids [prod]"] == "unknown"
    cut = with_bisections(night, [msgspec.structs.replace(found, status="interrupted")],
                          budget_s=1800, wall_s=1.0)
    assert cut.decision is NightDecision.INTERRUPTED and cut.exit_code == 130


def test_allure_results_carry_each_checks_real_start_and_stop(tmp_path: Path) -> None:
    diff = _night("n1", 1, prod=Outcome.FAIL)
    diff = msgspec.structs.replace(diff, records=tuple(
        msgspec.structs.replace(r, started_unix_s=1_764_086_400.5, stopped_unix_s=1_764_086_460.0)
        for r in diff.records))
    night = compare_night(diff, history=str(tmp_path / "h.db"), report_root=tmp_path,
                          run_id="n1")
    bis = NightBisection(check=A[0], workload=A[2], baseline="bench", profile="prod",
                         status="budget", line="BUDGET after 4 probes", probes=4,
                         started_unix_s=1_764_086_500.0, stopped_unix_s=1_764_086_700.0)
    r = msgspec.structs.replace(with_bisections(night, [bis], budget_s=200, wall_s=400.0),
                                started_unix_s=1_764_086_300.0, created_unix_s=1_764_086_701.0)
    out = write_nightly_report(r, tmp_path / "n1")
    got = {x["name"]: (x["start"], x["stop"]) for x in (
        json.loads(p.read_text()) for p in (out / "allure-results").glob("*-result.json"))}
    assert got["validity/proofs [prod]"] == (1_764_086_400_500, 1_764_086_460_000)
    assert got["bisect/validity/proofs [prod]"] == (1_764_086_500_000, 1_764_086_700_000)
    assert got["nightly/decision"] == (1_764_086_300_000, 1_764_086_701_000)


#: Allure 2's history.json as `allure generate` writes it (one test's entry).
ALLURE_HISTORY = {"5f2a": {"statistic": {"failed": 1, "broken": 0, "skipped": 0, "passed": 2,
                                         "unknown": 0, "total": 3},
                           "items": [{"uid": "a1", "status": "failed",
                                      "time": {"start": 1, "stop": 2, "duration": 1}}]}}


def test_the_previous_nights_allure_history_is_carried_into_tonights_results(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Through the CLI, on nights that cannot run (a bad profile file: no Docker needed, the
    report is still written): --allure-history that does not exist yet is the first night;
    a generated report's history/ is carried; without the option, the latest earlier night's
    report folder's allure-report/history/ is found through the history database."""
    bad = tmp_path / "bad.toml"
    bad.write_text("[profiles.bench\n", encoding="utf-8")
    rep, kept = tmp_path / "rep", tmp_path / "kept"

    def night(rid: str, *more: str) -> Path:
        assert main(["nightly", "--profiles", str(bad), "--report-dir", str(rep), "--run-id",
                     rid, *more]) == 3
        return rep / rid

    n1 = night("night-1", "--allure-history", str(kept))
    assert "none yet" in json.loads((n1 / "summary.json").read_text())["allure_history"]
    assert not (n1 / "allure-results" / "history").exists()
    # CI generated night 1's Allure report and kept its history/ (docs/guide/ci-recipes.md)
    (kept / "history").mkdir(parents=True)
    for name in ("history.json", "history-trend.json"):
        (kept / "history" / name).write_text(json.dumps(ALLURE_HISTORY), encoding="utf-8")
    n2 = night("night-2", "--allure-history", str(kept))
    carried = n2 / "allure-results" / "history"
    assert sorted(p.name for p in carried.iterdir()) == ["history-trend.json", "history.json"]
    assert json.loads((carried / "history.json").read_text()) == ALLURE_HISTORY
    assert list((n2 / "allure-results").glob("*-result.json"))  # tonight's results kept
    assert "allure history: carried 2 file(s)" in capsys.readouterr().out
    # no option: the latest earlier night (from the history) whose folder holds a generated
    # report; night-2's own report generated there
    (n2 / "allure-report").mkdir()
    shutil.copytree(kept / "history", n2 / "allure-report" / "history")
    (n2 / "allure-report" / "history" / "duration-trend.json").write_text("[]")
    n3 = night("night-3")
    assert sorted(p.name for p in (n3 / "allure-results" / "history").iterdir()) == [
        "duration-trend.json", "history-trend.json", "history.json"]
    assert json.loads((n3 / "summary.json").read_text())["allure_history"] == str(
        n2 / "allure-report" / "history")
    with pytest.raises(SystemExit):  # a file is no history folder: argparse's usage error
        main(["nightly", "--allure-history", str(bad)])
    assert "is not a folder" in capsys.readouterr().err


def test_a_slow_drift_is_found_by_the_change_points(tmp_path: Path) -> None:
    """+3 % a night over 5 nights after 10 level ones: no single night is far enough above the
    nights before it (they drift along), the longer series' change points find it."""
    hist = str(tmp_path / "history.sqlite")
    walls = [1000.0 * (1 + 0.01 * ((7 * i) % 3 - 1)) for i in range(10)] + [
        1000.0 * 1.03 ** k for k in range(1, 6)]
    results = [compare_night(_night(f"n{i:02d}", i, wall_ms=w), history=hist,
                             report_root=tmp_path, run_id=f"n{i:02d}")
               for i, w in enumerate(walls)]
    found = [(r.run_id, s.kind, s.metric) for r in results for s in r.slowdowns]
    assert [r.decision for r in results[:10]] == [NightDecision.CLEAN] * 10
    assert any(kind == "change-point" and metric == "latency" for _, kind, metric in found), found
    assert all(int(rid[1:]) >= 10 for rid, _, _ in found), found
