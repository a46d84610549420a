"""The gate's records: what ``proofdiff gate`` decided, on which evidence (summary.json).

A finding is one reason to block the push (a check failing on the candidate, a bench vs prod
divergence on the candidate, a timing regression against the baseline); an allowlist entry may
turn it into an accepted difference. The JSON Schema of :class:`GateResult` ships beside this
package (``harness/gate/gate.schema.json``, :func:`proofdiff.gate.gate_view.schema`).
"""

from __future__ import annotations

import math
from enum import StrEnum
from typing import Any

import msgspec

from proofdiff.stats.paired import PairedVerdict

__all__ = ["GATE_SCHEMA_VERSION", "Decision", "Finding", "GateResult", "MetricVerdict",
           "ProfileTiming", "Side", "StaleEntry", "VerifierCheck"]

#: Version of the gate's summary.json schema (the msgspec encoding of :class:`GateResult`).
GATE_SCHEMA_VERSION = 2


class Decision(StrEnum):
    """What the gate decided, with its exit code (README "Gate an image push")."""

    PASS = "pass"                  #: candidate clean and not slower: push
    FAIL = "fail"                  #: a divergence, a failing check or a regression: block
    INCONCLUSIVE = "inconclusive"  #: timing undecided within the budget: block, retry
    ERROR = "error"                #: the gate could not run (the reason is named)
    INTERRUPTED = "interrupted"    #: Ctrl-C / SIGTERM

    @property
    def exit_code(self) -> int:
        """0 pass, 1 fail, 2 inconclusive, 3 error, 130 interrupted."""
        return {"pass": 0, "fail": 1, "inconclusive": 2, "error": 3, "interrupted": 130}[self.value]


class Side(msgspec.Struct, frozen=True, kw_only=True):
    """One side of the gate: ``role`` (``baseline`` | ``candidate``), the image tag and its id
    (``sha256:...``, '' when it is not present) and any registry digests."""

    role: str
    image: str
    digest: str = ""
    repo_digests: tuple[str, ...] = ()


class VerifierCheck(msgspec.Struct, frozen=True, kw_only=True):
    """The cross-check's evidence.

    Attributes:
        baseline_image: whose ``verify`` was asked. proofs: how many proofs both judged (the
            tampered copy included). agreed: every verdict equal; ``None`` when not checked.
        disagreements: one line per proof on which they differ (pinned vs baseline's).
        note: why it was not checked, when it was not.
    """

    baseline_image: str
    proofs: int = 0
    agreed: bool | None = None
    disagreements: tuple[str, ...] = ()
    note: str = ""


class MetricVerdict(msgspec.Struct, frozen=True, kw_only=True):
    """One metric's paired verdict on one profile, candidate vs baseline, JSON-safe (``None``
    where :class:`~proofdiff.stats.paired.PairedVerdict` has NaN).

    Attributes:
        metric: ``latency`` (median job wall per round, ms), ``throughput`` (round wall / jobs,
            ms per proof: the inverse of throughput) or ``in-progress`` (mean jobs in progress
            during each job, jobs). worse: ``higher`` or ``lower``: which way is a regression.
        verdict: SAME | DIFFERENT | INCONCLUSIVE; direction: ``slower`` / ``faster`` of the
            ratio candidate/baseline (``higher``/``lower`` for in-progress); regression: the
            candidate is worse beyond the floor.
        n_pairs, warmup_pairs, baseline_median, candidate_median, ratio, ratio_ci, p_value,
        statistic, df, alpha_look, alpha_spent, floor_rel, reason: as in PairedVerdict.
        baseline_samples, candidate_samples: every sample in drawing order, warmup first.
        unit: ``ms`` or ``jobs``. text: the rendered paragraph.
    """

    metric: str
    worse: str
    verdict: str
    regression: bool
    direction: str = ""
    n_pairs: int = 0
    warmup_pairs: int = 0
    baseline_median: float | None = None
    candidate_median: float | None = None
    ratio: float | None = None
    ratio_ci: tuple[float | None, float | None] = (None, None)
    p_value: float | None = None
    statistic: float | None = None
    df: int = 0
    alpha_look: float | None = None
    alpha_spent: float | None = None
    floor_rel: float = 0.05
    reason: str = ""
    baseline_samples: tuple[float, ...] = ()
    candidate_samples: tuple[float, ...] = ()
    unit: str = "ms"
    text: str = ""

    @classmethod
    def of(cls, metric: str, worse: str, v: PairedVerdict) -> MetricVerdict:
        """From a paired verdict; a regression is DIFFERENT in the ``worse`` direction."""
        def num(x: float) -> float | None:
            return round(x, 6) if math.isfinite(x) else None
        up = v.direction == "slower"
        regression = v.verdict == "DIFFERENT" and (up if worse == "higher" else not up)
        direction = v.direction if v.unit == "ms" or not v.direction else (
            "higher" if up else "lower")
        return cls(metric=metric, worse=worse, verdict=v.verdict, regression=regression,
                   direction=direction, n_pairs=v.n_pairs, warmup_pairs=v.warmup_pairs,
                   baseline_median=num(v.baseline_median_ms),
                   candidate_median=num(v.candidate_median_ms), ratio=num(v.ratio),
                   ratio_ci=(num(v.ratio_ci[0]), num(v.ratio_ci[1])), p_value=num(v.p_value),
                   statistic=num(v.statistic), df=v.df, alpha_look=num(v.alpha_look),
                   alpha_spent=num(v.alpha_spent), floor_rel=v.floor_rel, reason=v.reason,
                   baseline_samples=tuple(round(x, 3) for x in v.baseline_ms),
                   candidate_samples=tuple(round(x, 3) for x in v.candidate_ms), unit=v.unit,
                   text=v.render())


class ProfileTiming(msgspec.Struct, frozen=True, kw_only=True):
    """The timing arm of one profile on one workload: the verdict per metric, the rounds
    drawn (one round = one batch of ``concurrency`` proofs on each side, in alternating
    order), why sampling stopped early ('' = it did not) and the wall time it took (s)."""

    profile: str
    workload: str
    concurrency: int
    metrics: tuple[MetricVerdict, ...] = ()
    rounds: int = 0
    stopped: str = ""
    wall_s: float = 0.0


class Finding(msgspec.Struct, frozen=True, kw_only=True):
    """One reason to block: ``check`` (``suite/oracle``, ``timing/<metric>`` or ``divergence/
    suite/oracle``), the profile and workload, what was seen, its evidence, and, when an
    allowlist entry accepts it, that entry's reason and link (``accepted`` true)."""

    check: str
    profile: str
    workload: str
    message: str
    kind: str
    evidence: dict[str, Any] = msgspec.field(default_factory=dict)
    accepted: bool = False
    accepted_by: str = ""
    reason: str = ""
    link: str = ""


class StaleEntry(msgspec.Struct, frozen=True, kw_only=True):
    """An allowlist entry that matched nothing (``stale``) or is past its expiry
    (``expired``, which fails the gate): where it is, what it says, why it is listed."""

    entry: str
    check: str
    profile: str
    expires: str
    status: str
    message: str


class GateResult(msgspec.Struct, frozen=True, kw_only=True):
    """Everything a gate established, tied to both image digests.

    Attributes:
        schema_version: :data:`GATE_SCHEMA_VERSION`. run_id, created_unix_s: as a differential.
        decision, decision_line, exit_code: the conclusion (``exit_code`` = decision's).
        candidate, baseline: the two images with their ids. aa: both are one digest (an A/A
        gate: any difference found is the method's false alarm).
        verifier: the image whose ``verify`` checked every proof, and its id: pinned by the
            build (content tag), never the candidate's.
        profiles: each profile as resolved, by name. workloads: what ran.
        findings: every reason to block, accepted or not. timing: the timing arm per profile
            and workload. allowlist: the file used ('' = none); stale: entries that matched
            nothing or expired.
        differential: the run id of the candidate's own bench vs prod differential (its report
            is ``differential/`` beside this file). errors: why the gate could not run.
        commit: the proofdiff checkout's commit info (pytest-benchmark's). machine: the host.
        budget_s: the timing budget; wall_s: the gate's wall time, s.
    """

    run_id: str
    created_unix_s: float
    decision: Decision
    decision_line: str
    exit_code: int
    candidate: Side
    baseline: Side
    schema_version: int = GATE_SCHEMA_VERSION
    aa: bool = False
    verifier: Side | None = None
    verifier_check: VerifierCheck | None = None
    profiles: dict[str, dict[str, Any]] = msgspec.field(default_factory=dict)
    workloads: tuple[str, ...] = ()
    findings: tuple[Finding, ...] = ()
    timing: tuple[ProfileTiming, ...] = ()
    allowlist: str = ""
    stale: tuple[StaleEntry, ...] = ()
    differential: str = ""
    errors: tuple[str, ...] = ()
    commit: dict[str, Any] = msgspec.field(default_factory=dict)
    machine: dict[str, Any] = msgspec.field(default_factory=dict)
    budget_s: float = 0.0
    wall_s: float = 0.0

    def blocking(self) -> list[Finding]:
        """Findings no allowlist entry accepted."""
        return [f for f in self.findings if not f.accepted]
