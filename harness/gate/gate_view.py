"""The gate's report directory: evidence tied to both image digests.

* ``summary.json``: the :class:`~proofdiff.gate.gate_result.GateResult` (versioned), and beside it
  ``gate.schema.json``, its JSON Schema (shipped with the package, :func:`schema`);
* ``index.html``: the decision and its exit code first, then what blocks the push (each
  finding, a regression with a plot of both sides' samples: matplotlib, inline SVG), the
  accepted findings, the allowlist's stale entries, each profile's timing verdicts (folded
  unless one regressed or stopped);
* ``junit.xml`` and ``allure-results/``: one check per finding, per timing metric, the
  verifier cross-check and the decision (the one writer, :mod:`proofdiff.report.writer`);
* ``statement.intoto.json``: an in-toto Statement v1 (https://github.com/in-toto/attestation,
  ``spec/v1/statement.md``: ``_type``, ``subject`` with a ``sha256`` digest, ``predicateType``,
  ``predicate``) whose subject is the candidate image, so that an admission policy can check
  what was tested and decided;
* ``differential/``: the candidate's own bench vs prod report (written by the differential).
"""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import Any

import msgspec

from proofdiff.gate.gate_result import Decision, GateResult
from proofdiff.model.status import Comparison
from proofdiff.report.run_plots import samples_svg
from proofdiff.report.view import Check, CheckStatus, ReportView
from proofdiff.report.writer import write_view

__all__ = ["PREDICATE_TYPE", "SCHEMA_FILE", "gate_view", "intoto_statement", "schema",
           "write_gate_report"]

#: The in-toto predicate type of a proofdiff gate decision.
PREDICATE_TYPE = "https://github.com/proofdiff/proofdiff/gate/v1"
SCHEMA_FILE = "gate.schema.json"
_STATEMENT = "https://in-toto.io/Statement/v1"
#: What each exit code of ``proofdiff gate`` means (docs/guide/gate.md).
EXIT_MEANING = {0: "the candidate is clean and not slower: push it",
                1: "a divergence, a failing check or a regression: the push is blocked",
                2: "timing undecided within the budget: blocked, retry",
                3: "the gate could not run", 130: "interrupted"}


def schema() -> dict[str, Any]:
    """The JSON Schema of summary.json, as generated from :class:`GateResult` (msgspec)."""
    return msgspec.json.schema(GateResult)


def _shipped_schema() -> str:
    return resources.files("proofdiff.gate").joinpath(SCHEMA_FILE).read_text(encoding="utf-8")


def intoto_statement(result: GateResult) -> dict[str, Any]:
    """The in-toto Statement of the decision (module docstring); the subject's digest is the
    candidate's image id (its config digest; registry digests, if any, in annotations)."""
    cand = result.candidate
    subject: dict[str, Any] = {"name": cand.tag,
                               "digest": {"sha256": cand.digest.removeprefix("sha256:")}}
    if cand.repo_digests:
        subject["annotations"] = {"repo_digests": list(cand.repo_digests)}
    return {
        "_type": _STATEMENT,
        "subject": [subject],
        "predicateType": PREDICATE_TYPE,
        "predicate": {
            "decision": result.decision.value, "decision_line": result.decision_line,
            "run_id": result.run_id, "created_unix_s": result.created_unix_s, "aa": result.aa,
            "baseline": msgspec.to_builtins(result.baseline),
            "verifier": msgspec.to_builtins(result.verifier) if result.verifier else None,
            "verifier_check": (msgspec.to_builtins(result.verifier_check)
                               if result.verifier_check else None),
            "profiles": sorted(result.profiles), "workloads": list(result.workloads),
            "findings": [{"check": f.check, "profile": f.profile, "workload": f.workload,
                          "kind": f.kind, "accepted": f.accepted, "accepted_by": f.accepted_by}
                         for f in result.findings],
            "timing": [{"profile": t.profile, "workload": t.workload, "metric": m.metric,
                        "verdict": m.verdict, "regression": m.regression, "ratio": m.ratio,
                        "ratio_ci": list(m.ratio_ci), "n_pairs": m.n_pairs}
                       for t in result.timing for m in t.metrics],
            "commit": result.commit.get("id", ""),
        },
    }


def _ms(unix_s: float, default_ms: int) -> int:
    """``unix_s`` in ms since the epoch; ``default_ms`` when unknown (0)."""
    return int(unix_s * 1000) if unix_s > 0 else default_ms


def _checks(result: GateResult) -> list[Check]:
    """One check per finding (FAILED; PASSED with the entry's reason when the allowlist accepts
    it), per timing verdict (FAILED on a regression, UNKNOWN when INCONCLUSIVE), the verifier
    cross-check, the pinned verifier on a tampered proof of each profile, and the decision."""
    t = int(result.created_unix_s * 1000)
    out = []
    for f in result.findings:  # each at its own real times (Allure's timeline); 0 = unknown
        text = (f"accepted by {f.accepted_by}: {f.reason} ({f.link})\n\n{f.message}"
                if f.accepted else f.message)
        out.append(Check(suite=f"gate-{f.kind}", name=f.check, profile=f.profile,
                         workload=f.workload, status=CheckStatus.PASSED if f.accepted
                         else CheckStatus.FAILED, message=text.splitlines()[0] if text else "",
                         text=text, start_ms=_ms(f.started_unix_s, t),
                         stop_ms=_ms(f.stopped_unix_s, t)))
    for pt in result.timing:
        for m in pt.metrics:
            status = (CheckStatus.FAILED if m.regression else CheckStatus.UNKNOWN
                      if m.verdict is Comparison.INCONCLUSIVE else CheckStatus.PASSED)
            out.append(Check(suite="gate-timing", name=m.metric, profile=pt.profile,
                             workload=pt.workload, status=status, message=m.line(),
                             text=m.render(), start_ms=_ms(pt.started_unix_s, t),
                             stop_ms=_ms(pt.stopped_unix_s, t)))
    c = result.verifier_check
    if c is not None:
        status = (CheckStatus.SKIPPED if c.agreed is None else CheckStatus.PASSED if c.agreed
                  else CheckStatus.BROKEN)
        text = c.note or (f"{c.proofs} proofs, the pinned verifier and {c.baseline_image}'s "
                          "agree" if c.agreed else "\n".join(c.disagreements))
        out.append(Check(suite="gate-verifier", name="cross-check", status=status,
                         message=text.splitlines()[0] if text else "", text=text,
                         start_ms=_ms(c.started_unix_s, t), stop_ms=_ms(c.stopped_unix_s, t)))
    for tp in result.tamper:  # the pinned verifier's positive control, per profile
        status = (CheckStatus.SKIPPED if not tp.job else CheckStatus.PASSED if tp.rejected
                  else CheckStatus.BROKEN)
        text = tp.note or (f"{tp.job} with a byte flipped: the pinned verifier says "
                           f"{tp.verdict}")
        out.append(Check(suite="gate-verifier", name="rejects-tampered", profile=tp.profile,
                         workload=tp.workload, status=status, message=text, text=text,
                         start_ms=t, stop_ms=t))
    status = (CheckStatus.PASSED if result.exit_code == 0 else CheckStatus.BROKEN
              if result.decision in (Decision.ERROR, Decision.INTERRUPTED) else CheckStatus.FAILED)
    out.append(Check(suite="gate", name="decision", status=status, message=result.decision_line,
                     text=result.decision_line,
                     start_ms=_ms(result.started_unix_s, t - int(result.wall_s * 1000)),
                     stop_ms=t))
    return out


def gate_view(result: GateResult) -> ReportView:
    """The gate's report view: summary.json (schema beside it), the page with a plot of both
    sides' samples per metric, the checks, and the in-toto Statement on the candidate."""
    plots = {(t.profile, t.workload, m.metric):
             samples_svg(m, f"{t.profile}/{t.workload} {m.metric}", ("baseline", "candidate"))
             for t in result.timing for m in t.metrics if m.left_samples}
    env = {"proofdiff.run_id": result.run_id, "decision": result.decision.value,
           "candidate": f"{result.candidate.tag}@{result.candidate.digest}",
           "baseline": f"{result.baseline.tag}@{result.baseline.digest}",
           "verifier": (f"{result.verifier.tag}@{result.verifier.digest}"
                        if result.verifier else ""),
           "profiles": ",".join(result.profiles)}
    return ReportView(
        run_id=result.run_id, kind="gate", decision=result.decision.value,
        decision_line=result.decision_line, exit_code=result.exit_code,
        exit_meaning=EXIT_MEANING.get(result.exit_code, ""), result=result,
        template="gate.html.j2", context={"plots": plots}, checks=tuple(_checks(result)),
        environment=env,
        files={SCHEMA_FILE: _shipped_schema().encode("utf-8"),
               "statement.intoto.json": json.dumps(intoto_statement(result), indent=2).encode()})


def write_gate_report(result: GateResult, run_dir: Path) -> Path:
    """Write the gate's report into ``run_dir`` (the one writer); returns ``run_dir``."""
    return write_view(lambda: gate_view(result), run_dir)
