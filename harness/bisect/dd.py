"""Zeller's delta debugging, ``dd``: isolate a minimal difference between a passing and a
failing configuration (A. Zeller and R. Hildebrandt, "Simplifying and Isolating
Failure-Inducing Input", IEEE TSE 28(2), 2002, section 5, the general ``dd`` algorithm).

Written here rather than taken from picire: picire implements ``ddmin`` (it shrinks one failing
input); the two-sided ``dd`` that the gate between a good and a bad profile needs, with
UNRESOLVED outcomes, suspect-first ordering and batched probes, is not in it.

A configuration is a set of unit indices applied to the good profile: ``frozenset()`` is the
good profile, the full set the bad one. ``test(config)`` is PASS, FAIL or UNRESOLVED (the probe
broke rather than passed or failed, as in the paper). :func:`isolate`:

1. **Suspects first.** Units come ranked (most suspect first). The prefixes good + top-1,
   good + top-2, ... (up to ``prefix``) are probed in turn; the first that fails gives a
   failing configuration one unit away from a passing one, so the usual one- or two-key
   causes take a few probes.
2. **dd** (the paper's four cases, in its order) between the last passing prefix and the
   first failing configuration, or the bad profile when no prefix failed. Its result is a pair
   ``(c_pass, c_fail)`` whose difference is 1-minimal: no single unit of it can be moved
   without losing the pass/fail pair.
3. **Context.** ``c_fail`` may hold units that the failure does not need (dd isolates a
   difference, not a cause set). The difference alone is probed first; when it does not fail
   alone, each unit of ``c_fail - good - difference`` is removed in turn, and goes when
   ``c_fail`` still fails without it. What remains is the minimal
   failure-inducing change from the good profile.
4. **Confirmation.** The final failing configuration and the one without the isolated
   difference are probed once more, afresh; an outcome that changes makes the result
   UNRESOLVED (a flaky oracle), never a wrong minimum.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import msgspec

__all__ = ["FAIL", "PASS", "UNRESOLVED", "DDResult", "isolate"]

PASS, FAIL, UNRESOLVED = "PASS", "FAIL", "UNRESOLVED"

Config = frozenset[int]
#: Outcomes of configurations: ``tester(configs, fresh)`` -> one outcome per config, in order;
#: ``fresh`` asks for new probes, not cached ones (the confirmation).
Tester = Callable[[Sequence[Config], bool], list[str]]


class DDResult(msgspec.Struct, frozen=True, kw_only=True):
    """What :func:`isolate` established (unit indices).

    Attributes:
        status: ``found`` | ``unresolved``. change: the minimal failure-inducing change from
            the good profile, most suspect first. difference: the isolated 1-minimal
            difference between ``passing`` and ``failing``. passing, failing: the final pair.
        reason: why it is unresolved ('' when found). steps: one line per decision taken.
    """

    status: str
    change: tuple[int, ...] = ()
    difference: tuple[int, ...] = ()
    passing: tuple[int, ...] = ()
    failing: tuple[int, ...] = ()
    reason: str = ""
    steps: tuple[str, ...] = ()


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
    """Isolate the failure-inducing units (module docstring).

    Args:
        n_units: how many units the bad profile adds to the good one.
        tester: probes configurations (the good and bad profiles are known to pass and fail).
        order: unit indices, most suspect first (default 0..n-1).
        prefix: how many suspect prefixes to probe before dd (0: dd from the start).
        batch: probe every configuration of one dd step at once (probes side by side).

    Returns:
        The :class:`DDResult`.
    """
    rank = {u: i for i, u in enumerate(order if order is not None else range(n_units))}
    steps: list[str] = []

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
    c_pass = c_fail - frozenset(difference)
    first = [test(c_fail), test(c_pass)]
    again = tester([c_fail, c_pass], True)
    steps.append(f"confirm: failing {ranked(c_fail)} -> {again[0]}, without the difference "
                 f"{ranked(c_pass)} -> {again[1]}")
    ok = again == first == [FAIL, PASS]
    return DDResult(status="found" if ok else "unresolved",
                    change=tuple(ranked(c_fail)), difference=tuple(difference),
                    passing=tuple(ranked(c_pass)), failing=tuple(ranked(c_fail)),
                    reason="" if ok else (
                        f"the boundary probes did not repeat (first {first}, again {again}): "
                        "the oracle is flaky or a probe broke, so no minimum is claimed"),
                    steps=tuple(steps))
