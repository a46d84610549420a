"""The fault catalog self-test (issue 3): real containers, real proofs, `proofdiff run` as users
run it, faults on the prod profile only through `--set prod.env.REFPROVER_FAULTS=...`.

Tier split (2 cores: one WindowPoSt proof ~3.5 s alone; a run of every suite 4-6 min):

* `make test`: the clean image through EVERY suite (nothing may fail, timing included), and the
  four issue-3 faults each with the suite meant for it (`--suite`), asserting the exact suite
  and oracle that fails on prod and that bench stays clean: one real fault per suite.
* `-m slow` (`make test-slow`): `proofdiff catch-matrix`, every fault of the catalog through
  every suite, one command, its matrix asserted row by row.

Run ids carry a random suffix: other sessions may run the same tests on the same engine.
"""

from __future__ import annotations

import json
import secrets
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from harness.catch_matrix import CATALOG, cells_of

pytestmark = pytest.mark.e2e
REPO = Path(__file__).resolve().parents[2]


def _rid(name: str) -> str:
    return f"e2e-{name}-{secrets.token_hex(3)}"


def _records(summary: dict[str, Any], suite: str, profile: str) -> list[dict[str, Any]]:
    return [r for r in summary["oracles"] if r["suite"] == suite and r["profile"] == profile]


def test_clean_image_passes_every_suite(proofdiff_run: Any) -> None:
    r = proofdiff_run("--suite", "all", run_id=_rid("clean-all"))
    assert r.rc == 0, r.output
    s = r.summary
    assert s["verdict"] == "pass" and cells_of(s) == {}, (s["verdict_line"], cells_of(s))
    assert {x["suite"] for x in s["oracles"]} == {"preflight", "warmup", "isolation", "timing"}
    assert not [x for x in s["oracles"] if x["outcome"] in ("fail", "skipped")]
    for profile in ("bench", "prod"):
        assert {x["oracle"] for x in _records(s, "isolation", profile)} == {
            "hang", "lost-or-twice", "colliding-ids", "reused-id", "distinct-inputs"}
        (warm,) = [x for x in _records(s, "warmup", profile) if x["oracle"] == "first-proof"]
        assert warm["data"]["warmup"]["verified"] is True
    aa = [x for x in _records(s, "timing", "bench") if x["oracle"] == "aa"]
    assert aa and aa[0]["outcome"] in ("pass", "inconclusive"), aa  # DIFFERENT = false alarm
    conc = [x for x in _records(s, "timing", "prod") if x["oracle"] == "concurrency"]
    assert conc and conc[0]["outcome"] == "pass", conc
    bench_json = r.report_dir / "benchmarks" / "timing-wpost-2k.json"
    names = [b["name"] for b in json.loads(bench_json.read_text())["benchmarks"]]
    assert "wpost-2k/warmup[prod]" in names and "wpost-2k/per-proof-cost[bench]" in names
    cli = Path(sys.executable).with_name("pytest-benchmark")
    cmp = subprocess.run([str(cli), "compare", str(bench_json)], capture_output=True, text=True,
                         timeout=60)
    assert cmp.returncode == 0 and "per-proof-cost[prod]" in cmp.stdout, cmp.stdout + cmp.stderr
    html = (r.report_dir / "index.html").read_text()
    assert "<h2>Oracles</h2>" in html


#: fault -> (extra --set, suites to run, suite and oracle that must fail on prod, evidence text)
CASES = {
    "param-path-default": ((), ("preflight",), "preflight", "params",
                           "does NOT read the configured srs.param_cache"),
    "serialize-pipeline": ((), ("timing",), "timing", "concurrency", "serializes jobs"),
    "queue-deadlock": (("prod.timeout_s=40",), ("isolation",), "isolation", "hang",
                       "stuck job ids: iso-"),
    "shared-witness": ((), ("isolation",), "isolation", "distinct-inputs",
                       "byte-identical partition proofs"),
}


@pytest.mark.parametrize("fault", list(CASES))
def test_fault_on_prod_is_caught_by_the_suite_meant_for_it(proofdiff_run: Any, fault: str) -> None:
    sets, suites, suite, oracle, evidence = CASES[fault]
    args = ["--set", f"prod.env.REFPROVER_FAULTS={fault}"]
    for x in sets:
        args += ["--set", x]
    for x in suites:
        args += ["--suite", x]
    r = proofdiff_run(*args, run_id=_rid(fault))
    s = r.summary
    assert r.rc == 1 and s["verdict"] == "diverged", (r.rc, s["verdict_line"], r.output[-3000:])
    cells = cells_of(s)
    assert {"oracle": oracle, "profile": "prod"} in cells.get(suite, []), cells
    assert not [c for cs in cells.values() for c in cs if c["profile"] == "bench"], cells
    (rec,) = [x for x in _records(s, suite, "prod") if x["oracle"] == oracle]
    assert evidence in rec["message"], rec["message"]
    (div,) = [d for d in s["oracle_divergences"] if d["suite"] == suite and d["oracle"] == oracle]
    assert div["suspects"][0]["path"] == "env.REFPROVER_FAULTS", div["suspects"]
    assert f"{suite}/{oracle} diverged" in r.output
    if fault == "queue-deadlock":
        # the workload run (Prove at concurrency 4) also names its stuck jobs, within its deadline
        prod = next(o for o in s["outcomes"] if o["profile"] == "prod")
        lost = [b for b in prod["bad"] if b["status"] == "LOST"]
        assert lost and all(b["request_id"] == "wpost-1000-1" for b in lost), prod["bad"]
        assert rec["data"]["stuck_ids"], rec["data"]


@pytest.mark.slow
def test_catch_matrix_every_fault_through_every_suite(artifacts: Any, tmp_path: Path) -> None:
    rid = _rid("matrix")
    proc = subprocess.run([sys.executable, "-m", "harness.cli", "catch-matrix", "--report-dir",
                           str(tmp_path), "--run-id", rid], cwd=REPO, capture_output=True,
                          text=True, timeout=3 * 3600)
    doc = json.loads((tmp_path / rid / "summary.json").read_text())
    rows = {r["fault"]: r for r in doc["catch_matrix"]["rows"]}
    assert set(rows) == {c.name for c in CATALOG}, rows.keys()
    bad = {k: r["verdict"] for k, r in rows.items() if not r["ok"]}
    assert not bad and proc.returncode == 0, (bad, proc.stdout[-4000:])
    assert "catch matrix" in proc.stdout and "Catch matrix" in (tmp_path / rid /
                                                                 "index.html").read_text()
