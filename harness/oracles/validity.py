"""Validity, per profile: every COMPLETED proof verifies, partition by partition, against its
own job's public inputs (length = partitions x 192 bytes), and every job completes.

* ``proofs``: fails naming each invalid proof and its partitions; an error when nothing could
  be verified (no proof came back, or the verifier failed). A profile whose client hands out
  no proof bytes (real cuzk-bench's ``batch`` prints timings only) is *unverifiable*: SKIPPED
  with the client's reason and ``evidence["unverifiable"]``, never an ERROR, so the other
  oracles and their divergences decide the run (:func:`proofdiff.core.verdict.unverifiable`
  says when another profile's verified proofs cover it).
* ``jobs``: fails naming each job that did not come back COMPLETED, with its status and text.

That the profiles agree is the divergence of these records (proofdiff.core.verdict).
"""

from __future__ import annotations

from typing import Any

from proofdiff.model.jobs import JobRecord
from proofdiff.model.oracle_records import OracleRecord, ProofCounts
from proofdiff.model.runs import RunRecord
from proofdiff.model.status import Outcome
from proofdiff.model.workload import PROOF_BYTES_PER_PARTITION

from proofdiff.oracles.evidence import Evidence, Recorder
from proofdiff.oracles.suite_table import SUITES

__all__ = ["ORACLES", "evaluate", "judge_run"]

#: The oracles of this suite, stated once in the suite table.
ORACLES = SUITES["validity"].oracles


def _bad(j: JobRecord, kind: str, reason: str, parts: list[int] | None = None) -> dict[str, Any]:
    return {"index": j.index, "job": j.job, "request_id": j.request_id,
            "status": j.status.value, "kind": kind, "reason": reason,
            "bad_partitions": parts or []}


def _proof_problem(j: JobRecord, partitions: int) -> dict[str, Any] | None:
    expected = partitions * PROOF_BYTES_PER_PARTITION
    if len(j.proof) != expected:
        why = f"proof is {len(j.proof)} bytes, expected {expected} ({partitions} partitions x " \
              f"{PROOF_BYTES_PER_PARTITION})" + (f": {j.error}" if j.error else "")
        return _bad(j, "invalid", why)
    if j.verdict is None:
        return _bad(j, "invalid", "no verdict from the verifier")
    if not j.verdict.valid:
        parts = j.verdict.bad_partitions()
        why = f"partitions {parts} do not verify" if parts else "does not verify"
        return _bad(j, "invalid", why + (f" ({j.verdict.error})" if j.verdict.error else ""), parts)
    return None


def _shared_ids(jobs: list[JobRecord],
                bad: list[dict[str, Any]]) -> tuple[list[str], tuple[str, ...]]:
    """The bad jobs' request ids that another job of the flow also had, and the delta paths
    this evidence names for the suspects: ``job_ids``, and ``concurrency`` when two jobs with
    one id were in flight at the same time (their send-to-answer intervals overlap)."""
    by_id: dict[str, list[JobRecord]] = {}
    for j in jobs:
        if j.request_id:
            by_id.setdefault(j.request_id, []).append(j)
    shared = sorted({b["request_id"] for b in bad if len(by_id.get(b["request_id"], [])) > 1})
    if not shared:
        return [], ()
    overlap = any(a.started_unix_s < b.started_unix_s + b.wall_ms / 1e3 and
                  b.started_unix_s < a.started_unix_s + a.wall_ms / 1e3
                  for rid in shared for i, a in enumerate(by_id[rid]) for b in by_id[rid][i + 1:])
    return shared, ("job_ids", "concurrency") if overlap else ("job_ids",)


def judge_run(rec: Recorder, run: RunRecord) -> None:
    """The ``proofs`` and ``jobs`` records of one run."""
    flow = run.workload_flow
    if flow is None:
        why = "; ".join(run.errors) or "the workload was never sent"
        for o in ORACLES:
            rec(o, run.profile, Outcome.ERROR, f"profile {run.profile!r} on {run.workload}: the "
                f"run could not be carried out: {why}")
        return
    jobs = [j for j in flow.jobs if not j.await_only]
    done = [j for j in jobs if j.completed]
    unverified = [j for j in done if j.unverifiable and not j.proof]
    checked = [j for j in done if j not in unverified]
    bad = [b for j in checked if (b := _proof_problem(j, run.partitions_of(j.job))) is not None]
    failed = [_bad(j, "failed", j.error or "no error text") for j in jobs if not j.completed]
    valid = len(checked) - len(bad)
    counts = ProofCounts(total=len(jobs), completed=len(done), valid=valid, invalid=len(bad),
                         failed=len(failed), unverified=len(unverified),
                         unverified_reasons=tuple(sorted({j.unverifiable for j in unverified})))
    head = (f"validity of profile {run.profile!r} on {run.workload}: {valid}/{len(jobs)} valid, "
            f"{len(done)} completed")
    lines = [f"  {b['job']} (id={b['request_id']}, {b['status']}): {b['kind']}: {b['reason']}"
             for b in bad]
    if unverified:
        lines.append(f"  {len(unverified)} completed proof(s) not verified: "
                     f"{unverified[0].unverifiable}")
    ev = {"bad": bad}
    shared, names = _shared_ids(jobs, [*bad, *failed])
    if shared:
        lines.append(f"  {len(shared)} request id(s) were sent for more than one job: {shared[:3]}"
                     + (", while they were in flight together" if "concurrency" in names else ""))
    if flow.errors:
        rec("proofs", run.profile, Outcome.ERROR, "\n".join(
            [head, *lines, *(f"  error: {e}" for e in flow.errors)]), evidence=ev, counts=counts)
    elif bad:
        rec("proofs", run.profile, Outcome.FAIL, "\n".join([head + ": INVALID", *lines]),
            evidence={**ev, "shared_request_ids": shared}, names=names, counts=counts)
    elif not done:
        rec("proofs", run.profile, Outcome.ERROR, "\n".join(
            [f"{head}: no job completed, so no proof could be verified", *lines]),
            evidence=ev, counts=counts)
    elif not checked:
        rec("proofs", run.profile, Outcome.SKIPPED, "\n".join(
            [f"{head}: unverifiable: the client handed out no proof bytes", *lines]),
            evidence={**ev, "unverifiable": unverified[0].unverifiable}, counts=counts)
    else:
        rec("proofs", run.profile, Outcome.PASS, "\n".join([f"{head}: every verified proof is "
            f"valid ({valid} checked partition by partition)", *lines]), evidence=ev,
            counts=counts)
    flines = [f"  {b['job']} (id={b['request_id']}, {b['status']}): {b['reason']}" for b in failed]
    if failed:
        rec("jobs", run.profile, Outcome.FAIL, "\n".join(
            [f"profile {run.profile!r} on {run.workload}: {len(failed)} of {len(jobs)} job(s) did "
             "not complete", *flines]), evidence={"bad": failed, "shared_request_ids": shared},
            names=names, counts=counts)
    elif not jobs:
        rec("jobs", run.profile, Outcome.ERROR, f"profile {run.profile!r} on {run.workload}: the "
            "workload flow sent no job", counts=counts)
    else:
        rec("jobs", run.profile, Outcome.PASS, f"profile {run.profile!r} on {run.workload}: all "
            f"{len(jobs)} job(s) COMPLETED", counts=counts)


def evaluate(ev: Evidence, workload: str) -> list[OracleRecord]:
    """The validity records of every profile on ``workload``."""
    rec = Recorder(ev, "validity", workload)
    for name in ev.profiles:
        judge_run(rec, ev.run(name, workload))
    return rec.records
