"""The run's page as people see it, in a real headless browser (Debian's chromium through
selenium, :mod:`tests.report_page`), on a real failing run: the shared validity-faults run
(:func:`tests.e2e.conftest.validity_faults`, no run of its own). The page renders with no
script error, the divergence is on the first screen of a 1280x800 window, nothing is loaded
from outside, and the first screen is saved as ``screenshot.png`` in the report directory. The
passing page is opened by ``test_clean_image_bench_and_prod_agree`` (test_bench_vs_prod.py)."""

from __future__ import annotations

import pytest

from proofdiff.report.differential_view import failing_jobs

from tests.e2e.conftest import CliRun
from tests.report_page import external_urls, open_page

pytestmark = pytest.mark.e2e


def test_a_failing_runs_page_opens_on_its_divergence(validity_faults: CliRun) -> None:
    r = validity_faults
    page = r.report_dir / "index.html"
    html = page.read_text(encoding="utf-8")
    assert external_urls(html) == [] and "<script" not in html
    (div,) = [d for d in r.result.divergences if d.oracle == "proofs" and d.profile == "prod-race"]
    jobs = failing_jobs(r.result, div.profile, div.workload)
    assert jobs and all(j["partitions"] == "0, 1" for j in jobs), jobs  # both partitions bad
    for j in jobs:  # each failing job's request id is on the page
        assert f"<code>{j['request_id']}</code>" in html
    assert 'aria-label="latency per profile, side by side"' in html
    assert 'aria-label="jobs in flight over time"' in html
    facts = open_page(page)
    assert facts.severe == [], facts.severe
    assert facts.divergence_top is not None and 0 <= facts.divergence_top < facts.inner_height, \
        (facts.divergence_top, facts.inner_height)
    assert all(u.startswith(("file:", "data:")) for u in facts.resources), facts.resources
    assert facts.screenshot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    print(f"browser: {facts.wall_s:.1f} s to start chromium, load and shoot {page}")
