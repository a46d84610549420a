"""Tonight against the nights before it (pure: records and series in, standings out).

A check is keyed by ``(suite/oracle, profile, workload)``; its outcomes over the last nights on
the same machine fingerprint (:mod:`proofdiff.history.fingerprint`) decide its standing:

* **flaky**: it fails tonight and its outcome flipped pass <-> fail at least
  :data:`FLAKY_FLIPS` times over the nights compared and tonight: reported as flaky, never as
  new (issue 19: "oracles that flip between nights").
* **still failing**: it fails tonight and failed the last night that ran it.
* **new**: it fails tonight and passed the last night that ran it, or no night ran it (the
  first night on a machine: every failure is new).
* **fixed**: it passes tonight and failed the last night that ran it.

"Fails" is FAIL or ERROR; SKIPPED and INCONCLUSIVE nights neither pass nor fail, and are left
out of the flips. A failure an allowlist entry accepts (:mod:`proofdiff.model.allowlist`) has no
standing: it is shown in the differential's report as accepted.

A **slowdown** is a change point in the worse direction (:func:`proofdiff.history.view.analyse`,
Hunter's method) that the series shows with tonight's run and did not show without it.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import TYPE_CHECKING

from proofdiff.model.oracle_records import OracleRecord
from proofdiff.model.status import Verdict
from proofdiff.nightly.nightly_result import CheckStanding, NightDecision, Slowdown, Standing

if TYPE_CHECKING:
    from proofdiff.history.view import SeriesView

__all__ = ["FLAKY_FLIPS", "Key", "decide", "new_slowdowns", "outcomes_of", "standings"]

#: pass <-> fail changes over the nights compared and tonight that make a failing check flaky.
FLAKY_FLIPS = 2

#: ``(suite/oracle, profile, workload)``.
Key = tuple[str, str, str]

_BAD = ("fail", "error")
_JUDGED = ("pass", "fail", "error")


def outcomes_of(records: Sequence[OracleRecord]) -> dict[Key, str]:
    """Each check's outcome (``pass``, ``fail``...), the worst where several images ran it."""
    out: dict[Key, str] = {}
    for r in records:
        key = (r.check, r.profile, r.workload)
        if key not in out or (r.outcome.value in _BAD and out[key] not in _BAD):
            out[key] = r.outcome.value
    return out


def standings(tonight: Mapping[Key, str], past: Sequence[Mapping[Key, str]],
              accepted: Collection[Key] = ()) -> list[CheckStanding]:
    """The standing of every check that fails tonight or failed the last night that ran it
    (module docstring), in key order.

    Args:
        tonight: :func:`outcomes_of` tonight's records. past: the same for each earlier night
            compared, oldest first. accepted: keys an allowlist entry accepted tonight.
    """
    out = []
    for key, now in sorted(tonight.items()):
        if key in accepted:
            continue
        hist = tuple(night.get(key, "") for night in past)
        judged = [o for o in (*hist, now) if o in _JUDGED]
        flips = sum((a in _BAD) != (b in _BAD) for a, b in zip(judged, judged[1:]))
        before = next((o for o in reversed(hist) if o in _JUDGED), "")
        if now in _BAD:
            standing = (Standing.FLAKY if flips >= FLAKY_FLIPS else Standing.STILL_FAILING
                        if before in _BAD else Standing.NEW)
        elif now == "pass" and before in _BAD:
            standing = Standing.FIXED
        else:
            continue
        out.append(CheckStanding(check=key[0], profile=key[1], workload=key[2],
                                 standing=standing, outcome=now, past=hist, flips=flips))
    return out


def new_slowdowns(before: Sequence[SeriesView], after: Sequence[SeriesView]) -> list[Slowdown]:
    """Regressions (change points in the metric's worse direction) that ``after`` (the series
    with tonight's run) shows and ``before`` (without it) did not, by series and step run."""
    seen = {(v.series.machine.fingerprint, v.series.profile, v.series.workload,
             v.series.metric.name, c.run_id) for v in before for c in v.changes}
    out = []
    for v in after:
        s = v.series
        for c in v.changes:
            key = (s.machine.fingerprint, s.profile, s.workload, s.metric.name, c.run_id)
            if c.regression and key not in seen:
                out.append(Slowdown(metric=s.metric.name, unit=s.metric.unit, profile=s.profile,
                                    workload=s.workload, run_id=c.run_id,
                                    headline=c.headline(s.metric.unit),
                                    evidence=c.step.evidence(s.metric.unit)))
    return out


def _where(c: CheckStanding) -> str:
    return f"{c.check} on {c.profile}/{c.workload}"


def decide(*, verdict: Verdict, verdict_line: str, checks: Sequence[CheckStanding],
           slowdowns: Sequence[Slowdown], nights: int, errors: Sequence[str] = (),
           interrupted: bool = False) -> tuple[NightDecision, str]:
    """The night's decision and its one line: INTERRUPTED; ERROR (the night could not run or
    not be compared: ``errors``); NEW (a new failure or a new slowdown); UNDECIDED (nothing new,
    but tonight's differential is INCOMPLETE: a check skipped, undecided or without outcome);
    CLEAN. Flaky, still failing and fixed checks are counted in the line, never NEW."""
    if interrupted or verdict is Verdict.INTERRUPTED:
        return NightDecision.INTERRUPTED, "INTERRUPTED: the report holds what was done"
    if errors:
        head = (errors[0].strip().splitlines() or [""])[0]
        return NightDecision.ERROR, f"ERROR: the night could not run or be compared: {head}"
    new = [c for c in checks if c.standing is Standing.NEW]
    counts = [f"{n} {s.value}" for s in (Standing.STILL_FAILING, Standing.FLAKY, Standing.FIXED)
              if (n := sum(c.standing is s for c in checks))]
    first = "" if nights else " (the first night on this machine: every failure is new)"
    rest = f"; {', '.join(counts)}" if counts else ""
    if new or slowdowns:
        what = ([f"{_where(c)} fails ({c.outcome})" for c in new[:3]]
                + [f"{s.metric} on {s.profile}/{s.workload}: {s.headline}" for s in slowdowns[:2]])
        more = len(new) + len(slowdowns) - len(what)
        return NightDecision.NEW, (f"NEW{first}: {'; '.join(what)}"
                                   + (f" (+{more} more)" if more else "") + rest)
    if verdict is Verdict.INCOMPLETE:
        return NightDecision.UNDECIDED, f"UNDECIDED: nothing new, but {verdict_line}{rest}"
    return NightDecision.CLEAN, (f"CLEAN: nothing new against {nights} earlier night(s)"
                                 f"{rest}; tonight's run: {verdict.value}")
