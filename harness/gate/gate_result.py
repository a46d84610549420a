"""The gate's records: what ``proofdiff gate`` decided, on which evidence (summary.json).

A finding is one reason to block the push (a check failing on the candidate, a bench vs prod
divergence on the candidate, a timing regression against the baseline); an allowlist entry may
turn it into an accepted difference. The JSON Schema of :class:`GateResult` ships beside this
package (``harness/gate/gate.schema.json``, :func:`proofdiff.gate.gate_view.schema`).
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

import msgspec

from proofdiff.model.allowlist import StaleEntry
from proofdiff.model.image import ImageInfo
from proofdiff.model.timing_verdict import TimingVerdict

__all__ = ["GATE_SCHEMA_VERSION", "Decision", "Finding", "GateResult", "ProfileTiming",
           "StaleEntry", "TamperCheck", "VerifierCheck"]

#: Version of the gate's summary.json schema (the msgspec encoding of :class:`GateResult`;
#: 4: a finding's ``outcome``, the ``tamper`` checks; the one-sided timing question,
#: ``max_slowdown``, ``margin``, ``beta``, each metric's ``mde`` and caps).
GATE_SCHEMA_VERSION = 4


class Decision(StrEnum):
    """What the gate decided, with its exit code (docs/guide/gate.md)."""

    PASS = "pass"                  #: candidate clean and not slower than tolerated: push
    FAIL = "fail"                  #: a divergence, a failing check or a regression: block
    INCONCLUSIVE = "inconclusive"  #: something undecided (timing within its cap): block, retry
    ERROR = "error"                #: the gate could not run (the reason is named)
    INTERRUPTED = "interrupted"    #: Ctrl-C / SIGTERM

    @property
    def exit_code(self) -> int:
        """0 pass, 1 fail, 2 inconclusive, 3 error, 130 interrupted."""
        return {"pass": 0, "fail": 1, "inconclusive": 2, "error": 3, "interrupted": 130}[self.value]


class VerifierCheck(msgspec.Struct, frozen=True, kw_only=True):
    """The cross-check's evidence.

    Attributes:
        baseline_image: whose ``verify`` was asked. proofs: how many proofs both judged (the
            tampered copy included). agreed: every verdict equal; ``None`` when not checked.
        disagreements: one line per proof on which they differ (pinned vs baseline's).
        note: why it was not checked, when it was not.
        started_unix_s, stopped_unix_s: when it ran (the baseline's run included), s since
            the epoch (Allure's timeline).
    """

    baseline_image: str
    proofs: int = 0
    agreed: bool | None = None
    disagreements: tuple[str, ...] = ()
    note: str = ""
    started_unix_s: float = 0.0
    stopped_unix_s: float = 0.0


class TamperCheck(msgspec.Struct, frozen=True, kw_only=True):
    """The pinned verifier shown to reject a proof with one byte flipped, for one profile and
    workload of the candidate's differential (:func:`proofdiff.gate.verifier_crosscheck.
    tamper_checks`): the positive control without which a verifier that accepts anything
    would pass every gate.

    Attributes:
        profile, workload, job: whose proof was tampered with ('' job: none to tamper with).
        verdict: the pinned verifier's on the tampered copy (``invalid [00]``); rejected: it
        said invalid. note: why there was no proof to tamper with.
    """

    profile: str
    workload: str
    job: str = ""
    verdict: str = ""
    rejected: bool = False
    note: str = ""


class ProfileTiming(msgspec.Struct, frozen=True, kw_only=True):
    """The timing arm of one profile on one workload: the verdict per metric, the rounds
    drawn (one round = one batch of ``concurrency`` proofs on each side, in alternating
    order), why sampling stopped early ('' = it did not), the candidate's jobs that failed,
    were lost or gave a proof that does not verify in this arm (``faults``: each blocks the
    gate), the wall time it took (s), and when it started and stopped (s since the epoch; its
    session's start, cross-check and warm-up included). ``hosts``: on a fleet, the rounds each
    host drew (both sides of a round always on one host); empty here. ``placement``: where the
    daemons and proofdiff ran (:mod:`proofdiff.gate.quiet_cores`; '' when not recorded)."""

    profile: str
    workload: str
    concurrency: int
    metrics: tuple[TimingVerdict, ...] = ()
    rounds: int = 0
    stopped: str = ""
    faults: tuple[str, ...] = ()
    wall_s: float = 0.0
    started_unix_s: float = 0.0
    stopped_unix_s: float = 0.0
    hosts: dict[str, int] = msgspec.field(default_factory=dict)
    placement: str = ""


class Finding(msgspec.Struct, frozen=True, kw_only=True):
    """One reason to block: ``check`` (``suite/oracle``, ``timing/<metric>`` or ``divergence/
    suite/oracle``), the profile and workload, what was seen, its evidence, and, when an
    allowlist entry accepts it, that entry's reason and link (``accepted`` true), and when the
    check that found it was judged (its record's times, a timing finding's arm's; s since the
    epoch, 0 = unknown). ``outcome``: ``fail`` (a property seen violated: a failing check, a
    divergence of a FAIL, a regression, a job of the candidate that failed) or ``error``
    (nothing was judged: an ERROR record, a divergence of one, no proof verified); an
    allowlist accepts a ``fail`` only (:func:`proofdiff.model.allowlist.acceptable`)."""

    check: str
    profile: str
    workload: str
    message: str
    kind: str
    outcome: str = "fail"
    evidence: dict[str, Any] = msgspec.field(default_factory=dict)
    accepted: bool = False
    accepted_by: str = ""
    reason: str = ""
    link: str = ""
    started_unix_s: float = 0.0
    stopped_unix_s: float = 0.0


class GateResult(msgspec.Struct, frozen=True, kw_only=True):
    """Everything a gate established, tied to both image digests.

    Attributes:
        schema_version: :data:`GATE_SCHEMA_VERSION`. run_id, created_unix_s: as a differential
            (created = when decided); started_unix_s: when the gate started.
        decision, decision_line, exit_code: the conclusion (``exit_code`` = decision's).
        candidate, baseline: the two images with their ids. aa: both are one digest (an A/A
        gate: any difference found is the method's false alarm).
        verifier: the image whose ``verify`` checked every proof, and its id: pinned by the
            build (content tag), never the candidate's. verifier_check: the baseline's own
            verifier asked too (where it has one). tamper: the pinned verifier rejecting a
            tampered proof of each profile, always (:class:`TamperCheck`).
        profiles: each profile as resolved, by name. workloads: what ran.
        findings: every reason to block, accepted or not. timing: the timing arm per profile
            and workload. allowlist: the file used ('' = none); stale: entries that matched
            nothing or expired.
        differential: the run id of the candidate's own bench vs prod differential (its report
            is ``differential/`` beside this file). errors: why the gate could not run.
        unverified: ``{"profile/workload": why}``: profiles whose proofs could not be
            verified (a client that hands out none), covered by another profile's verified
            proofs on the same workload.
        commit: the proofdiff checkout's commit info (pytest-benchmark's). machine: the host.
        budget_s: the timing budget; wall_s: the gate's wall time, s. max_rounds: the most
            rounds of each timing arm, the warm-up included (``--rounds``; 0 = before it was
            recorded).
        alpha: the family-wise false-WORSE level of the timing verdicts (over every metric x
            profile x workload, each at ``alpha / K``). beta: each metric's false-WITHIN level
            (a candidate ``max_slowdown`` worse said WITHIN at most this often).
            max_slowdown: the tolerated slowdown per metric (``--max-slowdown``), margin: the
            practical margin below which a slowdown is never WORSE, both fractions.
            no_timing: the user asked for no timing
            (``--no-timing``): a PASS then rests on the candidate's checks alone, and says so.
        undecided: why the decision is not a PASS although nothing blocks (skipped checks, a
            profile without records, timing undecided), one line each.
        history: what ``--history`` did (``history: stored run R (#N) in URL``, or ``history:
            NOT STORED: ...``); '' when not asked. history_error: why it was not stored ('' =
            stored or not asked): the command's exit code is then at least 3.
    """

    run_id: str
    created_unix_s: float
    decision: Decision
    decision_line: str
    exit_code: int
    candidate: ImageInfo
    baseline: ImageInfo
    schema_version: int = GATE_SCHEMA_VERSION
    aa: bool = False
    verifier: ImageInfo | None = None
    verifier_check: VerifierCheck | None = None
    tamper: tuple[TamperCheck, ...] = ()
    profiles: dict[str, dict[str, Any]] = msgspec.field(default_factory=dict)
    workloads: tuple[str, ...] = ()
    findings: tuple[Finding, ...] = ()
    timing: tuple[ProfileTiming, ...] = ()
    allowlist: str = ""
    stale: tuple[StaleEntry, ...] = ()
    differential: str = ""
    errors: tuple[str, ...] = ()
    unverified: dict[str, str] = msgspec.field(default_factory=dict)
    commit: dict[str, Any] = msgspec.field(default_factory=dict)
    machine: dict[str, Any] = msgspec.field(default_factory=dict)
    budget_s: float = 0.0
    max_rounds: int = 0
    wall_s: float = 0.0
    alpha: float = 0.0
    beta: float = 0.0
    max_slowdown: float = 0.0
    margin: float = 0.0
    no_timing: bool = False
    undecided: tuple[str, ...] = ()
    history: str = ""
    history_error: str = ""
    started_unix_s: float = 0.0

    def blocking(self) -> list[Finding]:
        """Findings no allowlist entry accepted."""
        return [f for f in self.findings if not f.accepted]
