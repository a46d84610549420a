"""allure-results from the oracle records (allure-python-commons' model and file logger):
one result per record with its message attached, ``environment.properties`` (run id, images,
profiles, verdict) and ``categories.json`` (failures grouped by kind)."""

from __future__ import annotations

import hashlib
import uuid
from pathlib import Path
from typing import Any

from allure_commons.logger import AllureFileLogger
from allure_commons.model2 import Attachment, Label, Parameter, StatusDetails, TestResult

from proofdiff.model import serde
from proofdiff.model.result import DifferentialResult
from proofdiff.model.status import Outcome

__all__ = ["CATEGORIES", "write_allure"]

_STATUS = {Outcome.PASS: "passed", Outcome.FAIL: "failed", Outcome.ERROR: "broken",
           Outcome.SKIPPED: "skipped", Outcome.INCONCLUSIVE: "unknown"}

#: Allure categories: each matches results by the message the oracles write.
CATEGORIES: list[dict[str, Any]] = [
    {"name": "Invalid proofs (the independent verifier rejected a partition)",
     "matchedStatuses": ["failed"], "messageRegex": ".*(INVALID|do not verify|does not verify).*"},
    {"name": "Isolation (colliding or reused ids, shared proofs, lost or stuck jobs)",
     "matchedStatuses": ["failed"], "messageRegex": "(?s)^isolation.*"},
    {"name": "Daemon could not run (start, readiness, params)",
     "matchedStatuses": ["failed", "broken"],
     "messageRegex": ".*(did not answer GetStatus|exited with code|params are mounted|not "
                     "present locally|did not start).*"},
    {"name": "Timing (throughput, concurrency, false alarms)", "matchedStatuses": ["failed"],
     "messageRegex": ".*(A/A|throughput|jobs in progress).*"},
]


def write_allure(result: DifferentialResult, run_dir: Path) -> Path:
    """Write ``run_dir/allure-results/`` (read it with ``allure serve``); returns the dir."""
    out = run_dir / "allure-results"
    logger = AllureFileLogger(out, clean=True)  # type: ignore[no-untyped-call]
    start = int(result.created_unix_s * 1000)
    for r in result.records:
        rid = str(uuid.uuid4())
        full = f"proofdiff.{r.suite}.{r.oracle}[{r.profile}-{r.workload}{'-' + r.image if r.image else ''}]"
        att = f"{uuid.uuid4()}-attachment.txt"
        logger.report_attached_data(body=r.message, file_name=att)  # type: ignore[no-untyped-call]
        logger.report_result(TestResult(  # type: ignore[no-untyped-call]
            uuid=rid, historyId=hashlib.md5(full.encode()).hexdigest(), fullName=full,
            name=f"{r.check} [{r.profile}]", status=_STATUS[r.outcome], start=start, stop=start,
            statusDetails=StatusDetails(message=r.message.splitlines()[0] if r.message else ""),
            labels=[Label("parentSuite", "proofdiff"), Label("suite", r.suite),
                    Label("subSuite", r.profile), Label("tag", r.workload)],
            parameters=[Parameter("profile", r.profile), Parameter("workload", r.workload)],
            attachments=[Attachment(name=f"{r.check} {r.profile}: {r.outcome.value}",
                                    source=att, type="text/plain")]))
    env = {"proofdiff.run_id": result.run_id, "verdict": result.verdict.value,
           "images": ",".join(f"{i.tag}@{i.digest}" for i in result.images),
           "profiles": ",".join(result.profiles)}
    (out / "environment.properties").write_text(
        "".join(f"{k}={str(v).replace(chr(10), ' ')}\n" for k, v in env.items()), encoding="utf-8")
    (out / "categories.json").write_bytes(serde.encode(CATEGORIES))
    return out
