"""The allowlist on a differential run (``proofdiff run --allowlist``, the gate's format): an
accepted difference is still shown (divergences, records, the page, junit.xml, the console) and
sets no verdict; an expired entry accepts nothing; a bad allowlist stops the run before any
daemon starts (exit 3, the report written)."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest
from junitparser import Failure, JUnitXml

from proofdiff.cli import main
from proofdiff.core.differential import assemble
from proofdiff.model.allowlist import load_allowlist
from proofdiff.model.oracle_records import OracleRecord
from proofdiff.model.profile_file import load_profiles
from proofdiff.model.result import DifferentialResult
from proofdiff.model.status import Outcome, Verdict
from proofdiff.report.console import print_result
from proofdiff.report.writer import write_report

T0 = dt.datetime(2026, 12, 1, 12, tzinfo=dt.timezone.utc).timestamp()

#: prod's isolation failure against a real cuzk (docs/guide/gpu-host-without-docker.md)
ISOLATION = ("isolation/colliding-ids: 2 requests sharing id wdpost-1000-0-ab12cd34 both got "
             "the first one's proof")

ENTRY = """
[[accept]]
check = "isolation/colliding-ids"
profile = "prod"
match = "both got the first one's proof"
reason = "cuzk does not deduplicate request ids"
link = "https://example.org/cuzk/issues/7"
expires = {expires}
"""


def _result(tmp_path: Path, expires: str, *, prod_validity: Outcome = Outcome.PASS
            ) -> DifferentialResult:
    allow = tmp_path / "allow.toml"
    allow.write_text(ENTRY.format(expires=expires), encoding="utf-8")
    recs = [OracleRecord(suite=s, oracle=o, profile=p, workload="wpost-2k", outcome=out,
                         message=msg)
            for s, o, p, out, msg in [
                ("validity", "proofs", "bench", Outcome.PASS, "4/4 valid"),
                ("validity", "proofs", "prod", prod_validity, "4/4 valid" if prod_validity
                 is Outcome.PASS else "3/4 valid: partition 1 INVALID"),
                ("isolation", "colliding-ids", "bench", Outcome.PASS, "ids distinct"),
                ("isolation", "colliding-ids", "prod", Outcome.FAIL, ISOLATION)]]
    return assemble(run_id="r-allow", profiles=load_profiles("refprover"), records=recs,
                    runs=[], created_unix_s=T0, allowlist=load_allowlist(allow),
                    allowlist_file=str(allow))


def test_an_accepted_divergence_is_shown_and_sets_no_verdict(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]
                                                             ) -> None:
    res = _result(tmp_path, "2027-01-31")
    assert res.verdict is Verdict.SAME and res.exit_code == 0
    assert "1 accepted difference(s) (allowlist): isolation/colliding-ids fail on prod" \
        in res.verdict_line
    (d,) = res.divergences  # still there, never hidden
    acc = res.acceptance_of(d)
    assert acc is not None and acc.entry.endswith("allow.toml#1") and acc.expires == "2027-01-31"
    assert [r.outcome for r in res.records_of("isolation", "prod")] == [Outcome.FAIL]
    assert res.stale == ()

    out = write_report(res, tmp_path / "rep")
    page = (out / "index.html").read_text(encoding="utf-8")
    assert "isolation/colliding-ids diverged on wpost-2k: bench=pass, prod=fail (accepted)" in page
    assert "cuzk does not deduplicate request ids" in page and "<h2>Accepted differences</h2>" in page
    summary = json.loads((out / "summary.json").read_text())
    assert summary["accepted"][0]["check"] == "isolation/colliding-ids"
    cases = {c.name: c for s in JUnitXml.fromfile(str(out / "junit.xml")) for c in s}
    case = cases["colliding-ids[prod-wpost-2k]"]
    assert not any(isinstance(x, Failure) for x in case.result)
    assert "accepted by" in (case.system_out or "") and ISOLATION in (case.system_out or "")

    from rich.console import Console
    print_result(Console(width=200), res)
    shown = capsys.readouterr().out
    assert "prod=fail (ACCEPTED)" in shown and "cuzk does not deduplicate" in shown


def test_an_unaccepted_failure_beside_an_accepted_one_still_diverges(tmp_path: Path) -> None:
    res = _result(tmp_path, "2027-01-31", prod_validity=Outcome.FAIL)
    assert res.verdict is Verdict.DIVERGED and res.exit_code == 1
    assert res.verdict_line == "validity/proofs diverged on wpost-2k: bench=pass, prod=fail"
    assert [d.oracle for d in res.divergences if res.acceptance_of(d)] == ["colliding-ids"]


def test_an_expired_entry_accepts_nothing_and_is_listed(tmp_path: Path) -> None:
    res = _result(tmp_path, "2026-11-30")  # the day before the run
    assert res.verdict is Verdict.DIVERGED and res.accepted == ()
    (st,) = res.stale
    assert st.status == "expired" and "expired on 2026-11-30" in st.message


def test_a_bad_allowlist_stops_the_run_with_exit_3_and_a_report(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    allow = tmp_path / "allow.toml"
    allow.write_text(ENTRY.format(expires='"soon"'), encoding="utf-8")
    rc = main(["run", "--allowlist", str(allow), "--report-dir", str(tmp_path / "rep"),
               "--run-id", "bad-allow"])
    assert rc == 3
    assert "expires = 'soon' is not a TOML date" in capsys.readouterr().out
    summary = json.loads((tmp_path / "rep" / "bad-allow" / "summary.json").read_text())
    assert summary["verdict"] == "ERROR" and summary["allowlist"] == str(allow)


def test_the_gate_reads_the_same_allowlist_option(tmp_path: Path) -> None:
    allow = tmp_path / "allow.toml"
    allow.write_text(ENTRY.format(expires='"soon"'), encoding="utf-8")
    rc = main(["gate", "--candidate", "c:1", "--baseline", "b:1", "--allowlist", str(allow),
               "--report-dir", str(tmp_path / "rep"), "--run-id", "g-allow"])
    assert rc == 3
    summary = json.loads((tmp_path / "rep" / "g-allow" / "summary.json").read_text())
    assert summary["allowlist"] == str(allow)
    assert "expires = 'soon' is not a TOML date" in summary["errors"][0]


def _run(tmp_path: Path, entry: str, records: list[tuple[str, Outcome, str]]
         ) -> DifferentialResult:
    """A run of ``validity/proofs`` on bench and prod (``records``: profile, outcome, message)
    with one allowlist entry."""
    allow = tmp_path / "allow.toml"
    allow.write_text(entry, encoding="utf-8")
    recs = [OracleRecord(suite="validity", oracle="proofs", profile=p, workload="wpost-2k",
                         outcome=out, message=msg) for p, out, msg in records]
    return assemble(run_id="r-allow", profiles=load_profiles("refprover"), records=recs,
                    runs=[], created_unix_s=T0, allowlist=load_allowlist(allow),
                    allowlist_file=str(allow))


PARTITION = """
[[accept]]
check = "validity/proofs"
profile = "*"
match = "partition"
reason = "known partition race"
link = "https://example.org/cuzk/issues/9"
expires = 2027-01-31
"""


def test_an_error_record_is_never_accepted_whatever_its_message(tmp_path: Path) -> None:
    # an entry written for `partition N invalid` must not accept a verifier crash that
    # mentions a partition (the run would say SAME with 0 checks passed)
    crash = "the verifier crashed on partition 0: Groth16 vk file truncated"
    res = _run(tmp_path, PARTITION, [("bench", Outcome.ERROR, crash),
                                     ("prod", Outcome.ERROR, crash)])
    assert res.accepted == ()
    assert res.verdict is Verdict.ERROR and res.exit_code == 3, res.verdict_line
    (st,) = res.stale  # the entry accepted nothing: listed as such
    assert st.status == "stale"


def test_a_run_whose_every_failure_was_accepted_is_not_same(tmp_path: Path) -> None:
    bad = "3/4 valid: partition 1 INVALID"
    res = _run(tmp_path, PARTITION, [("bench", Outcome.FAIL, bad), ("prod", Outcome.FAIL, bad)])
    assert len(res.accepted) == 2
    assert res.verdict is Verdict.INCOMPLETE and res.exit_code == 2, res.verdict_line
    assert "no check passed" in res.verdict_line
    # one profile passing, the other's every check accepted: still no evidence for prod
    res = _run(tmp_path, PARTITION, [("bench", Outcome.PASS, "4/4 valid"),
                                     ("prod", Outcome.FAIL, bad)])
    assert res.verdict is Verdict.INCOMPLETE, res.verdict_line
    assert res.verdict_line.startswith("no check passed on prod")


@pytest.mark.parametrize(("match", "says"), [
    ('""', "is empty"),
    ("'.*'", "matches the empty string"),
    ("'(partition)?'", "matches the empty string"),
    ("'^$'", "matches the empty string"),
    ("7", "match = 7 is not a string"),
])
def test_a_match_that_accepts_anything_is_refused_at_load(tmp_path: Path, match: str,
                                                          says: str) -> None:
    from proofdiff.model.allowlist import AllowlistError

    allow = tmp_path / "allow.toml"
    allow.write_text(PARTITION.replace('"partition"', match), encoding="utf-8")
    with pytest.raises(AllowlistError, match="allow.toml#1") as err:
        load_allowlist(allow)
    assert says in str(err.value) and err.value.fix
