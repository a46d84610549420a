"""Tonight against the nights before it (pure: records and series in, standings out).

A check is keyed by ``(suite/oracle, profile, workload)``; its outcomes over the last nights on
the same machine fingerprint (:mod:`proofdiff.history.fingerprint`) decide its standing:

* **error**: it is ERROR tonight: nothing was judged (its daemon did not start, its verifier
  broke), so it is neither new nor still failing nor flaky, and the night is at best ERROR.
* **flaky**: it fails tonight and its outcome flipped pass <-> fail at least
  :data:`FLAKY_FLIPS` times over the nights compared and tonight: reported as flaky, never as
  new.
* **still failing**: it fails tonight and failed the last night that judged it.
* **new**: it fails tonight and passed the last night that judged it, or no night judged it
  (the first night on a machine: every failure is new).
* **fixed**: it passes tonight and failed the last night that judged it.
* **missing**: the last night compared has a record of it and tonight has none (a suite,
  profile or workload that did not run): never silence, and the night is at best UNDECIDED.

"Fails" is FAIL. ERROR, SKIPPED and INCONCLUSIVE nights neither pass nor fail, and are left
out of the flips and of "the last night that judged it". A failure an allowlist entry accepts
(:mod:`proofdiff.model.allowlist`: a FAIL, never an ERROR) has no standing: it is shown in the
differential's report as accepted.

A **slowdown** is tonight worse than the recent nights, or a change point new tonight that no
earlier night flagged (:mod:`proofdiff.nightly.night_timing`).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

from proofdiff.model.oracle_records import OracleRecord
from proofdiff.model.status import Verdict
from proofdiff.nightly.nightly_result import (CheckStanding, NightDecision, SeriesCompare,
                                              Slowdown, Standing)

__all__ = ["FLAKY_FLIPS", "Key", "decide", "outcomes_of", "standings", "worse"]

#: pass <-> fail changes over the nights compared and tonight that make a failing check flaky.
FLAKY_FLIPS = 2

#: ``(suite/oracle, profile, workload)``.
Key = tuple[str, str, str]

_BAD = ("fail",)
_JUDGED = ("pass", "fail")


def worse(a: str, b: str) -> str:
    """The worse of two outcomes of one check on one night (several images ran it): an ERROR
    over a FAIL over anything else, since one image that could not be judged leaves the check
    unjudged; ``a`` where they rank alike."""
    rank = {"error": 2, "fail": 1}
    return b if rank.get(b, 0) > rank.get(a, 0) else a


def outcomes_of(records: Sequence[OracleRecord]) -> dict[Key, str]:
    """Each check's outcome (``pass``, ``fail``...), the worst where several images ran it
    (:func:`worse`)."""
    out: dict[Key, str] = {}
    for r in records:
        key = (r.check, r.profile, r.workload)
        out[key] = worse(out[key], r.outcome.value) if key in out else r.outcome.value
    return out


def standings(tonight: Mapping[Key, str], past: Sequence[Mapping[Key, str]],
              accepted: Collection[Key] = ()) -> list[CheckStanding]:
    """The standing of every check that fails or errs tonight, passes after failing the last
    night that judged it, or is missing tonight after a record the last night compared
    (module docstring), in key order.

    Args:
        tonight: :func:`outcomes_of` tonight's records. past: the same for each earlier night
            compared, oldest first. accepted: keys an allowlist entry accepted tonight.
    """
    out = []
    last = past[-1] if past else {}
    for key in sorted({*tonight, *last}):
        if key in accepted:
            continue
        now = tonight.get(key, "")
        hist = tuple(night.get(key, "") for night in past)
        judged = [o for o in (*hist, now) if o in _JUDGED]
        flips = sum((a in _BAD) != (b in _BAD) for a, b in zip(judged, judged[1:]))
        before = next((o for o in reversed(hist) if o in _JUDGED), "")
        if not now:
            standing = Standing.MISSING
        elif now == "error":
            standing = Standing.ERROR
        elif now in _BAD:
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
           slowdowns: Sequence[Slowdown], nights: int, passed: int, errors: Sequence[str] = (),
           interrupted: bool = False, timing: Sequence[SeriesCompare] = (),
           confirmed: Sequence[Slowdown] = ()) -> tuple[NightDecision, str]:
    """The night's decision and its one line, first match wins: INTERRUPTED; ERROR (the night
    could not run or not be compared: ``errors``); NEW (a new failure or a new slowdown);
    ERROR (a check could not be judged tonight: an ``error`` standing, or tonight's verdict
    ERROR); UNDECIDED (nothing new, but a check is ``missing``, tonight's differential is
    INCOMPLETE (a check skipped, undecided or without outcome), or ``passed`` is 0: no check
    passed tonight, so nothing says the night is clean); CLEAN. Flaky, still failing and fixed
    checks are counted in the line, never NEW; so are the timing series tonight could not be
    compared on yet (``timing``, undecided: too few earlier nights), which a CLEAN line names,
    and the steps that change points confirm tonight (``confirmed``: flagged on their own
    night, not new).

    Args:
        passed: tonight's checks that passed (PASS records; an accepted failure is no pass).
    """
    if interrupted or verdict is Verdict.INTERRUPTED:
        return NightDecision.INTERRUPTED, "INTERRUPTED: the report holds what was done"
    if errors:
        head = (errors[0].strip().splitlines() or [""])[0]
        return NightDecision.ERROR, f"ERROR: the night could not run or be compared: {head}"
    new = [c for c in checks if c.standing is Standing.NEW]
    erred = [c for c in checks if c.standing is Standing.ERROR]
    missing = [c for c in checks if c.standing is Standing.MISSING]
    counts = [f"{n} {s.value}" for s in (Standing.STILL_FAILING, Standing.FLAKY, Standing.FIXED,
                                         Standing.ERROR, Standing.MISSING)
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
    if erred or verdict is Verdict.ERROR:
        which = "; ".join(_where(c) for c in erred[:3]) or verdict_line
        return NightDecision.ERROR, (f"ERROR: {len(erred) or 'a'} check(s) could not be "
                                     f"judged tonight: {which}{rest}")
    if missing:
        return NightDecision.UNDECIDED, (
            f"UNDECIDED: nothing new, but {len(missing)} check(s) of the last night have no "
            f"record tonight: {'; '.join(_where(c) for c in missing[:3])}{rest}")
    if verdict is Verdict.INCOMPLETE:
        return NightDecision.UNDECIDED, f"UNDECIDED: nothing new, but {verdict_line}{rest}{quiet}"
    if not passed:
        return NightDecision.UNDECIDED, (f"UNDECIDED: nothing new, but no check passed "
                                         f"tonight{rest}; tonight's run: {verdict.value}")
    return NightDecision.CLEAN, (f"CLEAN: nothing new against {nights} earlier night(s)"
                                 f"{rest}{quiet}; tonight's run: {verdict.value}")
