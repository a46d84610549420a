"""The gate without Docker: the allowlist (loading, matching, expiry, stale entries), the
decision and its exit codes, and the evidence files (JSON Schema in sync with the model and
valid on a result, the in-toto Statement). The timing arm on seeded batches is
tests/unit/test_gate_timing_rounds.py's."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import jsonschema
import msgspec
import pytest

from proofdiff.model.image import ImageInfo
from proofdiff.gate.allowlist import AllowlistError, apply_allowlist, load_allowlist
from proofdiff.gate.gate_result import (GATE_SCHEMA_VERSION, Decision, Finding, GateResult,
                                        VerifierCheck)
from proofdiff.gate.gate_view import SCHEMA_FILE, intoto_statement, schema, write_gate_report
from proofdiff.gate.findings import waived_only
from proofdiff.gate.gating import decide, findings_of, timing_findings, unjudged
from proofdiff.model.oracle_records import OracleRecord
from proofdiff.model.result import DifferentialResult
from proofdiff.model.status import Outcome, Verdict

from tests.unit.gate_sides import FakeSides, measure

pytestmark = pytest.mark.unit

ENTRY = """
[[accept]]
check = "validity/proofs"
profile = "prod"
match = "partition [0-9]+ invalid"
reason = "known race, fixed in 0.4"
link = "https://example.org/issues/1"
expires = {expires}
"""


def _finding(check: str = "validity/proofs", profile: str = "prod",
             message: str = "wpost-0: partition 1 invalid") -> Finding:
    return Finding(check=check, profile=profile, workload="wpost-2k", message=message,
                   kind="check")


def _allow(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "allow.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_an_unexpired_entry_accepts_what_it_matches_and_nothing_else(tmp_path: Path) -> None:
    entries = load_allowlist(_allow(tmp_path, ENTRY.format(expires="2027-01-31")))
    found, listed = apply_allowlist([_finding(), _finding(profile="bench"),
                                     _finding(message="wpost-0: 3 jobs lost")], entries,
                                    today=dt.date(2026, 12, 1))
    assert [f.accepted for f in found] == [True, False, False]
    assert found[0].accepted_by.endswith("allow.toml#1")
    assert found[0].reason == "known race, fixed in 0.4" and found[0].link.endswith("/1")
    assert listed == []


def test_an_expired_entry_is_listed_as_expired_and_accepts_nothing(tmp_path: Path) -> None:
    entries = load_allowlist(_allow(tmp_path, ENTRY.format(expires="2026-11-30")))
    found, listed = apply_allowlist([_finding()], entries, today=dt.date(2026, 12, 1))
    assert not found[0].accepted
    (e,) = listed
    assert e.status == "expired" and "expired on 2026-11-30" in e.message
    decision, line, _ = decide(found, listed, [], aa=False)
    assert decision is Decision.FAIL and decision.exit_code == 1


def test_an_entry_that_matches_nothing_is_stale(tmp_path: Path) -> None:
    entries = load_allowlist(_allow(tmp_path, ENTRY.format(expires="2027-01-31")))
    _found, listed = apply_allowlist([], entries, today=dt.date(2026, 12, 1))
    assert [(e.status, e.check) for e in listed] == [("stale", "validity/proofs")]
    assert "matched nothing" in listed[0].message
    decision, line, _ = decide([], listed, [], aa=False, no_timing=True)
    assert decision is Decision.PASS  # a stale entry is reported, it does not block
    assert "timing NOT measured (--no-timing)" in line


def test_no_decided_timing_metric_is_no_pass_unless_no_timing_was_asked() -> None:
    decision, line, why = decide([], [], [], aa=True)
    assert decision is Decision.INCONCLUSIVE and decision.exit_code == 2
    assert why == ["no timing metric was decided (pass --no-timing to gate on the checks alone)"]
    t = measure(FakeSides(ratio=1.0, cv=0.01), deadline_s=-1)  # the budget ran out at once
    decision, line, why = decide([], [], [t], aa=True)
    assert decision is Decision.INCONCLUSIVE and "--budget-s" in why[0], why


@pytest.mark.parametrize(("text", "says"), [
    ("[[accept]]\ncheck = 'x'\n", "missing profile, match, reason, link, expires"),
    (ENTRY.format(expires="'2027-01-31'"), "is not a TOML date"),
    (ENTRY.format(expires="2027-01-31").replace("[0-9]+", "[0-9"), "not a regular expression"),
    (ENTRY.format(expires="2027-01-31") + "owner = 'me'\n", "unknown key(s) owner"),
    ("[accept]\ncheck = 1\n", "only [[accept]] entries"),
    ("check = = 1", "not TOML"),
])
def test_a_malformed_allowlist_names_the_entry_and_the_fix(tmp_path: Path, text: str,
                                                           says: str) -> None:
    with pytest.raises(AllowlistError, match="allow.toml") as err:
        load_allowlist(_allow(tmp_path, text))
    assert says in str(err.value) and err.value.fix


def test_a_missing_allowlist_says_it_cannot_be_read(tmp_path: Path) -> None:
    with pytest.raises(AllowlistError, match="cannot be read") as err:
        load_allowlist(tmp_path / "nope.toml")
    assert "--allowlist" in err.value.fix


def _record(suite: str, oracle: str, profile: str, outcome: Outcome,
            message: str = "seen") -> OracleRecord:
    return OracleRecord(suite=suite, oracle=oracle, profile=profile, workload="wpost-2k",
                        outcome=outcome, message=message)


def _diff(records: list[OracleRecord], verdict: Verdict = Verdict.SAME) -> DifferentialResult:
    return DifferentialResult(run_id="d", created_unix_s=0.0, verdict=verdict, verdict_line="",
                              exit_code=verdict.exit_code, images=(),
                              profiles={"bench": {}, "prod": {}}, workloads=("wpost-2k",),
                              suites=("validity", "behaviour"), records=tuple(records))


def test_a_skipped_check_or_a_profile_without_records_is_no_pass() -> None:
    diff = _diff([_record("validity", "proofs", "bench", Outcome.PASS),
                  _record("behaviour", "in-flight", "bench", Outcome.SKIPPED,
                          "no admission limit configured\nmore")], Verdict.INCOMPLETE)
    why = unjudged(diff)
    assert why == ["behaviour/in-flight skipped on bench/wpost-2k: no admission limit configured",
                   "profile prod has no record at all in the candidate's differential"]
    t = measure(FakeSides(ratio=1.0, cv=0.01))
    decision, line, got = decide(findings_of(diff), [], [t], aa=True, unjudged=why)
    assert decision is Decision.INCONCLUSIVE and got == why
    assert "behaviour/in-flight skipped on bench" in line and "(+1 more)" in line
    assert unjudged(_diff([], Verdict.INCOMPLETE))[-1] == \
        "the candidate's differential judged nothing"


def test_the_behaviour_suite_blocks_even_when_every_profile_fails_alike() -> None:
    diff = _diff([_record("behaviour", "mode", p, Outcome.FAIL, "proves in the wrong mode")
                  for p in ("bench", "prod")], Verdict.FAILED)
    found = findings_of(diff)
    assert [(f.check, f.profile, f.kind) for f in found] == [
        ("behaviour/mode", "bench", "check"), ("behaviour/mode", "prod", "check")]
    decision, line, _ = decide(found, [], [], aa=False)
    assert decision is Decision.FAIL and "behaviour/mode on bench" in line


def _result(tmp_path: Path) -> GateResult:
    t = measure(FakeSides(ratio=1.25))
    findings = [_finding()]
    decision, line, _ = decide(findings, [], [t], aa=False)
    return GateResult(run_id="g1", created_unix_s=0.0, decision=decision, decision_line=line,
                      exit_code=decision.exit_code,
                      candidate=ImageInfo(tag="img:cand", digest="sha256:" + "c" * 64),
                      baseline=ImageInfo(tag="img:base", digest="sha256:" + "b" * 64),
                      findings=tuple(findings), timing=(t,))


def test_the_shipped_schema_is_the_models_and_validates_a_written_summary(tmp_path: Path) -> None:
    shipped = json.loads((Path(__file__).parents[2] / "harness" / "gate" / SCHEMA_FILE).read_text())
    assert shipped == json.loads(json.dumps(schema())), "regenerate harness/gate/gate.schema.json"
    write_gate_report(_result(tmp_path), tmp_path)
    doc = json.loads((tmp_path / "summary.json").read_text())
    jsonschema.validate(doc, json.loads((tmp_path / SCHEMA_FILE).read_text()))
    assert doc["schema_version"] == GATE_SCHEMA_VERSION == 4
    assert doc["decision"] == "fail" and doc["exit_code"] == 1
    html = (tmp_path / "index.html").read_text()
    assert html.index('<header id="decision" class="bad">') < html.index(
        'FAIL <span class="exit">exit 1: a divergence') < html.index(
        '<section id="divergences"><h2>What blocks the push (1)') < html.index("<h2>Timing")
    assert html.count("<svg") == 2 and 'aria-label="bench/wpost-2k latency: samples' in html
    assert 'name="validity/proofs[prod-wpost-2k]"' in (tmp_path / "junit.xml").read_text()
    results = [json.loads(p.read_text()) for p in (tmp_path / "allure-results").glob("*-result.json")]
    by_name = {r["name"]: r["status"] for r in results}
    assert by_name["gate/decision"] == "failed"
    assert by_name["gate-check/validity/proofs [prod]"] == "failed"
    env = (tmp_path / "allure-results" / "environment.properties").read_text()
    assert "candidate=" in env and "sha256:" in env


def test_the_intoto_statement_names_the_candidate_by_digest(tmp_path: Path) -> None:
    st = intoto_statement(_result(tmp_path))
    assert st["_type"] == "https://in-toto.io/Statement/v1"
    assert st["subject"] == [{"name": "img:cand", "digest": {"sha256": "c" * 64}}]
    assert st["predicate"]["decision"] == "fail"
    assert st["predicate"]["baseline"]["digest"] == "sha256:" + "b" * 64
    assert {(x["metric"], x["regression"]) for x in st["predicate"]["timing"]} == {
        ("latency", True), ("throughput", True)}


def _diff_with(records):  # type: ignore[no-untyped-def]
    from proofdiff.core.differential import assemble
    from proofdiff.model.profile_file import load_profiles
    return assemble(run_id="d", profiles=load_profiles("refprover", []), records=records, runs=[])


def _proofs(profile: str, outcome, valid: int, unverified: int = 0):  # type: ignore[no-untyped-def]
    from proofdiff.model.oracle_records import OracleRecord, ProofCounts
    from proofdiff.model.status import Outcome
    return OracleRecord(
        suite="validity", oracle="proofs", profile=profile, workload="porep-2k",
        outcome=Outcome(outcome), message="m",
        counts=ProofCounts(total=2, completed=2, valid=valid, invalid=0, failed=0,
                           unverified=unverified),
        evidence={"unverifiable": "cuzk-bench prints no proof"} if unverified else {})


def test_the_gate_needs_one_profiles_proofs_verified_and_names_those_that_were_not() -> None:
    """bench unverifiable (cuzk-bench) beside prod's verified proofs: no block, named in the
    PASS line; no profile verified at all: a blocking finding."""
    from proofdiff.gate.gating import findings_of, unverified_of
    covered = _diff_with([_proofs("bench", "skipped", 0, 2), _proofs("prod", "pass", 2)])
    assert findings_of(covered) == []
    assert unverified_of(covered) == {"bench/porep-2k": "cuzk-bench prints no proof"}
    assert unjudged(covered) == []  # the covered skip is named, not a reason to withhold a PASS
    decision, line, _ = decide([], [], [measure(FakeSides(ratio=1.0, cv=0.01))], False,
                               unverified_of(covered))
    assert decision is Decision.PASS
    assert line.endswith("proofs not verified on bench/porep-2k (cuzk-bench prints no proof)")
    none = _diff_with([_proofs("bench", "skipped", 0, 2), _proofs("prod", "skipped", 0, 2)])
    found = findings_of(none)
    assert [(f.check, f.profile) for f in found] == [("validity/proofs", "bench"),
                                                      ("validity/proofs", "prod")]
    assert "no profile's proofs were verified on porep-2k" in found[0].message
    assert decide(found, [], [], False)[0] is Decision.FAIL


def test_a_host_build_is_its_folders_programs_by_digest(tmp_path: Path) -> None:
    """gate --candidate-bin-dir: each profile runs its folder's programs as processes, judged
    by the given verify; a program missing from the folder is named with the fix."""
    from proofdiff.gate.host_builds import HostBuildError, host_side, on_side
    from proofdiff.model.choices import Runtime
    from proofdiff.model.profile_file import load_profiles

    ps = load_profiles("refprover", ['bench.driver="bench-cli"'])
    for name in ("refprover", "bench"):
        (tmp_path / name).write_text(f"#!/bin/sh\n# {name}\n", encoding="utf-8")
        (tmp_path / name).chmod(0o755)
    side = host_side("candidate", str(tmp_path), ps)
    assert side.digest == file_digest(tmp_path / "refprover") and "bench sha256:" in side.detail
    p = on_side(ps["bench"], str(tmp_path), "/opt/verify", "bench-candidate")
    assert (p.name, p.runtime, p.binary, p.bench_tool, p.verifier_binary) == (
        "bench-candidate", Runtime.PROCESS, str(tmp_path / "refprover"), str(tmp_path / "bench"),
        "/opt/verify")
    (tmp_path / "bench").unlink()
    with pytest.raises(HostBuildError, match="has no executable 'bench'") as err:
        host_side("candidate", str(tmp_path), ps)
    assert "copy the build's bench into" in (err.value.fix or "")


def file_digest(path: Path) -> str:
    import hashlib
    return "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()


def test_allure_results_carry_each_checks_real_start_and_stop(tmp_path: Path) -> None:
    """Allure's timeline: a finding at its record's times (the divergence at its failing
    record's), a timing verdict at its arm's, the cross-check at its own, the decision over
    the whole gate; none at the decision's instant."""
    rec = OracleRecord(suite="validity", oracle="proofs", profile="prod", workload="wpost-2k",
                       outcome=Outcome.FAIL, message="partition 1 invalid",
                       started_unix_s=1_764_000_010.25, stopped_unix_s=1_764_000_042.5)
    diff = DifferentialResult(run_id="d", created_unix_s=1_764_000_050.0,
                              verdict=Verdict.FAILED, verdict_line="", exit_code=2,
                              records=(rec,))
    (found,) = findings_of(diff)
    arm = msgspec.structs.replace(measure(FakeSides(ratio=1.25)), started_unix_s=1_764_000_060.0,
                                  stopped_unix_s=1_764_000_300.0)
    check = VerifierCheck(baseline_image="img:base", proofs=3, agreed=True,
                          started_unix_s=1_764_000_055.0, stopped_unix_s=1_764_000_059.0)
    findings = [found, *timing_findings([arm])]
    decision, line, _ = decide(findings, [], [arm], aa=False)
    r = GateResult(run_id="g1", created_unix_s=1_764_000_301.0, decision=decision,
                   decision_line=line, exit_code=decision.exit_code,
                   candidate=ImageInfo(tag="c"), baseline=ImageInfo(tag="b"),
                   findings=tuple(findings), timing=(arm,), verifier_check=check,
                   started_unix_s=1_764_000_000.0, wall_s=301.0)
    write_gate_report(r, tmp_path)
    got = {(x["name"]): (x["start"], x["stop"]) for x in (
        json.loads(p.read_text()) for p in (tmp_path / "allure-results").glob("*-result.json"))}
    assert got["gate-check/validity/proofs [prod]"] == (1_764_000_010_250, 1_764_000_042_500)
    assert got["gate-timing/timing/latency [bench]"] == (1_764_000_060_000, 1_764_000_300_000)
    assert got["gate-timing/latency [bench]"] == (1_764_000_060_000, 1_764_000_300_000)
    assert got["gate-verifier/cross-check"] == (1_764_000_055_000, 1_764_000_059_000)
    assert got["gate/decision"] == (1_764_000_000_000, 1_764_000_301_000)


def test_the_gate_accepts_a_failure_never_an_error_and_a_pass_needs_a_passing_check(
        tmp_path: Path) -> None:
    entries = load_allowlist(_allow(tmp_path, ENTRY.format(expires="2027-01-31")))
    crash = "verify exited 101 on partition 1 invalid input: vk truncated"
    diff = _diff([_record("validity", "proofs", "bench", Outcome.PASS, "4/4 valid"),
                  _record("validity", "proofs", "prod", Outcome.ERROR, crash)], Verdict.DIVERGED)
    found = findings_of(diff)
    assert {(f.check, f.outcome) for f in found} == {("validity/proofs", "error")}
    got, listed = apply_allowlist(found, entries, today=dt.date(2026, 12, 1))
    assert not any(f.accepted for f in got) and [e.status for e in listed] == ["stale"]
    assert decide(got, listed, [], aa=False, no_timing=True)[0] is Decision.FAIL
    # a FAIL is accepted; but prod then has no check that passed: not a PASS
    diff = _diff([_record("validity", "proofs", "bench", Outcome.PASS, "4/4 valid"),
                  _record("validity", "proofs", "prod", Outcome.FAIL,
                          "wpost-0: partition 1 invalid")], Verdict.DIVERGED)
    got, _ = apply_allowlist(findings_of(diff), entries, today=dt.date(2026, 12, 1))
    assert got and all(f.accepted for f in got)
    why = unjudged(diff) + waived_only(diff, got)
    decision, line, _ = decide(got, [], [], aa=False, unjudged=why, no_timing=True)
    assert decision is Decision.INCONCLUSIVE, line
    assert "no check passed on prod" in line
    assert unjudged(_diff([_record("validity", "proofs", "bench", Outcome.FAIL)],
                          Verdict.FAILED)) == ["profile prod has no record at all in the "
                                               "candidate's differential",
                                               "no check of the candidate's differential passed"]


#: A stand-in for a broken pinned verifier, as ``verify --input FILE`` speaks
#: (targets/refprover/README.md, 'Verifier input and output'): every proof valid. The real tool cannot be made to
#: accept a tampered proof; this is the fault the gate's control exists for.
LENIENT = """\
import json, sys
args = sys.argv[1:]
items = json.load(open(args[args.index("--input") + 1]))["items"]
print(json.dumps({"results": [{"id": i["id"], "valid": True, "partitions": [True, True]}
                              for i in items]}))
"""


def test_a_pinned_verifier_that_accepts_a_tampered_proof_stops_the_gate(
        tmp_path: Path, workload_file: Path) -> None:
    import sys

    from proofdiff.gate.gating import GateError, tamper_control
    from proofdiff.model.run_options import RunOptions
    from tests.conftest import job, run

    lenient = tmp_path / "verify"
    lenient.write_text(f"#!{sys.executable}\n{LENIENT}", encoding="utf-8")
    lenient.chmod(0o755)
    diff = msgspec.structs.replace(
        _diff([_record("validity", "proofs", p, Outcome.PASS) for p in ("bench", "prod")]),
        runs=(run("bench", [job(0), job(1)]), run("prod", [job(0, parts=(True, False))])))
    opts = RunOptions(workload_files={"wpost-2k": str(workload_file)},
                      param_cache=str(tmp_path))
    with pytest.raises(GateError, match="accepted a proof with a byte flipped") as err:
        tamper_control(diff, opts, ImageInfo(tag=str(lenient)), True, "g-tamper")
    # bench's valid proof was tampered with; prod had none verified valid to tamper with
    assert "bench/wpost-2k wpost-0: valid [11]" in str(err.value) and "prod" not in str(err.value)


def test_an_accepted_isolation_failure_keeps_its_profile_timed_an_invalid_proof_does_not() -> None:
    """Against real cuzk, prod always fails isolation (two requests sharing an id both get the
    first one's proof): accepted by the allowlist, prod is still timed, or a gate of cuzk
    could never time it. A profile that blocks, or whose proofs are invalid (no timing
    sample, accepted or not), is left out."""
    import re

    from proofdiff.gate.gating import untimed_profiles
    from proofdiff.model.allowlist import AllowEntry

    def finding(check: str, profile: str, message: str) -> Finding:
        return Finding(check=check, profile=profile, workload="wpost-2k", message=message,
                       kind="check")

    def entry(check: str, match: str, expires: dt.date = dt.date(2099, 1, 1)) -> AllowEntry:
        return AllowEntry(where=f"allow.toml#{check}", check=check, profile="prod",
                          match=re.compile(match), reason="curio: ids not deduplicated",
                          link="https://example.org/1", expires=expires)

    ids = finding("isolation/colliding-ids", "prod", "both answers for the shared id 'x' are "
                  "proofs of wpost-0")
    bad = finding("validity/proofs", "prod", "2/4 invalid")
    assert untimed_profiles([ids], []) == {"prod"}
    assert untimed_profiles([ids], [entry("isolation/colliding-ids", "shared id")]) == set()
    assert untimed_profiles([ids], [entry("isolation/colliding-ids", "shared id",
                                          dt.date(2020, 1, 1))]) == {"prod"}
    assert untimed_profiles([bad], [entry("validity/proofs", "invalid")]) == {"prod"}
    assert untimed_profiles([ids, finding("warmup/first-proof", "bench", "FAILED")],
                            [entry("isolation/colliding-ids", "shared id")]) == {"bench"}
