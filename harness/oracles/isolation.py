"""Isolation, per profile: no job receives another job's proof; duplicates are rejected clearly
or isolated; nothing is lost, stuck or returned twice.

Flows, through the profile's driver (each proof then verified against EVERY input the flow
sent, which tells whose proof it is):

* ``burst`` (drivers that choose ids): up to 4 distinct inputs submitted together, slots 0 and
  1 sharing ONE request id (colliding ids with distinct inputs, as curio retries make them),
  the others unique (a workload of 2 inputs sends input 0 again as unique slot 2); then one more
  ``AwaitProof`` of the shared id, which must say NOT_FOUND.
* ``reuse``: once the burst is answered, the id of slot 2 again, with inputs slot 2 did not
  prove (slot 3's when there are 4): the answer must be the proof of the NEW inputs.
* ``distinct`` (drivers that cannot choose ids, bench-cli): the ``k`` inputs together.

Oracles: ``hang`` (the hang guard gave up: the stuck ids), ``lost-or-twice`` (a job lost,
FAILED, or answered twice), ``colliding-ids`` (the two answers for the shared id are the proofs
of its two inputs, one each, or a clear rejection of the second: both rejected loses the
first), ``reused-id``, ``distinct-inputs`` (every unique-id job's proof is its own, and no two
distinct inputs share a proof or a partition proof, in the flows or in the workload run). Each
is an error, not a pass, when it had nothing to judge: ``hang`` judges the answers that came
with a proof, so flows where every job FAILED are an error for it.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Sequence
from typing import Any

from proofdiff.drivers.protocol import Mode
from proofdiff.model.jobs import FlowRecord, JobRecord, JobSpec
from proofdiff.model.oracle_records import OracleRecord
from proofdiff.model.status import JobStatus, Outcome
from proofdiff.model.workload import PROOF_BYTES_PER_PARTITION, is_slow_workload

from proofdiff.oracles.evidence import Evidence, Recorder
from proofdiff.oracles.suite_table import SUITES

__all__ = ["ORACLES", "Finding", "evaluate", "findings"]

#: The oracles of this suite, stated once in the suite table.
ORACLES = SUITES["isolation"].oracles
_CLEAR_REJECT = re.compile(r"duplicate|already (exists|in use|submitted|registered)", re.I)
Finding = tuple[str, str]  # (oracle, message)


def _chunks(proof: bytes) -> list[bytes]:
    n = PROOF_BYTES_PER_PARTITION
    return [proof[i:i + n] for i in range(0, len(proof) - n + 1, n)]


def _identical(items: Sequence[tuple[str, JobRecord]]) -> list[Finding]:
    """Pairs of distinct inputs with byte-identical proofs or partition proofs."""
    out = []
    for i, (la, a) in enumerate(items):
        for lb, b in items[i + 1:]:
            if a.job == b.job or not a.proof or not b.proof:
                continue
            if a.proof == b.proof:
                out.append(("distinct-inputs", f"{la} (inputs {a.job}) and {lb} (inputs {b.job}) "
                            f"returned byte-identical proofs ({len(a.proof)} B)"))
                continue
            same = [(x, y) for x, ca in enumerate(_chunks(a.proof))
                    for y, cb in enumerate(_chunks(b.proof)) if ca == cb]
            if same:
                parts = ", ".join(f"{la} partition {x} = {lb} partition {y}" for x, y in same)
                out.append(("distinct-inputs", f"distinct inputs {a.job} and {b.job} got "
                            f"byte-identical partition proofs: {parts}"))
    return out


def _owners(j: JobRecord) -> list[str]:
    return sorted(j.verdict.owners) if j.verdict else []


def _where(flow: FlowRecord, j: JobRecord) -> str:
    return f"{flow.name} slot {j.index} (id={j.request_id})"


def findings(flows: Sequence[FlowRecord], workload_flow: FlowRecord | None,
             dup_id: str) -> tuple[list[Finding], dict[str, int]]:
    """Every isolation problem in ``flows`` (and, for identical proofs, the workload flow), and
    how many answers each oracle had to judge (``judged``)."""
    f: list[Finding] = []
    judged = {o: 0 for o in ORACLES}
    for flow in flows:
        # an answer with a proof shows the daemon kept proving through the flow; a flow where
        # every job FAILED at once never loaded the daemon, so it says nothing about a hang
        judged["hang"] += sum(1 for j in flow.jobs if j.completed and not j.await_only)
        if flow.stall:
            ids = [j.request_id or j.job for j in flow.stuck()]
            if ids:
                f.append(("hang", f"the daemon stopped answering ({flow.stall}); stuck job ids: "
                          f"{', '.join(ids)}; read its log for a stuck queue or lock"))
        f += [("lost-or-twice", f"{flow.name}: {e}") for e in flow.errors]
        for j in flow.jobs:
            judged["lost-or-twice"] += 1
            where = _where(flow, j)
            if j.await_only:
                if j.completed or j.status is JobStatus.FAILED:
                    sent_as = (f" (as its partitions {j.job_id})" if "," in j.job_id else "")
                    f.append(("lost-or-twice", f"one more AwaitProof({j.request_id!r}){sent_as} "
                              f"after both jobs were answered returned {j.status.value} with a "
                              f"{len(j.proof)} B proof instead of NOT_FOUND"))
                continue
            shared = j.request_id == dup_id and flow.name == "burst"
            if j.status in (JobStatus.LOST, JobStatus.ERROR, JobStatus.UNKNOWN,
                            JobStatus.CANCELLED, JobStatus.TIMEOUT):
                f.append(("lost-or-twice", f"{where}: {j.status.value}: {j.error}"))
            elif j.status is JobStatus.FAILED and not (shared and _CLEAR_REJECT.search(j.error)):
                f.append(("lost-or-twice", f"{where} FAILED: {j.error or '(no text)'}"))
    burst = next((fl for fl in flows if fl.name == "burst"), None)
    if burst is not None:
        f += _colliding(burst, dup_id, judged)
    earlier: dict[tuple[str, bytes], str] = {}  # (id, proof) -> where it was answered first
    for flow in flows:
        for j in flow.completed():
            earlier.setdefault((j.request_id, j.proof), f"{_where(flow, j)}, inputs {j.job}")
    for flow in flows:
        for j in flow.completed():
            if flow.name == "burst" and j.request_id == dup_id:
                continue
            oracle = "reused-id" if flow.name == "reuse" else "distinct-inputs"
            judged[oracle] += 1
            own = _owners(j)
            if j.job not in own:
                first = earlier.get((j.request_id, j.proof), "")
                # a reuse flow's proof is verified against its own inputs only: the answer a
                # daemon kept for the id (cuzk-daemon keeps every completed job) is named here
                other = (f"; it is the proof of {', '.join(own)}" if own
                         else f"; it is byte-identical to the earlier answer for this id "
                              f"({first}): the daemon answered the reused id with its old result"
                         if oracle == "reused-id" and first and _where(flow, j) not in first
                         else "; it verifies against no input sent")
                f.append((oracle, f"{_where(flow, j)} got a proof that does not verify against "
                          f"its own inputs {j.job}" + other))
    items = [(f"{fl.name} slot {j.index}", j) for fl in flows for j in fl.completed()]
    f += _identical(items)
    if workload_flow is not None:
        f += _identical([(f"workload job {j.index}", j) for j in workload_flow.completed()])
    return f, judged


def _colliding(burst: FlowRecord, dup_id: str, judged: dict[str, int]) -> list[Finding]:
    dup = [j for j in burst.jobs if j.request_id == dup_id and not j.await_only]
    sent = {j.job for j in dup}
    rejected = [j for j in dup if j.status is JobStatus.FAILED and _CLEAR_REJECT.search(j.error)]
    if dup and all(j in rejected for j in dup if not j.completed):
        judged["colliding-ids"] += len(rejected)
    done = [j for j in dup if j.completed]
    judged["colliding-ids"] += len(done)
    out = []
    if len(dup) >= 2 and len(rejected) == len(dup):
        # a duplicate is the request that came second: the first of them held the id, so one
        # clear rejection is isolation, but rejecting every one loses the first
        out.append(("colliding-ids", f"all {len(dup)} requests with the shared id {dup_id!r} "
                    f"were rejected as duplicates ({rejected[0].error[:160]}): the first of "
                    "them held the id, so its job was lost"))
    owners = [_owners(j) for j in done]
    for j, own in zip(done, owners):
        if not set(own) & sent:
            out.append(("colliding-ids", f"an answer for the shared id {dup_id!r} proves none of "
                        f"the inputs sent with it ({', '.join(sorted(sent))})"
                        + (f"; it proves {', '.join(own)}" if own else "")))
    if len(done) == 2 and all(owners) and set(owners[0]) == set(owners[1]):
        out.append(("colliding-ids", f"both answers for the shared id {dup_id!r} are proofs of "
                    f"{owners[0][0]}: one job was answered twice and the other never"))
    return out


def _plan(ev: Evidence, profile: str, workload: str) -> tuple[list[JobSpec], list[JobSpec], str]:
    """(burst specs, reuse specs, the shared id) for a driver that chooses ids (module
    docstring). A workload of 2 or 3 inputs still gets a unique-id slot 2 to reuse (slot 2
    proves input 0 again when there are only 2), so every oracle judges it; a PoRep workload
    sends its pair only (minutes per proof): no reuse."""
    jobs = ev.workload(workload).jobs
    slow = is_slow_workload(workload)
    inputs = [j.name for j in jobs[:2 if slow else 4]]
    sent = inputs + ([inputs[0]] if len(inputs) == 2 and not slow else [])
    token = secrets.token_hex(3)
    dup = f"iso-{token}-dup"
    rids = [dup, dup] + [f"iso-{token}-u{i}" for i in range(2, len(sent))]
    burst = [JobSpec(index=i, job=n, request_id=r) for i, (n, r) in enumerate(zip(sent, rids))]
    burst.append(JobSpec(index=len(burst), job=inputs[0], request_id=dup, await_only=True))
    # slot 2's id again, with inputs slot 2 did not prove: the answer must prove the new ones
    other = next((n for n in reversed(inputs) if len(sent) > 2 and n != sent[2]), None)
    reuse = [JobSpec(index=0, job=other, request_id=rids[2])] if other else []
    return burst, reuse, dup


def _judge_profile(ev: Evidence, rec: Recorder, profile: str, workload: str) -> None:
    driver = ev.driver(profile)
    wl_flow = ev.run(profile, workload).workload_flow
    evidence: dict[str, Any] = {}
    if driver.chooses_ids and Mode.SUBMIT_AWAIT in driver.modes:
        burst_specs, reuse_specs, dup = _plan(ev, profile, workload)
        flows = [ev.send(profile, workload, burst_specs, name="burst", mode=Mode.SUBMIT_AWAIT,
                         concurrency=len(burst_specs), cross=True)]
        if reuse_specs and not flows[0].stall:
            flows.append(ev.send(profile, workload, reuse_specs, name="reuse",
                                 mode=Mode.SUBMIT_AWAIT, concurrency=1, cross=True))
        not_here: dict[str, str] = {}
    else:
        k = min(len(ev.workload(workload).jobs), 2 if is_slow_workload(workload) else 4)
        specs = [JobSpec(index=i, job=j.name) for i, j in enumerate(ev.workload(workload).jobs[:k])]
        flows = [ev.send(profile, workload, specs, name="distinct", mode=Mode.PROVE,
                         concurrency=len(specs), cross=True)]
        dup = ""
        why = (f"the {driver.name} driver cannot choose request ids (cuzk-bench makes a fresh UUID "
               "per proof), so colliding and reused ids cannot be sent through it; run isolation "
               "with driver 'grpc' to check them")
        not_here = {"colliding-ids": why, "reused-id": why}
    found, judged = findings(flows, wl_flow, dup)
    evidence["jobs"] = sum(len(fl.jobs) for fl in flows)
    evidence["stuck_ids"] = [j.request_id for fl in flows for j in fl.stuck()]
    head = f"isolation on profile {profile!r} ({workload}, {evidence['jobs']} jobs)"
    for oracle in ORACLES:
        if oracle in not_here:
            rec(oracle, profile, Outcome.SKIPPED, f"{head}: {not_here[oracle]}")
            continue
        mine = [m for o, m in found if o == oracle]
        if mine:
            rec(oracle, profile, Outcome.FAIL, "\n".join([f"{head}: {len(mine)} problem(s)",
                *(f"  {oracle}: {m}" for m in mine)]), evidence={**evidence, "findings": mine})
        elif oracle == "reused-id" and len(flows) < 2:
            why = ("the burst stalled" if flows[0].stall else
                   f"workload {workload} is a PoRep one: its pair of inputs only, no reuse")
            rec(oracle, profile, Outcome.SKIPPED, f"{head}: the reuse flow was not sent: {why}")
        elif judged[oracle] == 0:
            rec(oracle, profile, Outcome.ERROR, f"{head}: nothing to judge: no job of the flows "
                "came back with a proof (see lost-or-twice)", evidence=evidence)
        else:
            rec(oracle, profile, Outcome.PASS, f"{head}: ok ({judged[oracle]} answer(s) judged)",
                evidence=evidence)


def evaluate(ev: Evidence, workload: str) -> list[OracleRecord]:
    """The isolation records of every profile on ``workload``; a blocked profile (failed
    preflight, dead daemon) or a workload of fewer than 2 inputs is skipped with the reason."""
    rec = Recorder(ev, "isolation", workload)
    for profile in ev.profiles:
        why = ev.blocked(profile, workload)
        n = len(ev.workload(workload).jobs) if why is None else 0
        if why is None and n < 2:
            why = f"workload {workload} has {n} job; isolation needs >= 2 distinct inputs"
        if why is not None:
            rec.skip_all(ORACLES, profile, why)
            continue
        _judge_profile(ev, rec, profile, workload)
    return rec.records
