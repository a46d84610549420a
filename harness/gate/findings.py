"""What blocks the gate, read from the candidate's own differential: a checked suite that
fails or errs, a workload on which no profile's proofs were verified, any divergence from the
baseline profile (:func:`findings_of`); the profiles whose proofs could not be verified but are
covered by another's (:func:`unverified_of`); and what was left unjudged (:func:`unjudged`).
"""

from __future__ import annotations

from collections.abc import Sequence

from proofdiff.core.verdict import unverifiable
from proofdiff.gate.gate_result import Finding
from proofdiff.model.result import DifferentialResult
from proofdiff.model.status import Outcome, Verdict

__all__ = ["CHECKED_SUITES", "findings_of", "unjudged", "unverified_of", "waived_only"]

#: Suites that must be clean on the candidate (a FAIL or ERROR on every profile alike blocks as
#: much as one on a single profile: the candidate is broken either way).
CHECKED_SUITES = ("preflight", "validity", "warmup", "isolation", "behaviour")


def unverified_of(diff: DifferentialResult) -> dict[str, str]:
    """``{"profile/workload": why}`` for each profile whose proofs could not be verified
    because its client hands out none (real cuzk-bench), while another profile's proofs on
    that workload were (:func:`proofdiff.core.verdict.unverifiable`): the gate reports them and
    does not block on them."""
    return {f"{r.profile}/{r.workload}": str(r.evidence["unverifiable"])
            for r in unverifiable(diff.records)[0]}


def findings_of(diff: DifferentialResult) -> list[Finding]:
    """Reasons to block from the candidate's differential: a checked suite's record that
    fails or errs on any profile, a workload on which no profile's proofs could be verified
    (the gate needs at least one profile's proofs verified), and any other divergence from
    the baseline profile. Each finding's ``outcome`` is ``error`` where nothing was judged
    (an ERROR record, a divergence of one, no proof verified): no allowlist entry accepts
    it."""
    out = [Finding(check=f"{r.suite}/{r.oracle}", profile=r.profile, workload=r.workload,
                   message=r.message, kind="check", outcome=r.outcome.value,
                   evidence=dict(r.evidence),
                   started_unix_s=r.started_unix_s, stopped_unix_s=r.stopped_unix_s)
           for r in diff.records
           if r.suite in CHECKED_SUITES and r.outcome in (Outcome.FAIL, Outcome.ERROR)]
    out += [Finding(check=f"{r.suite}/{r.oracle}", profile=r.profile, workload=r.workload,
                    message=f"no profile's proofs were verified on {r.workload}, and the gate "
                    f"needs at least one: {r.profile}'s client hands out none "
                    f"({r.evidence['unverifiable']})", kind="check", outcome="error",
                    evidence=dict(r.evidence),
                    started_unix_s=r.started_unix_s, stopped_unix_s=r.stopped_unix_s)
            for r in unverifiable(diff.records)[1]]
    seen = {(f.check, f.profile, f.workload) for f in out}
    judged = {(r.check, r.profile, r.workload, r.image): r for r in diff.records}
    for d in diff.divergences:
        if (f"{d.suite}/{d.oracle}", d.profile, d.workload) in seen:
            continue
        top = f"; top suspect {d.suspects[0].path}" if d.suspects else ""
        rec = judged.get((f"{d.suite}/{d.oracle}", d.profile, d.workload, d.image))
        out.append(Finding(check=f"{d.suite}/{d.oracle}", profile=d.profile,
                           workload=d.workload, message=f"{d.headline}: {d.message}{top}",
                           kind="divergence", outcome=d.outcome.value,
                           evidence={"suspects": [s.path for s in d.suspects[:5]]},
                           started_unix_s=rec.started_unix_s if rec else 0.0,
                           stopped_unix_s=rec.stopped_unix_s if rec else 0.0))
    return out


def unjudged(diff: DifferentialResult) -> list[str]:
    """Why the candidate's differential is not evidence for a PASS although nothing in it
    failed: a SKIPPED check, a selected profile without any record, a run judged on nothing,
    no check that passed at all, or any other verdict short of SAME that no finding explains
    (INCOMPLETE). One line each;
    [] when every selected check of every profile was judged (STYLE.md 18). An unverifiable
    profile's skipped validity/proofs is not counted here: :func:`unverified_of` names it
    when another profile's proofs were verified, :func:`findings_of` blocks when none were."""
    def head(text: str) -> str:
        return (text.strip().splitlines() or [""])[0][:200]

    covered, uncovered = unverifiable(diff.records)
    told = {id(r) for r in (*covered, *uncovered)}
    out = [f"{r.suite}/{r.oracle} skipped on {r.profile}/{r.workload}: {head(r.message)}"
           for r in diff.records if r.outcome is Outcome.SKIPPED and id(r) not in told]
    seen = {r.profile for r in diff.records}
    out += [f"profile {p} has no record at all in the candidate's differential"
            for p in diff.profiles if p not in seen]
    if not diff.records:
        out.append("the candidate's differential judged nothing")
    elif not any(r.outcome is Outcome.PASS for r in diff.records):
        out.append("no check of the candidate's differential passed")
    if not out and diff.verdict is Verdict.INCOMPLETE:
        out.append(f"the candidate's differential is INCOMPLETE: {head(diff.verdict_line)}")
    return out


def waived_only(diff: DifferentialResult, findings: Sequence[Finding]) -> list[str]:
    """Why the gate is not a PASS although the allowlist accepted what blocked it: a profile
    with an accepted finding and no check of the candidate's differential that passed on it
    (STYLE.md 18: a PASS needs a passing check that no entry waived). One line each."""
    passed = {r.profile for r in diff.records if r.outcome is Outcome.PASS}
    accepted = sorted({f.profile for f in findings if f.accepted} - passed)
    return [f"no check passed on {p} in the candidate's differential: each of its findings was "
            "accepted by the allowlist" for p in accepted]
