"""The report from one fixed result, against golden files (tests/golden/), with frozen time:
summary.json and index.html must not change unless the change is meant (then regenerate with
``PROOFDIFF_UPDATE_GOLDEN=1 pytest tests/unit/test_report_golden.py`` and review the diff).
index.html's golden keeps each plot as its label (``<svg aria-label=...>``): the drawing is
matplotlib's, checked here by what it shows (its text), not by its bytes."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from msgspec.structs import replace

from proofdiff.core.differential import assemble
from proofdiff.model.oracle_records import ProofCounts, OracleRecord
from proofdiff.model.profile_file import load_profiles
from proofdiff.model.result import DifferentialResult, ImageInfo
from proofdiff.model.status import JobStatus, Outcome, Verdict
from proofdiff.report.summary_json import load_summary
from proofdiff.report.writer import write_report
from proofdiff.model.serde import SerdeError
from tests.conftest import job, run
from tests.report_page import external_urls

GOLDEN = Path(__file__).resolve().parents[1] / "golden"
T0 = 1_700_000_000.0


def diverged() -> DifferentialResult:
    ps = {n: replace(p, source="refprover", image="proofdiff/refprover:0.1.0-abc")
          for n, p in load_profiles("refprover", ["prod.env.REFPROVER_FAULTS=partition-race"]).items()}
    bench = run("bench", [job(i, wall_ms=1000.0 + i) for i in range(4)])
    prod_jobs = [job(i, rid="wpost-1000-1", wall_ms=600.0) for i in range(3)]
    prod_jobs[1] = job(1, rid="wpost-1000-1", wall_ms=600.0, parts=(True, False))
    prod_jobs.append(job(3, JobStatus.FAILED, rid="wpost-1000-1",
                         error="assembler for job wpost-1000-1: partition 0 already inserted"))
    prod = run("prod", prod_jobs)
    recs = [OracleRecord(suite="validity", oracle="proofs", profile="bench", workload="wpost-2k",
                         outcome=Outcome.PASS, message="4/4 valid"),
            OracleRecord(suite="validity", oracle="proofs", profile="prod", workload="wpost-2k",
                         outcome=Outcome.FAIL, message="0/4 valid: INVALID\n  wpost-1 "
                         "(id=wpost-1000-1, COMPLETED): invalid: partitions [1] do not verify",
                         counts=ProofCounts(total=4, completed=3, valid=2, invalid=1, failed=1,
                                           unverified=0)),
            OracleRecord(suite="preflight", oracle="config-keys", profile="prod",
                         workload="wpost-2k", outcome=Outcome.PASS,
                         message="[profiles.prod] keys all known")]
    res = assemble(run_id="20240101-000000-abcdef", profiles=ps, records=recs,
                   runs=[bench, prod], created_unix_s=T0)
    return replace(res, images=(ImageInfo(tag="proofdiff/refprover:0.1.0-abc",
                                          digest="sha256:" + "ff" * 32),))


def _check(name: str, text: str) -> None:
    path = GOLDEN / name
    if os.environ.get("PROOFDIFF_UPDATE_GOLDEN"):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    assert path.is_file(), f"{path} missing: regenerate with PROOFDIFF_UPDATE_GOLDEN=1"
    assert text == path.read_text(encoding="utf-8"), f"{name} differs from its golden file"


_SVG = re.compile(r'<svg role="img" aria-label="([^"]*)".*?</svg>', re.S)


def plots_of(html: str) -> dict[str, str]:
    """Each inline plot of a page by its label."""
    return {m.group(1): m.group(0) for m in _SVG.finditer(html)}


def test_summary_and_html_match_their_golden_files(tmp_path: Path) -> None:
    out = write_report(diverged(), tmp_path)
    _check("summary.json", (out / "summary.json").read_text(encoding="utf-8"))
    html = (out / "index.html").read_text(encoding="utf-8")
    _check("index.html", _SVG.sub(r'<svg aria-label="\1">...</svg>', html))


def test_the_page_opens_on_the_decision_then_the_divergence_and_folds_what_passed(
        tmp_path: Path) -> None:
    html = (write_report(diverged(), tmp_path) / "index.html").read_text(encoding="utf-8")
    order = ['<header id="decision" class="bad">', "DIVERGED <span class=\"exit\">exit 1: a "
             "check fails on a profile but not on the baseline", '<section id="divergences">',
             "validity/proofs diverged on wpost-2k: bench=pass, prod=fail",
             '<table class="failing-jobs">', "Most likely cause", "config.pipeline.enabled",
             "<h2>Oracles", '<details id="passing"><summary>2 passing check(s)',
             "Latency and concurrency", "Side by side", "<h2>Jobs"]
    at = 0
    for x in order:  # each after the one before
        assert html.find(x, at) > at, (x, html[at:at + 300])
        at = html.find(x, at)
    jobs = html[html.index('<table class="failing-jobs">'):html.index("Most likely cause")]
    # prod's invalid proof (partition 1) and its failed job, by request id; bench's are valid
    assert jobs.count("<code>wpost-1000-1</code>") == 2 and "<td>1</td>" in jobs
    assert "INVALID" in jobs and "partition 0 already inserted" in jobs
    passing = html[html.index('<details id="passing">'):html.index("Latency and concurrency")]
    assert "[profiles.prod] keys all known" in passing and "0/4 valid" not in passing


def test_the_plots_are_matplotlibs_and_the_page_works_offline(tmp_path: Path) -> None:
    html = (write_report(diverged(), tmp_path) / "index.html").read_text(encoding="utf-8")
    plots = plots_of(html)
    assert set(plots) == {"latency per profile, side by side", "jobs in flight over time"}
    for svg in plots.values():  # text kept as text: the profiles are named in each plot
        assert ">bench</text>" in svg or "bench: " in svg, svg[:300]
        assert "prod" in svg
    assert "wpost-2k: each proof" in plots["latency per profile, side by side"]
    assert "<circle" not in html  # the hand-drawn samples are gone
    assert external_urls(html) == [] and "<script" not in html and "<link" not in html


def test_the_summary_reads_back_into_the_same_result(tmp_path: Path) -> None:
    res = diverged()
    back = load_summary(write_report(res, tmp_path))
    assert back == res and back.verdict is Verdict.DIVERGED and back.exit_code == 1
    assert back.divergences[0].suspects[0].path == "config.pipeline.enabled"


def test_every_report_file_is_written_and_html_keeps_the_order(tmp_path: Path) -> None:
    out = write_report(diverged(), tmp_path)
    assert {p.name for p in out.iterdir()} >= {"summary.json", "index.html", "junit.xml",
                                               "allure-results"}
    html = (out / "index.html").read_text(encoding="utf-8")
    assert html.index("Divergences") < html.index("Oracles") < html.index("Side by side") \
        < html.index("Jobs")
    assert "[profiles.prod] keys all known" in html  # bracketed text survives
    junit = (out / "junit.xml").read_text(encoding="utf-8")
    assert 'name="proofs[prod-wpost-2k]"' in junit and "<failure" in junit
    results = [json.loads(p.read_text()) for p in (out / "allure-results").glob("*-result.json")]
    assert sorted(r["status"] for r in results) == ["failed", "passed", "passed"]
    assert (out / "allure-results" / "environment.properties").read_text().startswith(
        "proofdiff.run_id=20240101-000000-abcdef")


def test_an_error_only_result_still_writes_a_report(tmp_path: Path) -> None:
    err = assemble(run_id="r-err", profiles={}, records=[], runs=[],
                   errors=["image 'x' is not present locally; build it with `make image`"])
    assert err.verdict is Verdict.ERROR and err.exit_code == 3
    out = write_report(err, tmp_path)
    assert "not present locally" in (out / "index.html").read_text(encoding="utf-8")
    assert "<error" in (out / "junit.xml").read_text(encoding="utf-8")


def test_load_summary_rejects_another_schema(tmp_path: Path) -> None:
    (tmp_path / "summary.json").write_text('{"schema_version": 99}', encoding="utf-8")
    with pytest.raises(SerdeError, match="schema_version 99"):
        load_summary(tmp_path)


def test_an_undecided_check_is_no_pass_in_junit() -> None:
    from proofdiff.report.junit_xml import junit_of
    from proofdiff.report.view import Check, CheckStatus, ReportView

    view = ReportView(run_id="r", kind="run", result=None, template="index.html.j2",
                      decision="INCOMPLETE", decision_line="undecided", exit_code=2, checks=(
                          Check(suite="timing", name="aa", status=CheckStatus.UNKNOWN,
                                profile="bench",
                                message="A/A bench: INCONCLUSIVE after 6+6 samples"),))
    text = junit_of(view).tostring().decode()
    assert '<skipped message="undecided, not a pass: A/A bench: INCONCLUSIVE after 6+6 ' \
        'samples"' in text, text


def test_a_page_that_fails_to_render_is_replaced_by_escaped_text(tmp_path: Path) -> None:
    # the fallback page holds the decision line and the traceback, both from text a daemon, a
    # case file or an exception wrote: markup in them is shown as text, never run
    from proofdiff.report.view import ReportView
    from proofdiff.report.writer import write_view

    payload = "<script>alert('pwned')</script><img src=x onerror=alert(1)>"
    view = ReportView(run_id="r-fallback", kind="run", result=None,
                      template=f"no-such-template-{payload}.j2", decision="ERROR",
                      decision_line=f"ERROR: {payload}", exit_code=3)
    page = (write_view(view, tmp_path / "r") / "index.html").read_text(encoding="utf-8")
    assert "the page did not render" in page and "TemplateNotFound" in page
    assert "<script>" not in page and "<img" not in page, page
    assert page.count("&lt;script&gt;alert(&#x27;pwned&#x27;)&lt;/script&gt;") == 2, page
