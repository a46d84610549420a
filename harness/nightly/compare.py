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

A **slowdown** is tonight worse than the recent nights, or a change point new tonight that no
earlier night flagged (:mod:`proofdiff.nightly.night_timing`).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

from proofdiff.model.oracle_records import OracleRecord
from proofdiff.model.status import Verdict
from proofdiff.nightly.nightly_result import (CheckStanding, NightDecision, SeriesCompare,
                                              Slowdown, Standing)

__all__ = ["FLAKY_FLIPS", "Key", "decide", "outcomes_of", "standings"]

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


def _where(c: CheckStanding) -> str:
    return f"{c.check} on {c.profile}/{c.workload}"


def decide(*, verdict: Verdict, verdict_line: str, checks: Sequence[CheckStanding],
           slowdowns: Sequence[Slowdown], nights: int, errors: Sequence[str] = (),
           interrupted: bool = False, timing: Sequence[SeriesCompare] = (),
           confirmed: Sequence[Slowdown] = ()) -> tuple[NightDecision, str]:
    """The night's decision and its one line: INTERRUPTED; ERROR (the night could not run or
    not be compared: ``errors``); NEW (a new failure or a new slowdown); UNDECIDED (nothing new,
    but tonight's differential is INCOMPLETE: a check skipped, undecided or without outcome);
    CLEAN. Flaky, still failing and fixed checks are counted in the line, never NEW; so are
    the timing series tonight could not be compared on yet (``timing``, undecided: too few
    earlier nights), which a CLEAN line names, and the steps that change points confirm
    tonight (``confirmed``: flagged on their own night, not new)."""
    if interrupted or verdict is Verdict.INTERRUPTED:
        return NightDecision.INTERRUPTED, "INTERRUPTED: the report holds what was done"
    if errors:
        head = (errors[0].strip().splitlines() or [""])[0]
        return NightDecision.ERROR, f"ERROR: the night could not run or be compared: {head}"
    new = [c for c in checks if c.standing is Standing.NEW]
    counts = [f"{n} {s.value}" for s in (Standing.STILL_FAILING, Standing.FLAKY, Standing.FIXED)
              if (n := sum(c.standing is s for c in checks))]
    first = "" if nights else " (the first night on this machine: every failure is new)"
    if confirmed:
        counts.append(f"{len(confirmed)} step(s) confirmed ("
                      + ", ".join(f"{c.metric} on {c.profile}/{c.workload} at {c.confirms}"
                                  for c in confirmed[:2]) + ")")
    still = [t for t in timing if t.outcome == "still slower"]
    if still:
        counts.append(f"{len(still)} series still slower than before their last step")
    rest = f"; {', '.join(counts)}" if counts else ""
    short = [t for t in timing if t.outcome == "undecided"]
    quiet = (f"; timing not compared yet on {len(short)} series ({short[0].line})"
             if short else "")
    if new or slowdowns:
        what = ([f"{_where(c)} fails ({c.outcome})" for c in new[:3]]
                + [f"{s.metric} on {s.profile}/{s.workload}: {s.headline}" for s in slowdowns[:2]])
        more = len(new) + len(slowdowns) - len(what)
        return NightDecision.NEW, (f"NEW{first}: {'; '.join(what)}"
                                   + (f" (+{more} more)" if more else "") + rest)
    if verdict is Verdict.INCOMPLETE:
        return NightDecision.UNDECIDED, f"UNDECIDED: nothing new, but {verdict_line}{rest}{quiet}"
    return NightDecision.CLEAN, (f"CLEAN: nothing new against {nights} earlier night(s)"
                                 f"{rest}{quiet}; tonight's run: {verdict.value}")
