"""What a workflow gives the one report writer (:func:`proofdiff.report.writer.write_view`):
its result record, the page template that shows it, and its checks as rows for the CI formats.

Each workflow makes its own view: the differential (:mod:`proofdiff.report.differential_view`),
the gate (:mod:`proofdiff.gate.gate_view`), the bisection (:mod:`proofdiff.bisect.bisect_view`).
The writer alone writes files: summary.json, index.html, junit.xml and allure-results, the same
way for every workflow.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

import msgspec

__all__ = ["Check", "CheckStatus", "ReportView"]


class CheckStatus(StrEnum):
    """A check's status in the CI formats (Allure's names; JUnit maps them)."""

    PASSED = "passed"
    FAILED = "failed"
    BROKEN = "broken"  #: could not be judged (an ERROR record, a gate that could not run)
    SKIPPED = "skipped"
    UNKNOWN = "unknown"  #: undecided (a timing verdict INCONCLUSIVE)


class Check(msgspec.Struct, frozen=True, kw_only=True):
    """One row of junit.xml and one result of allure-results.

    Attributes:
        suite: the group (``validity``, ``timing``, ``decision``); name: the check within it.
        status: :class:`CheckStatus`. message: the first line shown; text: the whole of it.
        profile, workload: where it was judged ('' when not per profile).
        start_ms, stop_ms: when it was judged, ms since the epoch (Allure's timeline).
        history_id: a stable id across runs (Allure's history), default from the names.
    """

    suite: str
    name: str
    status: CheckStatus
    message: str = ""
    text: str = ""
    profile: str = ""
    workload: str = ""
    start_ms: int = 0
    stop_ms: int = 0
    history_id: str = ""

    @property
    def full_name(self) -> str:
        """``proofdiff.<suite>.<name>[<profile>-<workload>]``."""
        where = "-".join(x for x in (self.profile, self.workload) if x)
        return f"proofdiff.{self.suite}.{self.name}" + (f"[{where}]" if where else "")


class ReportView(msgspec.Struct, frozen=True, kw_only=True):
    """A workflow's report, as the writer needs it.

    Attributes:
        run_id: the folder name. kind: ``run`` | ``gate`` | ``bisect`` | ``nightly``.
        result: the workflow's result record, written as summary.json (msgspec).
        template: the page's jinja2 template in ``proofdiff/report/templates``; context: what
            it reads besides ``r`` (the result) and ``view``.
        decision: the one word (``SAME``, ``PASS``, ``found``); decision_line: its sentence;
            exit_code: the command's exit code; exit_meaning: what that code means for this
            command (the page's first line says it).
        checks: every check, for junit.xml and allure-results.
        environment: Allure's environment.properties (images and digests, profiles).
        categories: Allure's categories.json (failures grouped by kind).
        files: other files by relative path (the gate's JSON Schema and in-toto Statement,
            the timing samples in pytest-benchmark's format).
    """

    run_id: str
    kind: str
    result: Any
    template: str
    context: dict[str, Any] = msgspec.field(default_factory=dict)
    decision: str
    decision_line: str
    exit_code: int
    exit_meaning: str = ""
    checks: tuple[Check, ...] = ()
    environment: dict[str, str] = msgspec.field(default_factory=dict)
    categories: tuple[dict[str, Any], ...] = ()
    files: dict[str, bytes] = msgspec.field(default_factory=dict)

    @property
    def tone(self) -> str:
        """The page's colour for the decision: ``good`` (exit 0), ``undecided`` (exit 2) or
        ``bad`` (any other code)."""
        return {0: "good", 2: "undecided"}.get(self.exit_code, "bad")
