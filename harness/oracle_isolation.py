"""The isolation oracle: no job receives another job's proof, nothing is lost or returned twice.

Each COMPLETED proof of an :class:`~harness.driver_isolation.IsolationRun` is verified (by the
independent verifier, per partition) against EVERY input the flows sent, which tells whose
proof it is. Findings, by oracle name:

* ``hang``: the daemon stopped answering (watchdog or deadline); the stuck request ids.
* ``lost``: a submitted job the daemon no longer knows (``NOT_FOUND``) or a transport error.
* ``failed``: a job came back FAILED. For the two jobs sharing an id a FAILED answer that
  says it rejects the duplicate (``duplicate``, ``already exists``/``in use``) is a clear
  rejection and passes: duplicates must be "rejected clearly or isolated".
* ``colliding-ids``: the two answers for the shared id are not the proofs of the two inputs
  sent with it, one each (one proof for both, or a proof of neither).
* ``reused-id``: the reused id's answer is not the proof of its NEW inputs.
* ``cross-talk``: a unique-id job's proof does not verify against its own inputs (named when it
  verifies against another job's).
* ``identical``: two distinct inputs got byte-identical proofs or partition chunks
  (192 bytes each), in the flows or in the workload run.
* ``returned-twice``: one more AwaitProof of the shared id, after both answers, did not say
  ``NOT_FOUND``.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .driver_isolation import IsoJob, IsolationRun
from .records import JobStatus, RunResult, Verdict
from .workload import PROOF_BYTES_PER_PARTITION, Workload, verify_item

__all__ = ["ORACLES", "Finding", "IsolationOutcome", "attach_verdicts", "isolation",
           "verify_items"]

ORACLES = ("hang", "lost", "failed", "colliding-ids", "reused-id", "cross-talk", "identical",
           "returned-twice")
_CLEAR_REJECT = re.compile(r"duplicate|already (exists|in use|submitted|registered)", re.I)


@dataclass(frozen=True)
class Finding:
    """One isolation problem: its ``oracle`` name, the request ids involved and the message."""

    oracle: str
    request_ids: tuple[str, ...]
    message: str

    def to_json(self) -> dict[str, Any]:
        """JSON-ready dict."""
        return {"oracle": self.oracle, "request_ids": list(self.request_ids),
                "message": self.message}


@dataclass(frozen=True)
class IsolationOutcome:
    """All findings on one profile's flows (and its workload run)."""

    profile: str
    workload: str
    jobs: int
    findings: tuple[Finding, ...]

    def of(self, *oracles: str) -> list[Finding]:
        """Findings of the given oracle names."""
        return [f for f in self.findings if f.oracle in oracles]

    def explain(self, *oracles: str) -> str:
        """Headline plus one line per finding (of ``oracles`` when given)."""
        fs = self.of(*oracles) if oracles else list(self.findings)
        head = (f"isolation on profile {self.profile!r} ({self.workload}, {self.jobs} jobs): "
                + ("ok" if not fs else f"{len(fs)} problem(s)"))
        return "\n".join([head] + [f"  {f.oracle}: {f.message}" for f in fs])

    def to_json(self) -> dict[str, Any]:
        """JSON-ready dict."""
        return {"profile": self.profile, "workload": self.workload, "jobs": self.jobs,
                "findings": [f.to_json() for f in self.findings]}


def verify_items(run: IsolationRun, workload: Workload) -> list[dict[str, Any]]:
    """Verifier items: every COMPLETED proof against every input the flows sent; item id
    ``<flow:slot>|<input name>``."""
    by_name = {j.name: j for j in workload.jobs}
    names = list(dict.fromkeys(j.input for j in run.jobs))
    return [verify_item(workload, by_name[n], f"{j.key}|{n}", j.proof)
            for j in run.jobs if j.status is JobStatus.COMPLETED and j.proof for n in names]


def attach_verdicts(run: IsolationRun, verdicts: Mapping[str, Verdict]) -> IsolationRun:
    """``run`` with ``verdicts[job key][input name] = valid`` from the verifier's answers."""
    table: dict[str, dict[str, bool]] = {}
    for item_id, v in verdicts.items():
        key, _, name = item_id.partition("|")
        table.setdefault(key, {})[name] = v.valid
    return dataclasses.replace(run, verdicts=table)


def _owners(run: IsolationRun, job: IsoJob) -> list[str]:
    return sorted(n for n, ok in run.verdicts.get(job.key, {}).items() if ok)


def _chunks(proof: bytes) -> list[bytes]:
    n = PROOF_BYTES_PER_PARTITION
    return [proof[i:i + n] for i in range(0, len(proof) - n + 1, n)]


def _identical(items: Sequence[tuple[str, str, str, bytes]]) -> list[Finding]:
    """Items are (label, request id, input name, proof); pairs with distinct inputs only."""
    out = []
    for i, (la, ra, ia, pa) in enumerate(items):
        for lb, rb, ib, pb in items[i + 1:]:
            if ia == ib or not pa or not pb:
                continue
            if pa == pb:
                out.append(Finding("identical", (ra, rb), f"{la} (inputs {ia}) and {lb} (inputs "
                                   f"{ib}) returned byte-identical proofs ({len(pa)} B)"))
                continue
            same = [(x, y) for x, ca in enumerate(_chunks(pa))
                    for y, cb in enumerate(_chunks(pb)) if ca == cb]
            if same:
                parts = ", ".join(f"{la} partition {x} = {lb} partition {y}" for x, y in same)
                out.append(Finding("identical", (ra, rb), f"distinct inputs {ia} and {ib} got "
                                   f"byte-identical partition proofs: {parts}"))
    return out


def isolation(run: IsolationRun, workload_run: RunResult | None = None) -> IsolationOutcome:
    """Judge one profile's flows (verdicts attached) and, for ``identical``, its workload run."""
    f: list[Finding] = []
    if run.errors:
        f += [Finding("lost", (), f"the flows did not run: {e}") for e in run.errors]
    if run.stuck_ids:
        f.append(Finding("hang", run.stuck_ids, f"the daemon stopped answering ({run.stall}); "
                         f"stuck job ids: {', '.join(run.stuck_ids)}; read its log for a stuck "
                         "queue or lock"))
    burst_dup = [j for j in run.jobs if j.flow == "burst" and j.request_id == run.dup_id]
    for j in run.jobs:
        where = f"{j.flow} slot {j.slot} (id={j.request_id})"
        if j.status is JobStatus.LOST and not j.error.startswith("stuck:"):
            f.append(Finding("lost", (j.request_id,), f"{where}: {j.error}"))
        elif j.status in (JobStatus.ERROR, JobStatus.UNKNOWN, JobStatus.CANCELLED):
            f.append(Finding("lost", (j.request_id,), f"{where}: {j.status.value}: {j.error}"))
        elif j.status is JobStatus.FAILED:
            if j in burst_dup and _CLEAR_REJECT.search(j.error):
                continue  # a duplicate rejected clearly
            f.append(Finding("failed", (j.request_id,), f"{where} FAILED: {j.error or '(no text)'}"))
    done = [j for j in burst_dup if j.status is JobStatus.COMPLETED]
    sent = {j.input for j in burst_dup}
    owners = [_owners(run, j) for j in done]
    for j, own in zip(done, owners):
        if not set(own) & sent:
            f.append(Finding("colliding-ids", (j.request_id,), f"an answer for the shared id "
                             f"{j.request_id!r} proves none of the inputs sent with it "
                             f"({', '.join(sorted(sent))})" + (f"; it proves {', '.join(own)}"
                                                                if own else "")))
    if len(done) == 2 and all(owners) and set(owners[0]) == set(owners[1]):
        f.append(Finding("colliding-ids", (done[0].request_id,), f"both answers for the shared "
                         f"id {done[0].request_id!r} are proofs of {owners[0][0]}: one job was "
                         "answered twice and the other never"))
    for j in run.jobs:
        if j.status is not JobStatus.COMPLETED or j in burst_dup:
            continue
        own = _owners(run, j)
        if j.input in own:
            continue
        oracle = "reused-id" if j.flow == "reuse" else "cross-talk"
        other = f"; it is the proof of {', '.join(own)}" if own else "; it verifies against no input sent"
        f.append(Finding(oracle, (j.request_id,), f"{j.flow} slot {j.slot} (id={j.request_id}) "
                         f"got a proof that does not verify against its own inputs {j.input}"
                         + other))
    if run.extra_await and run.extra_await != "NOT_FOUND":
        f.append(Finding("returned-twice", (run.dup_id,), f"a third AwaitProof({run.dup_id!r}) "
                         f"after both jobs were answered returned {run.extra_await} instead of "
                         "NOT_FOUND"))
    items = [(f"{j.flow} slot {j.slot}", j.request_id, j.input, j.proof) for j in run.jobs
             if j.status is JobStatus.COMPLETED]
    f += _identical(items)
    if workload_run is not None:
        wl = [(f"workload job {j.index}", j.request_id, j.name, j.proof) for j in workload_run.jobs
              if j.status is JobStatus.COMPLETED]
        f += _identical(wl)
    return IsolationOutcome(run.profile, run.workload, len(run.jobs), tuple(f))
