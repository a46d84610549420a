"""The gate's decision from what it saw (step 4 of :mod:`proofdiff.gate.gating`): the blocking
findings of the timing arms, why a gate with nothing blocking is still not a PASS, and the
decision with its one line. Pure functions of the gate's records, so the gate, its power
simulation (:mod:`proofdiff.stats.power`) and the tests decide the same way."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from proofdiff.gate.gate_result import Decision, Finding, ProfileTiming, StaleEntry
from proofdiff.model.status import Comparison

__all__ = ["decide", "timing_findings", "timing_undecided"]


def timing_undecided(timing: Sequence[ProfileTiming]) -> list[str]:
    """Why the timing arms do not support a PASS although nothing in them blocks: a metric
    still INCONCLUSIVE (with its reason: its cap, its noise, the budget), an arm that stopped
    (a baseline batch that failed, the budget) or was not timed, an arm with no metric; one
    line each."""
    out = []
    for t in timing:
        where = f"{t.profile}/{t.workload}"
        open_ = [m for m in t.metrics if m.verdict is Comparison.INCONCLUSIVE]
        if t.stopped and (open_ or not t.metrics or not t.stopped.startswith("the gate's")):
            out.append(f"{where} ({t.stopped})")
        out += [f"{where} {m.metric} INCONCLUSIVE after {m.n_pairs} pair(s): "
                + m.reason.split("; ", 1)[-1] for m in open_]
        if not t.metrics and not t.stopped:
            out.append(f"{where}: no timing metric was judged")
    return out


def decide(findings: Sequence[Finding], stale: Sequence[StaleEntry],
           timing: Sequence[ProfileTiming], aa: bool,
           unverified: Mapping[str, str] | None = None, *, unjudged: Sequence[str] = (),
           no_timing: bool = False) -> tuple[Decision, str, list[str]]:
    """The decision, its one line, and why it is not a PASS when nothing blocks.

    FAIL: a blocking finding or an expired allowlist entry. INCONCLUSIVE (exit 2): nothing
    blocks, but something was not judged: ``unjudged`` (the differential's skipped checks and
    profiles without records: :func:`unjudged`), a timing arm undecided, stopped or not timed
    (:func:`timing_undecided`), or no timing metric decided at all unless ``no_timing`` (the
    user's ``--no-timing``). PASS otherwise, on evidence only (STYLE.md 18); ``unverified``
    (:func:`unverified_of`) is named in a PASS line."""
    blocking = [f for f in findings if not f.accepted]
    expired = [e for e in stale if e.status == "expired"]
    note = " (A/A: candidate and baseline are one digest)" if aa else ""
    if blocking or expired:
        what = [f"{f.check} on {f.profile}: {f.message.splitlines()[0][:200] if f.message else ''}"
                for f in blocking[:1]] + [e.message for e in expired[:1]]
        more = len(blocking[1:]) + len(expired[1:])
        return Decision.FAIL, (f"FAIL{note}: {'; '.join(what)}"
                               + (f" (+{more} more)" if more else "")), []
    metrics = sum(len(t.metrics) for t in timing)
    undecided = list(unjudged)
    if no_timing:
        undecided += [f"{t.profile}/{t.workload} was timed although --no-timing was given"
                      for t in timing]
    else:
        undecided += timing_undecided(timing)
        if not metrics:
            undecided.append("no timing metric was decided (pass --no-timing to gate on the "
                             "checks alone)")
    if undecided:
        return Decision.INCONCLUSIVE, (f"INCONCLUSIVE{note}: not judged: {undecided[0]}"
                                       + (f" (+{len(undecided) - 1} more)"
                                          if len(undecided) > 1 else "")), undecided
    accepted = sum(f.accepted for f in findings)
    timed = ("timing NOT measured (--no-timing)" if no_timing
             else f"timing WITHIN the tolerated slowdown on {metrics} metric(s)")
    return Decision.PASS, (f"PASS{note}: candidate clean on {len(timing) or 'every'} profile "
                           f"run(s), {timed}"
                           + (f", {accepted} accepted difference(s)" if accepted else "")
                           + ("; proofs not verified on " + ", ".join(
                               f"{k} ({why})" for k, why in unverified.items())
                              if unverified else "")), []


def timing_findings(timing: Sequence[ProfileTiming]) -> list[Finding]:
    """Blocking findings of the timing arms: each regression (WORSE) and each
    job of the candidate that failed, was lost or gave a proof that does not verify."""
    out = [Finding(check=f"timing/{m.metric}", profile=t.profile, workload=t.workload,
                   message=m.render(), kind="timing",
                   evidence={"ratio": m.ratio, "ratio_ci": list(m.ratio_ci),
                             "p_value": m.p_value, "n_pairs": m.n_pairs,
                             "max_slowdown": m.max_slowdown, "margin": m.margin},
                   started_unix_s=t.started_unix_s, stopped_unix_s=t.stopped_unix_s)
           for t in timing for m in t.metrics if m.regression]
    out += [Finding(check="timing-batch/jobs", profile=t.profile, workload=t.workload,
                    message=f"the candidate's timing batch: {fault}", kind="check",
                    evidence={"rounds": t.rounds}, started_unix_s=t.started_unix_s,
                    stopped_unix_s=t.stopped_unix_s)
            for t in timing for fault in t.faults]
    return out
