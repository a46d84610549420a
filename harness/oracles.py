"""Oracles: the validity check of one run, and the divergence between two profiles' runs.

Outcome labels, worst first: ``error`` (the run itself failed: no container, verifier broke),
``invalid`` (a COMPLETED proof does not verify or has the wrong length), ``failed`` (a job came
back FAILED/ERROR/LOST/... but every completed proof verifies), ``valid`` (every job COMPLETED
and verified). Two runs diverge when their labels differ.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .config_delta import ConfigDelta, DeltaItem, rank_suspects
from .records import JobStatus, RunResult
from .workload import PROOF_BYTES_PER_PARTITION

__all__ = ["BadJob", "Divergence", "ValidityOutcome", "diverge", "validity"]

OUTCOMES = ("valid", "failed", "invalid", "error")


@dataclass(frozen=True)
class BadJob:
    """A job that did not yield a valid proof: ``kind`` is ``invalid`` (a COMPLETED proof that
    does not verify or has the wrong length) or ``failed`` (not COMPLETED); ``bad_partitions``
    lists the partitions that did not verify."""

    key: str
    name: str
    request_id: str
    status: str
    kind: str
    reason: str
    bad_partitions: tuple[int, ...] = ()

    def render(self) -> str:
        """``wpost-1 (id=wpost-1000-1, COMPLETED): invalid: partitions [1] do not verify``."""
        return f"{self.name} (id={self.request_id}, {self.status}): {self.kind}: {self.reason}"

    def to_json(self) -> dict[str, Any]:
        """JSON-ready dict."""
        return {"key": self.key, "name": self.name, "request_id": self.request_id,
                "status": self.status, "kind": self.kind, "reason": self.reason,
                "bad_partitions": list(self.bad_partitions)}


@dataclass(frozen=True)
class ValidityOutcome:
    """Validity of one run: counts, the bad jobs and run-level errors."""

    profile: str
    workload: str
    total: int
    completed: int
    valid: int
    bad: tuple[BadJob, ...]
    errors: tuple[str, ...]
    #: COMPLETED jobs whose proof could not be obtained (``JobResult.unverifiable``): neither
    #: valid nor invalid; named in :meth:`explain`, they do not change the outcome label.
    unverified: tuple[str, ...] = ()

    @property
    def outcome(self) -> str:
        """``error`` | ``invalid`` | ``failed`` | ``valid`` (see the module docstring)."""
        if self.errors or self.total == 0:
            return "error"
        if any(b.kind == "invalid" for b in self.bad):
            return "invalid"
        if self.bad:
            return "failed"
        return "valid"

    @property
    def ok(self) -> bool:
        """Every job COMPLETED with a proof that verifies."""
        return self.outcome == "valid"

    def explain(self) -> str:
        """Multi-line summary naming each bad job and error."""
        head = (f"validity of profile {self.profile!r} on {self.workload}: {self.outcome} "
                f"({self.valid}/{self.total} valid, {self.completed} completed)")
        lines = [head] + [f"  {b.render()}" for b in self.bad]
        lines += [f"  error: {e}" for e in self.errors]
        if self.unverified:
            lines.append(f"  {len(self.unverified)} completed proof(s) not verified: "
                         f"{self.unverified[0]}")
        return "\n".join(lines)

    def to_json(self) -> dict[str, Any]:
        """JSON-ready dict."""
        return {"profile": self.profile, "workload": self.workload, "outcome": self.outcome,
                "total": self.total, "completed": self.completed, "valid": self.valid,
                "invalid": sum(1 for b in self.bad if b.kind == "invalid"),
                "failed": sum(1 for b in self.bad if b.kind == "failed"),
                "bad": [b.to_json() for b in self.bad], "errors": list(self.errors),
                "unverified": len(self.unverified),
                "unverified_reasons": sorted(set(self.unverified))}


def validity(run: RunResult) -> ValidityOutcome:
    """Check one run: every COMPLETED proof is ``partitions x 192`` bytes and the independent
    verifier accepts every partition against the job's own public inputs; every other status
    is counted as ``failed`` with its error text."""
    expected = run.partitions * PROOF_BYTES_PER_PARTITION
    bad: list[BadJob] = []
    unverified: list[str] = []
    completed = valid = 0
    for j in run.jobs:
        def mk(kind: str, reason: str, parts: tuple[int, ...] = ()) -> BadJob:
            return BadJob(key=j.key, name=j.name, request_id=j.request_id,
                          status=j.status.value, kind=kind, reason=reason, bad_partitions=parts)
        if j.status is not JobStatus.COMPLETED:
            bad.append(mk("failed", j.error or "no error text"))
            continue
        completed += 1
        if j.unverifiable and not j.proof:
            unverified.append(j.unverifiable)
            continue
        v = run.verdicts.get(j.key)
        if len(j.proof) != expected:
            bad.append(mk("invalid", f"proof is {len(j.proof)} bytes, expected {expected} "
                                     f"({run.partitions} partitions x {PROOF_BYTES_PER_PARTITION})"))
        elif v is None:
            bad.append(mk("invalid", "no verdict from the verifier"))
        elif not v.valid:
            parts = tuple(v.bad_partitions())
            why = f"partitions {list(parts)} do not verify" if parts else "does not verify"
            bad.append(mk("invalid", why + (f" ({v.error})" if v.error else ""), parts))
        else:
            valid += 1
    return ValidityOutcome(profile=run.profile, workload=run.workload, total=len(run.jobs),
                           completed=completed, valid=valid, bad=tuple(bad),
                           errors=tuple(run.errors), unverified=tuple(unverified))


@dataclass(frozen=True)
class Divergence:
    """Two profiles got different outcomes from one oracle on one workload.

    ``suspects`` are the config delta items ranked for this oracle (most likely first).
    """

    oracle: str
    workload: str
    left: ValidityOutcome
    right: ValidityOutcome
    delta: ConfigDelta
    suspects: tuple[DeltaItem, ...]

    def headline(self) -> str:
        """``validity diverged on wpost-2k: bench=valid, prod=invalid``."""
        return (f"{self.oracle} diverged on {self.workload}: {self.left.profile}="
                f"{self.left.outcome}, {self.right.profile}={self.right.outcome}")

    def render(self, max_suspects: int = 5) -> str:
        """The full message: headline, both sides' bad jobs, top suspects, the config delta."""
        parts = [self.headline()]
        for side in (self.left, self.right):
            if side.bad or side.errors:
                parts.append(side.explain())
        if self.suspects:
            parts.append("most likely cause (ranked config differences):")
            parts += [f"  {i + 1}. {s.render()}" for i, s in enumerate(self.suspects[:max_suspects])]
        parts.append(self.delta.render())
        return "\n".join(parts)

    def to_json(self) -> dict[str, Any]:
        """JSON-ready dict."""
        return {"oracle": self.oracle, "workload": self.workload, "headline": self.headline(),
                "left": self.left.to_json(), "right": self.right.to_json(),
                "suspects": [s.to_json() for s in self.suspects],
                "delta": self.delta.to_json()}


def diverge(left: ValidityOutcome, right: ValidityOutcome, delta: ConfigDelta,
            oracle: str = "validity") -> Divergence | None:
    """A :class:`Divergence` when the two outcomes' labels differ, else ``None``."""
    if left.outcome == right.outcome:
        return None
    return Divergence(oracle=oracle, workload=left.workload, left=left, right=right,
                      delta=delta, suspects=tuple(rank_suspects(delta, oracle)))
