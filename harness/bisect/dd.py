"""Zeller's delta debugging, ``dd``: isolate a minimal difference between a passing and a
failing configuration (A. Zeller and R. Hildebrandt, "Simplifying and Isolating
Failure-Inducing Input", IEEE TSE 28(2), 2002, section 5, the general ``dd`` algorithm).

Written here rather than taken from picire: picire implements ``ddmin`` (it shrinks one failing
input); the two-sided ``dd`` that the gate between a good and a bad profile needs, with
UNRESOLVED outcomes, suspect-first ordering and batched probes, is not in it.

A configuration is a set of unit indices applied to the good profile: ``frozenset()`` is the
good profile, the full set the bad one. ``test(config)`` is PASS, FAIL (the failure of the bad
profile, the same oracle and signature) or UNRESOLVED (the probe broke, failed another way, or
was partial: the paper's "?"). :func:`isolate`:

1. **Suspects first.** Units come ranked (most suspect first). The prefixes good + top-1,
   good + top-2, ... (up to ``prefix``) are probed in turn; the first that fails gives a
   failing configuration one unit away from a passing one, so the usual one- or two-key
   causes take a few probes.
2. **dd** (the paper's four cases, in its order) between the last passing prefix and the
   first failing configuration, or the bad profile when no prefix failed. Its result is a pair
   ``(c_pass, c_fail)`` whose difference is 1-minimal: no single unit of it can be moved
   without losing the pass/fail pair. A difference of more than one unit means that every
   one-unit neighbour of the pair (``c_pass`` plus a unit, ``c_fail`` minus a unit) was
   UNRESOLVED: dd could not narrow it, so the result is UNRESOLVED, with those probes named,
   never "found" (the paper's dd returns such a difference; a bisection that says "this is
   the cause" must not).
3. **Context.** ``c_fail`` may hold units that the failure does not need (dd isolates a
   difference, not a cause set). The difference alone is probed first; when it does not fail
   alone, each unit of ``c_fail - good - difference`` is removed in turn, and goes when
   ``c_fail`` still fails without it. What remains is the failure-inducing change.
4. **Confirmation: 1-minimality, afresh.** The change is probed once more, and then the change
   with each of its units removed in turn, all as new probes (no cache). It is reported as
   found only when the change fails and every one of those removals passes: the change is then
   1-minimal (Zeller and Hildebrandt, definition 8: no single unit can be removed with the
   failure kept), confirmed with ``1 + len(change)`` probes. Any other outcome (a flaky oracle,
   a removal that broke or still fails) makes the result UNRESOLVED, with the reason.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import msgspec

from proofdiff.model import progress

__all__ = ["FAIL", "PASS", "UNRESOLVED", "DDResult", "isolate"]

PASS, FAIL, UNRESOLVED = "PASS", "FAIL", "UNRESOLVED"

Config = frozenset[int]
#: Outcomes of configurations: ``tester(configs, fresh)`` -> one outcome per config, in order;
#: ``fresh`` asks for new probes, not cached ones (the confirmation).
Tester = Callable[[Sequence[Config], bool], list[str]]


class DDResult(msgspec.Struct, frozen=True, kw_only=True):
    """What :func:`isolate` established (unit indices).

    Attributes:
        status: ``found`` | ``unresolved``. change: the failure-inducing change from the good
            profile, most suspect first (found: 1-minimal, confirmed). difference: the isolated
            difference between ``passing`` and ``failing``. passing, failing: the final pair.
        reason: why it is unresolved ('' when found). steps: one line per decision taken.
        broken: the configurations whose probes broke (UNRESOLVED) and left the result
            unresolved: the difference's one-unit neighbours, or a confirmation probe.
        confirmed: probes the confirmation ran (``1 + len(change)`` when it ran; 0 when dd
            stopped before it).
    """

    status: str
    change: tuple[int, ...] = ()
    difference: tuple[int, ...] = ()
    passing: tuple[int, ...] = ()
    failing: tuple[int, ...] = ()
    reason: str = ""
    steps: tuple[str, ...] = ()
    broken: tuple[tuple[int, ...], ...] = ()
    confirmed: int = 0


def _split(items: Sequence[int], n: int) -> list[list[int]]:
    size, extra = divmod(len(items), n)
    out, start = [], 0
    for i in range(n):
        end = start + size + (1 if i < extra else 0)
        out.append(list(items[start:end]))
        start = end
    return [s for s in out if s]


def isolate(n_units: int, tester: Tester, *, order: Sequence[int] | None = None,
            prefix: int = 3, batch: bool = False) -> DDResult:
    """Isolate the failure-inducing units (module docstring), shown as a progress task
    (:mod:`proofdiff.model.progress`, topic ``bisect``): configurations judged so far (cached
    ones included), and the last outcomes.

    Args and Returns: as :func:`_isolate`.
    """
    with progress.task("bisect", f"dd over {n_units} units") as shown:
        def shown_tester(configs: Sequence[Config], fresh: bool) -> list[str]:
            shown.advance(0, note=f"testing {len(configs)} configuration(s)"
                          + (" afresh" if fresh else ""))
            got = tester(configs, fresh)
            shown.advance(len(configs), note=f"last: {', '.join(got)}")
            return got
        return _isolate(n_units, shown_tester if shown.live else tester, order=order,
                        prefix=prefix, batch=batch)


def _isolate(n_units: int, tester: Tester, *, order: Sequence[int] | None = None,
             prefix: int = 3, batch: bool = False) -> DDResult:
    """Isolate the failure-inducing units (module docstring).

    Args:
        n_units: how many units the bad profile adds to the good one.
        tester: probes configurations (the good and bad profiles are known to pass and fail).
        order: unit indices, most suspect first (default 0..n-1).
        prefix: how many suspect prefixes to probe before dd (0: dd from the start).
        batch: probe every configuration of one dd step at once (probes side by side).

    Returns:
        The :class:`DDResult`: ``found`` only with a confirmed 1-minimal change.
    """
    rank = {u: i for i, u in enumerate(order if order is not None else range(n_units))}
    steps: list[str] = []
    if n_units < 1:
        return DDResult(status="unresolved", reason="the good and the bad profile do not differ: "
                        "nothing to isolate (their different outcomes are the oracle's noise)")

    def ranked(cfg: Config) -> list[int]:
        return sorted(cfg, key=lambda u: rank.get(u, len(rank) + u))

    def test(cfg: Config) -> str:
        return tester([cfg], False)[0]

    full: Config = frozenset(range(n_units))
    c_pass: Config = frozenset()
    c_fail: Config = full
    tops = ranked(full)
    for k in range(1, min(prefix, n_units - 1) + 1):
        cfg = frozenset(tops[:k])
        got = test(cfg)
        steps.append(f"suspects: good + top-{k} {ranked(cfg)} -> {got}")
        if got == FAIL:
            c_fail = cfg
            break
        if got != PASS:
            break
        c_pass = cfg
    n = 2
    while True:
        delta = ranked(c_fail - c_pass)
        if len(delta) <= 1:
            break
        subsets = _split(delta, n)
        ups = [c_pass | frozenset(s) for s in subsets]
        downs = [c_fail - frozenset(s) for s in subsets]
        if batch:
            tester([*ups, *downs], False)  # side by side; the loop below reads the cache
        moved = False
        for case, cfgs, want in ((1, ups, FAIL), (2, downs, PASS), (3, ups, PASS),
                                 (4, downs, FAIL)):
            for cfg in cfgs:
                if test(cfg) != want:
                    continue
                if want == FAIL:
                    c_fail = cfg
                else:
                    c_pass = cfg
                n = 2 if case <= 2 else max(n - 1, 2)
                steps.append(f"dd case {case}: {'failing' if want == FAIL else 'passing'} "
                             f"now {ranked(cfg)}")
                moved = True
                break
            if moved:
                break
        if not moved:
            if n >= len(delta):
                break
            n = min(2 * n, len(delta))
    difference = ranked(c_fail - c_pass)
    if len(difference) > 1:
        return _not_narrowed(difference, c_pass, c_fail, test, ranked, steps)
    context = ranked(c_fail - frozenset(difference))
    if context:  # most often none of it is needed: one probe says so
        got = test(frozenset(difference))
        steps.append(f"context: the difference alone {difference} -> {got}")
        if got == FAIL:
            c_fail, context = frozenset(difference), []
    for u in context[::-1]:
        cfg = c_fail - {u}
        got = test(cfg)
        steps.append(f"context: without {u} -> {got}")
        if got == FAIL:
            c_fail = cfg
    return _confirm(ranked(c_fail), difference, tester, steps)


def _not_narrowed(difference: list[int], c_pass: Config, c_fail: Config,
                  test: Callable[[Config], str], ranked: Callable[[Config], list[int]],
                  steps: list[str]) -> DDResult:
    """The UNRESOLVED result of a difference of more than one unit (module docstring, 2): its
    one-unit neighbours (probed by dd's last step; the cache answers) and how they ended."""
    neighbours = [c_pass | {u} for u in difference] + [c_fail - {u} for u in difference]
    outcomes = [(cfg, test(cfg)) for cfg in neighbours]
    broken = tuple(tuple(ranked(cfg)) for cfg, got in outcomes if got == UNRESOLVED)
    steps.append(f"dd: the difference {difference} could not be narrowed: "
                 f"{len(broken)} of its {len(neighbours)} one-unit neighbours broke")
    return DDResult(status="unresolved", difference=tuple(difference),
                    passing=tuple(ranked(c_pass)), failing=tuple(ranked(c_fail)),
                    reason=(f"dd could not narrow a difference of {len(difference)} units: "
                            f"{len(broken)} of its {len(neighbours)} one-unit neighbours broke "
                            "(UNRESOLVED) rather than passed or failed, so no cause is claimed"),
                    steps=tuple(steps), broken=broken)


def _confirm(change: list[int], difference: list[int], tester: Tester,
             steps: list[str]) -> DDResult:
    """Probe the change and the change without each of its units, afresh (module docstring,
    4); found only when the change fails and every removal passes."""
    c_fail = frozenset(change)
    removals = [c_fail - {u} for u in change]
    got = tester([c_fail, *removals], True)
    steps.append(f"confirm: {change} -> {got[0]}; "
                 + ", ".join(f"without {u} -> {o}" for u, o in zip(change, got[1:], strict=True)))
    broken = tuple(tuple(u for u in change if u in cfg) for cfg, o in
                   zip([c_fail, *removals], got, strict=True) if o == UNRESOLVED)
    why = []
    if got[0] != FAIL:
        why.append(f"the change did not fail again (it gave {got[0]}): a flaky oracle or a "
                   "probe that broke")
    for u, o in zip(change, got[1:], strict=True):
        if o == FAIL:
            why.append(f"without unit {u} it still fails, so the change is not 1-minimal "
                       "(the earlier probe said otherwise: a flaky oracle)")
        elif o != PASS:
            why.append(f"without unit {u} the probe broke, so 1-minimality is not shown")
    return DDResult(status="unresolved" if why else "found", change=tuple(change),
                    difference=tuple(difference),
                    passing=tuple(u for u in change if u not in difference),
                    failing=tuple(change), reason="; ".join(why), steps=tuple(steps),
                    broken=broken, confirmed=1 + len(removals))
