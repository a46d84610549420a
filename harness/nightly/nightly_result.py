"""The nightly's records: what ``proofdiff nightly`` decided about tonight's run against the
nights before it on the same machine (``<run dir>/summary.json``).

Tonight's run itself is the differential's :class:`~proofdiff.model.result.DifferentialResult`
(``differential/`` beside it, and the history's row); these records only add what the
comparison established: each failing check's standing across nights and each new timing step.
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import StrEnum

import msgspec

from proofdiff.bisect.bisect_result import ChangeItem

__all__ = ["NIGHTLY_SCHEMA_VERSION", "CheckStanding", "NightBisection", "NightDecision",
           "NightlyResult", "SeriesCompare", "Slowdown", "Standing"]

#: Version of the nightly's summary.json schema (2: ``bisections``, ``bisect_budget_s``; 3:
#: tonight against the recent nights, ``timing``, ``confirmed``, each slowdown's ``kind``,
#: step and the nights and builds on each side).
NIGHTLY_SCHEMA_VERSION = 3


class NightDecision(StrEnum):
    """What the night says, with its exit code (docs/guide/nightly.md, ``proofdiff nightly
    --help``)."""

    CLEAN = "clean"              #: nothing new: exit 0
    NEW = "new"                  #: a new failure or a new slowdown: exit 1
    UNDECIDED = "undecided"      #: nothing new, but a check was skipped, undecided or missing,
    #: or none passed: exit 2
    ERROR = "error"              #: the night could not run, not be compared, or a check
    #: could not be judged (an ERROR record): exit 3
    INTERRUPTED = "interrupted"  #: Ctrl-C / SIGTERM: exit 130

    @property
    def exit_code(self) -> int:
        """0 clean, 1 new, 2 undecided, 3 error, 130 interrupted."""
        return {"clean": 0, "new": 1, "undecided": 2, "error": 3,
                "interrupted": 130}[self.value]


class Standing(StrEnum):
    """A check's standing across nights (:func:`proofdiff.nightly.compare.standings`)."""

    NEW = "new"                      #: fails tonight, passed (or was not run) the night before
    STILL_FAILING = "still-failing"  #: fails tonight and failed the night before too
    FLAKY = "flaky"                  #: fails tonight and flipped pass <-> fail across the window
    FIXED = "fixed"                  #: passes tonight, failed the night before
    ERROR = "error"                  #: could not be judged tonight (an ERROR record)
    MISSING = "missing"              #: had a record the last night and has none tonight


class CheckStanding(msgspec.Struct, frozen=True, kw_only=True):
    """One check (``suite/oracle`` on a profile and workload) whose standing is worth telling.

    Attributes:
        check, profile, workload: the check's key (tonight's record has the message and
            evidence). standing: :class:`Standing`. outcome: tonight's outcome ('' for a
            ``missing`` check: no record tonight).
        past: its outcomes over the nights compared, oldest first ('' where a night did not
            run it). flips: pass <-> fail changes over ``past`` and tonight (an ERROR night
            is no pass and no fail: it is left out, as a skipped one is).
        started_unix_s, stopped_unix_s: when tonight's record was judged (s since the epoch;
            Allure's timeline).
    """

    check: str
    profile: str
    workload: str
    standing: Standing
    outcome: str
    past: tuple[str, ...] = ()
    flips: int = 0
    started_unix_s: float = 0.0
    stopped_unix_s: float = 0.0


class Slowdown(msgspec.Struct, frozen=True, kw_only=True):
    """A timing step in the worse direction: tonight worse than the recent nights (``kind``
    ``tonight``: :mod:`proofdiff.history.tonight`), or a change point that the series shows
    with tonight and did not show without it (``change-point``, Hunter's method:
    :mod:`proofdiff.history.changes`: a slow drift, or a step the first night did not show).

    Attributes:
        metric, unit, profile, workload: the series (on this machine). run_id: the first run
            of the new level. headline: run, relative step and images before and after.
            evidence: the numbers: the nights on each side, the test's statistic and p.
        kind: ``tonight`` or ``change-point``. step: the relative step (+0.10 = 10 % higher).
        before, images_before: the nights of the old level (oldest first) and their builds;
            image_after: the build of the new level's first night.
        confirms: for a change point that confirms a step flagged on its own night, that
            night's run id ('' otherwise).
        started_unix_s, stopped_unix_s: when the history was read and analysed.
    """

    metric: str
    unit: str
    profile: str
    workload: str
    run_id: str
    headline: str
    evidence: str
    kind: str = "change-point"
    step: float = 0.0
    before: tuple[str, ...] = ()
    images_before: tuple[str, ...] = ()
    image_after: str = ""
    confirms: str = ""
    started_unix_s: float = 0.0
    stopped_unix_s: float = 0.0


class SeriesCompare(msgspec.Struct, frozen=True, kw_only=True):
    """What tonight's test said of one timing series (:mod:`proofdiff.history.tonight`):
    ``outcome`` ``new`` (worse than the recent nights), ``still slower`` (worse, as the night
    before was: the same step), ``not worse`` or ``undecided`` (too few earlier nights, said
    why in ``line``); ``step``: tonight over the recent level less
    1; ``nights``: the recent nights compared; ``mde``: the step this series flags on its first
    night 9 times in 10 at its measured spread (``None`` when undecided)."""

    metric: str
    profile: str
    workload: str
    outcome: str
    line: str
    step: float = 0.0
    nights: int = 0
    mde: float | None = None


class NightBisection(msgspec.Struct, frozen=True, kw_only=True):
    """What the night did about one new divergence (:mod:`proofdiff.nightly.night_bisect`).

    Attributes:
        check, workload: the divergence's check (``suite/oracle``) and workload; baseline,
            profile: the passing and the failing profile. status: the bisection's
            (:class:`~proofdiff.bisect.bisect_result.BisectResult`: ``found``, ``unresolved``,
            ``budget``, ``good-fails``, ``bad-passes``, ``error``, ``interrupted``), or the
            night's reason for not starting one: ``budget-spent`` (the night's
            ``--bisect-budget`` was spent), ``disabled`` (``--bisect-budget 0``),
            ``not-bisectable`` (an ERROR, or a comparison the baseline has no record of).
        line: the one-line conclusion. change: the proven 1-minimal change (``found`` only;
            never a ranking). run_id: the bisection's report folder beside the night's
            summary.json ('' when none ran). probes: its probes. wall_s: its wall time, s.
        started_unix_s, stopped_unix_s: when it started and ended (s since the epoch).
    """

    check: str
    workload: str
    baseline: str
    profile: str
    status: str
    line: str
    change: tuple[ChangeItem, ...] = ()
    run_id: str = ""
    probes: int = 0
    wall_s: float = 0.0
    started_unix_s: float = 0.0
    stopped_unix_s: float = 0.0

    @property
    def found(self) -> bool:
        """A proven minimal change."""
        return self.status == "found"

    def summary(self) -> str:
        """``CHECK on PROFILE/WORKLOAD: PATH + PATH`` (found), else ``...: UNRESOLVED (why)``."""
        where = f"{self.check} on {self.profile}/{self.workload}"
        if self.found:
            return f"{where}: " + " + ".join(c.path for c in self.change)
        return f"{where}: {self.status.upper()}: {self.line}"


#: The decisions from the gravest down: a fleet's night takes the first that any host gave.
GRAVITY = (NightDecision.INTERRUPTED, NightDecision.NEW, NightDecision.ERROR,
           NightDecision.UNDECIDED, NightDecision.CLEAN)


def worst(decisions: Iterable[NightDecision]) -> NightDecision:
    """The gravest of ``decisions`` (:data:`GRAVITY`): one host's new failure fails the fleet's
    night, one host that could not run makes it ERROR, never CLEAN; none at all is ERROR."""
    got = set(decisions)
    return next((d for d in GRAVITY if d in got), NightDecision.ERROR)


class HostNight(msgspec.Struct, frozen=True, kw_only=True):
    """One host's night within a fleet's night: its decision, and its own night's run id
    (its report: ``<report_dir>/<run_id>/``, beside the fleet's). machine: its fingerprint's
    label."""

    host: str
    run_id: str
    decision: NightDecision
    decision_line: str
    exit_code: int
    machine: str = ""


class NightlyResult(msgspec.Struct, frozen=True, kw_only=True):
    """Everything a nightly established.

    Attributes:
        schema_version: :data:`NIGHTLY_SCHEMA_VERSION`. run_id, created_unix_s: the night's
            (created = when decided); started_unix_s: when it started.
        decision, decision_line, exit_code: the conclusion (``exit_code`` = decision's).
        verdict, verdict_line: tonight's differential (its report: ``differential/``).
        machine: the machine fingerprint's label; history: the database (URL, password
            hidden). nights: the earlier nights compared (their run ids, oldest first).
        checks: every failing check's standing, and the checks fixed since last night.
        slowdowns: new timing steps (tonight worse than the recent nights, or a change point
            new tonight that no earlier night flagged). confirmed: change points new tonight
            that confirm a step flagged on its own night (not new). timing: what tonight's
            test said of each timing series (new, not worse, undecided). bisections: each new
            divergence's bisection (or why
            none ran), in the divergences' order; bisect_budget_s: the night's budget for them
            (0 = disabled). accepted: allowlist entries that accepted a failure
            tonight (``check on profile/workload: entry``). errors: why the night could not
            run or not be compared. wall_s: the night's wall time, s. allure_history: where
            allure-results/history/ was carried from (the previous night's Allure history),
            or why it was not ('' = not asked).
        hosts: a fleet's night (``--cluster``/``--hosts``): each host's night, whose report
            holds its checks, slowdowns and bisections (this one's are then empty).
    """

    run_id: str
    created_unix_s: float
    decision: NightDecision
    decision_line: str
    exit_code: int
    schema_version: int = NIGHTLY_SCHEMA_VERSION
    verdict: str = ""
    verdict_line: str = ""
    machine: str = ""
    history: str = ""
    nights: tuple[str, ...] = ()
    checks: tuple[CheckStanding, ...] = ()
    slowdowns: tuple[Slowdown, ...] = ()
    confirmed: tuple[Slowdown, ...] = ()
    timing: tuple[SeriesCompare, ...] = ()
    bisections: tuple[NightBisection, ...] = ()
    bisect_budget_s: float = 0.0
    accepted: tuple[str, ...] = ()
    errors: tuple[str, ...] = ()
    wall_s: float = 0.0
    started_unix_s: float = 0.0
    allure_history: str = ""
    hosts: tuple[HostNight, ...] = ()

    def of(self, standing: Standing) -> list[CheckStanding]:
        """The checks of one standing."""
        return [c for c in self.checks if c.standing is standing]
