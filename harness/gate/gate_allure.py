"""allure-results of a gate (allure-python-commons' model and file logger): one result per
finding (failed; passed with the entry's reason when the allowlist accepts it), one per timing
verdict (failed on a regression, unknown when INCONCLUSIVE), one for the verifier cross-check
and one for the decision; ``environment.properties`` ties them to both image digests."""

from __future__ import annotations

import hashlib
import uuid
from pathlib import Path

from allure_commons.logger import AllureFileLogger
from allure_commons.model2 import Attachment, Label, Parameter, StatusDetails, TestResult

from proofdiff.gate.gate_result import GateResult

__all__ = ["write_gate_allure"]


def _result(logger: AllureFileLogger, start_ms: int, *, full: str, name: str, status: str,
            message: str, suite: str, profile: str = "") -> None:
    att = f"{uuid.uuid4()}-attachment.txt"
    logger.report_attached_data(body=message, file_name=att)  # type: ignore[no-untyped-call]
    logger.report_result(TestResult(  # type: ignore[no-untyped-call]
        uuid=str(uuid.uuid4()), historyId=hashlib.md5(full.encode()).hexdigest(), fullName=full,
        name=name, status=status, start=start_ms, stop=start_ms,
        statusDetails=StatusDetails(message=message.splitlines()[0] if message else ""),
        labels=[Label("parentSuite", "proofdiff gate"), Label("suite", suite),
                Label("subSuite", profile or "gate")],
        parameters=[Parameter("profile", profile)] if profile else [],
        attachments=[Attachment(name=name, source=att, type="text/plain")]))


def write_gate_allure(result: GateResult, run_dir: Path) -> Path:
    """Write ``run_dir/allure-results/`` (read it with ``allure serve``); returns the dir."""
    out = run_dir / "allure-results"
    logger = AllureFileLogger(out, clean=True)  # type: ignore[no-untyped-call]
    start = int(result.created_unix_s * 1000)
    for f in result.findings:
        text = (f"accepted by {f.accepted_by}: {f.reason} ({f.link})\n\n{f.message}"
                if f.accepted else f.message)
        _result(logger, start, full=f"gate.{f.kind}.{f.check}[{f.profile}-{f.workload}]",
                name=f"{f.check} [{f.profile}]", status="passed" if f.accepted else "failed",
                message=text, suite=f.kind, profile=f.profile)
    for t in result.timing:
        for m in t.metrics:
            status = ("failed" if m.regression else "unknown" if m.verdict == "INCONCLUSIVE"
                      else "passed")
            _result(logger, start, full=f"gate.timing.{m.metric}[{t.profile}-{t.workload}]",
                    name=f"timing/{m.metric} [{t.profile}]", status=status, message=m.text,
                    suite="timing", profile=t.profile)
    if result.verifier_check is not None:
        c = result.verifier_check
        status = "skipped" if c.agreed is None else "passed" if c.agreed else "broken"
        text = c.note or (f"{c.proofs} proofs, the pinned verifier and {c.baseline_image}'s "
                          "agree" if c.agreed else "\n".join(c.disagreements))
        _result(logger, start, full="gate.verifier.cross-check", name="verifier cross-check",
                status=status, message=text, suite="verifier")
    _result(logger, start, full="gate.decision", name="decision",
            status="passed" if result.exit_code == 0 else
            "broken" if result.decision.value in ("error", "interrupted") else "failed",
            message=result.decision_line, suite="decision")
    env = {"proofdiff.run_id": result.run_id, "decision": result.decision.value,
           "candidate": f"{result.candidate.image}@{result.candidate.digest}",
           "baseline": f"{result.baseline.image}@{result.baseline.digest}",
           "verifier": (f"{result.verifier.image}@{result.verifier.digest}"
                        if result.verifier else ""),
           "profiles": ",".join(result.profiles)}
    (out / "environment.properties").write_text(
        "".join(f"{k}={str(v).replace(chr(10), ' ')}\n" for k, v in env.items()), encoding="utf-8")
    return out
