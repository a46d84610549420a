"""The differential's report view: its result as a page (``index.html.j2``: the verdict and
its exit code first, then each divergence with its failing jobs, partitions and suspects,
errors, the failing records, the passing ones folded, plots of latency per profile, jobs in
flight and timing samples, the side-by-side table, GPU telemetry, config deltas and the jobs),
its records as checks, and its timing samples in pytest-benchmark's format."""

from __future__ import annotations

import hashlib
from typing import Any

from proofdiff.model.oracle_records import OracleRecord
from proofdiff.model.result import DifferentialResult
from proofdiff.model.status import Outcome
from proofdiff.report.benchmark_json import benchmark_files
from proofdiff.report.gpu_section import gpu_rows
from proofdiff.report.plots_ahead import plots
from proofdiff.report.run_plots import samples_svg
from proofdiff.report.table_rows import side_by_side
from proofdiff.report.view import Check, CheckStatus, ReportView

__all__ = ["CATEGORIES", "EXIT_MEANING", "STATUS", "differential_view", "failing_jobs"]

#: an oracle outcome as a check's status
STATUS = {Outcome.PASS: CheckStatus.PASSED, Outcome.FAIL: CheckStatus.FAILED,
          Outcome.ERROR: CheckStatus.BROKEN, Outcome.SKIPPED: CheckStatus.SKIPPED,
          Outcome.INCONCLUSIVE: CheckStatus.UNKNOWN}
_ORDER = {Outcome.FAIL: 0, Outcome.ERROR: 1, Outcome.SKIPPED: 2, Outcome.INCONCLUSIVE: 3,
          Outcome.PASS: 4}

#: Allure categories: each matches results by the message the oracles write.
CATEGORIES: tuple[dict[str, Any], ...] = (
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
)


def _check(result: DifferentialResult, r: OracleRecord, start_ms: int) -> Check:
    """One record as a check; a record the allowlist accepts is PASSED, its text led by the
    entry and its reason (as the gate shows an accepted finding), the record's own outcome kept
    in that text."""
    acc = result.acceptance_of(r)
    head = (r.message.splitlines() or [r.outcome.value])[0]
    if acc is not None:
        why = (f"accepted by {acc.entry} until {acc.expires}: {acc.reason} ({acc.link}); "
               f"the check's outcome: {r.outcome.value}")
        status, head, text = CheckStatus.PASSED, f"{why}: {head}", f"{why}\n\n{r.message}"
    else:
        status, text = STATUS[r.outcome], r.message
    return Check(suite=r.suite, name=r.oracle, status=status, message=head, text=text,
                 profile=r.profile, workload=r.workload + (f"-{r.image}" if r.image else ""),
                 start_ms=int(r.started_unix_s * 1000) or start_ms,
                 stop_ms=int(r.stopped_unix_s * 1000) or start_ms,
                 history_id=hashlib.md5(f"{r.suite}.{r.oracle}[{r.profile}-{r.workload}]"
                                        .encode()).hexdigest())


#: What each exit code of ``proofdiff run`` means (docs/guide/run.md, "Exit codes").
EXIT_MEANING = {0: "every selected check passed on every profile",
                1: "a check fails on a profile but not on the baseline",
                2: "failures on every profile alike, or a check skipped or undecided",
                3: "the run could not be carried out", 130: "interrupted"}


def failing_jobs(result: DifferentialResult, profile: str, workload: str) -> list[dict[str, str]]:
    """The jobs of ``profile`` on ``workload`` that did not give a valid proof, every flow's
    (workload first): flow, job, request_id, status (``INVALID`` for a COMPLETED proof that
    does not verify), partitions (those that do not verify, '' when none was judged) and
    error; [] when the run is absent or every job gave a valid or unverifiable proof."""
    run = result.run(profile, workload)
    out: list[dict[str, str]] = []
    for flow in run.flows if run else ():
        for j in flow.jobs:
            bad = j.verdict is not None and not j.verdict.valid
            if j.await_only or (j.completed and not bad):
                continue
            out.append({"flow": f"{flow.name} {flow.label}".strip(), "job": j.job,
                        "request_id": j.request_id, "partitions": ", ".join(
                            map(str, j.verdict.bad_partitions())) if j.verdict else "",
                        "status": "INVALID" if j.completed else j.status.value,
                        "error": j.error or (j.verdict.error or "" if j.verdict else "")})
    return out


def differential_view(result: DifferentialResult) -> ReportView:
    """The view of one differential result (module docstring)."""
    # first: a drawing of these plots made while the run proved may still be under way
    run_plots = plots(list(result.profiles), result.workloads, result.runs)
    start = int(result.created_unix_s * 1000)
    checks = [_check(result, r, start) for r in result.records]
    if result.errors:
        checks.append(Check(suite="run", name="run", status=CheckStatus.BROKEN,
                            message=result.errors[0].splitlines()[0],
                            text="\n\n".join(result.errors), start_ms=start, stop_ms=start))
    records = sorted(result.records, key=lambda r: (_ORDER[r.outcome], r.suite, r.profile))
    timing = [(r, samples_svg(r.timing, f"{r.oracle} {r.profile}")) for r in result.records
              if r.timing is not None and (r.timing.left_samples or r.timing.right_samples)]
    return ReportView(
        run_id=result.run_id, kind="run", decision=result.verdict.value,
        decision_line=result.verdict_line, exit_code=result.exit_code,
        exit_meaning=EXIT_MEANING.get(result.exit_code, ""), result=result,
        template="index.html.j2",
        context={"records": records, "timing": timing, "rows": side_by_side(result),
                 "gpu_rows": gpu_rows(result),
                 "failing_jobs": lambda p, w: failing_jobs(result, p, w),
                 "plots": run_plots},
        checks=tuple(checks), categories=CATEGORIES,
        environment={"proofdiff.run_id": result.run_id, "verdict": result.verdict.value,
                     "images": ",".join(f"{i.tag}@{i.digest}" for i in result.images),
                     "profiles": ",".join(result.profiles)},
        files=benchmark_files(result))
