"""One oracle record for every suite, and the divergence made of two of them."""

from __future__ import annotations

from typing import Any

import msgspec

from proofdiff.model.config_delta import show
from proofdiff.model.timing_verdict import TimingVerdict
from proofdiff.model.status import Outcome

__all__ = ["Divergence", "OracleRecord", "ProofCounts", "Suspect"]


class ProofCounts(msgspec.Struct, frozen=True, kw_only=True):
    """What the validity suite counted in one run's workload flow (jobs, not partitions).

    Attributes:
        total: jobs sent. completed: jobs the daemon answered COMPLETED. valid: completed
            proofs the independent verifier accepted, every partition. invalid: completed proofs
            of the wrong length or with a partition that does not verify. failed: jobs that did
            not complete (FAILED, LOST, STUCK, ...). unverified: completed proofs whose bytes
            could not be had (a bench tool that prints none), with ``unverified_reasons``.
    """

    total: int
    completed: int
    valid: int
    invalid: int
    failed: int
    unverified: int
    unverified_reasons: tuple[str, ...] = ()


class OracleRecord(msgspec.Struct, frozen=True, kw_only=True):
    """One oracle's outcome on one profile, workload and image.

    Attributes:
        suite: the suite (``preflight``, ``validity``, ``warmup``, ``isolation``, ``timing``).
        oracle: the property within it (``proofs``, ``colliding-ids``, ``aa``, ...).
        profile: the profile judged. workload: the workload name.
        image: the image slot ('' = each profile's own image; a tag when the run compares
            images).
        outcome: see :class:`~proofdiff.model.status.Outcome`.
        message: what was seen, why it matters and the fix (plain text, printed literally).
        evidence: machine-readable evidence (job ids, partitions, ...).
        counts: the validity suite's proof counts (``None`` on other records).
        timing: the timing suite's comparison (``None`` on other records).
        names: delta paths the evidence points at (a config key the daemon ignored, the
            param path it read): ranked first among the suspects of a divergence.
        started_unix_s, stopped_unix_s: when the suite began and ended judging this check,
            seconds since the epoch (0 when not recorded).
    """

    suite: str
    oracle: str
    profile: str
    workload: str
    outcome: Outcome
    message: str = ""
    image: str = ""
    evidence: dict[str, Any] = msgspec.field(default_factory=dict)
    counts: ProofCounts | None = None
    timing: TimingVerdict | None = None
    names: tuple[str, ...] = ()
    started_unix_s: float = 0.0
    stopped_unix_s: float = 0.0

    @property
    def check(self) -> str:
        """``suite/oracle``."""
        return f"{self.suite}/{self.oracle}"


class Suspect(msgspec.Struct, frozen=True, kw_only=True):
    """One config difference, ranked as a likely cause: its delta ``path``, both sides'
    values (rendered) and ``why`` it ranks where it does."""

    path: str
    left: Any
    right: Any
    why: str = ""

    def render(self) -> str:
        """``config.pipeline.enabled: False -> True``."""
        return f"{self.path}: {show(self.left)} -> {show(self.right)}"


class Divergence(msgspec.Struct, frozen=True, kw_only=True):
    """An oracle that fails on ``profile`` but not on the ``baseline`` profile.

    Attributes:
        suite, oracle, workload, image: the check and where.
        baseline, profile: the two profiles. baseline_outcome, outcome: their outcomes
            (``baseline_outcome`` is ``None`` for a comparison oracle the baseline has no
            record of, e.g. timing throughput prod vs bench).
        message: the failing record's message. suspects: ranked config differences.
    """

    suite: str
    oracle: str
    workload: str
    baseline: str
    profile: str
    outcome: Outcome
    baseline_outcome: Outcome | None = None
    image: str = ""
    message: str = ""
    suspects: tuple[Suspect, ...] = ()

    @property
    def headline(self) -> str:
        """``validity/proofs diverged on wpost-2k: bench=pass, prod=fail``."""
        base = self.baseline_outcome.value if self.baseline_outcome else "n/a"
        where = f"{self.workload}" + (f" ({self.image})" if self.image else "")
        return (f"{self.suite}/{self.oracle} diverged on {where}: {self.baseline}={base}, "
                f"{self.profile}={self.outcome.value}")
