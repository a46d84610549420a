"""The differential result: what :func:`proofdiff.run_differential` returns and summary.json holds."""

from __future__ import annotations

from typing import Any

import msgspec

from proofdiff.model.allowlist import Acceptance, StaleEntry
from proofdiff.model.config_delta import ConfigDelta
from proofdiff.model.image import ImageInfo
from proofdiff.model.oracle_records import Divergence, OracleRecord
from proofdiff.model.runs import RunRecord
from proofdiff.model.status import Outcome, Verdict

__all__ = ["SCHEMA_VERSION", "DifferentialResult", "ImageInfo"]

#: Version of the summary.json schema (the msgspec encoding of :class:`DifferentialResult`).
SCHEMA_VERSION = 2


class DifferentialResult(msgspec.Struct, frozen=True, kw_only=True):
    """Everything one differential run established.

    Attributes:
        schema_version: :data:`SCHEMA_VERSION`.
        run_id: the run's id (container label and report folder name).
        created_unix_s: when the result was made, seconds since the epoch.
        verdict, verdict_line, exit_code: the conclusion (``exit_code`` = ``verdict.exit_code``).
        images: the images the runs used.
        profiles: each profile as resolved (its effective settings), by name; the first is the
            baseline.
        workloads, suites: what was selected.
        runs: every (profile, workload, image) run with its flows.
        records: every oracle record.
        divergences: oracles failing on a profile but not on the baseline, with suspects.
        deltas: config delta from the baseline to each other profile.
        errors: run-level errors (a profile file, the build, Docker), as text.
        extra: workflow-specific sections (``catch_matrix`` ...).
        wall_s: the run's wall time, plan to last cleanup, seconds (0 when not measured).
        verifier: the image whose ``verify`` judged every proof of a docker runtime, with its
            id (the pinned verifier, harness/artifacts/pinned_verifier.py); ``None`` when none ran.
        machine: the host it ran on (:func:`proofdiff.runtime.host.machine_facts`: CPUs,
            memory, GPUs from NVML or nvidia-smi).
        allowlist: the allowlist file applied ('' = none). accepted: the failing records an
            entry accepts (each record and divergence stays in ``records`` and
            ``divergences``, shown with its entry; none of them sets the verdict). stale: the
            entries that matched nothing or expired.
    """

    run_id: str
    created_unix_s: float
    verdict: Verdict
    verdict_line: str
    exit_code: int
    schema_version: int = SCHEMA_VERSION
    images: tuple[ImageInfo, ...] = ()
    profiles: dict[str, dict[str, Any]] = msgspec.field(default_factory=dict)
    workloads: tuple[str, ...] = ()
    suites: tuple[str, ...] = ()
    runs: tuple[RunRecord, ...] = ()
    records: tuple[OracleRecord, ...] = ()
    divergences: tuple[Divergence, ...] = ()
    deltas: tuple[ConfigDelta, ...] = ()
    errors: tuple[str, ...] = ()
    extra: dict[str, Any] = msgspec.field(default_factory=dict)
    wall_s: float = 0.0
    machine: dict[str, Any] = msgspec.field(default_factory=dict)
    verifier: ImageInfo | None = None
    allowlist: str = ""
    accepted: tuple[Acceptance, ...] = ()
    stale: tuple[StaleEntry, ...] = ()

    def acceptance_of(self, x: OracleRecord | Divergence) -> Acceptance | None:
        """The allowlist entry's acceptance of a record or divergence, or ``None``."""
        key = (f"{x.suite}/{x.oracle}", x.profile, x.workload, x.image)
        return next((a for a in self.accepted if a.key == key), None)

    @property
    def baseline(self) -> str:
        """The baseline profile's name ('' when no profile loaded)."""
        return next(iter(self.profiles), "")

    def records_of(self, suite: str | None = None, profile: str | None = None,
                   workload: str | None = None, oracle: str | None = None) -> list[OracleRecord]:
        """The records matching every name given."""
        return [r for r in self.records
                if (suite is None or r.suite == suite) and (profile is None or r.profile == profile)
                and (workload is None or r.workload == workload)
                and (oracle is None or r.oracle == oracle)]

    def failed(self) -> list[OracleRecord]:
        """Records whose outcome is FAIL or ERROR."""
        return [r for r in self.records if r.outcome.bad]

    def run(self, profile: str, workload: str) -> RunRecord | None:
        """The run of ``profile`` on ``workload`` (the first image's), or ``None``."""
        return next((r for r in self.runs if r.profile == profile and r.workload == workload),
                    None)

    def outcome(self, suite: str, oracle: str, profile: str, workload: str) -> Outcome | None:
        """The outcome of one check, or ``None`` when it has no record."""
        rec = self.records_of(suite, profile, workload, oracle)
        return rec[0].outcome if rec else None
