"""dd (proofdiff.bisect.dd) against failure predicates stated as sets: the minimal change it
returns is exactly the cause, confirmed 1-minimal by fresh probes; a good ranking saves probes,
and one cause costs logarithmically many; probes that broke or do not repeat make the result
unresolved, never a wrong or unnarrowed "found"."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import pytest

from proofdiff.bisect.dd import FAIL, PASS, UNRESOLVED, Config, isolate


class Counting:
    """A tester from a predicate on configurations; counts probes (cached like the Prober)."""

    def __init__(self, outcome: Callable[[Config], str],
                 fresh: Callable[[Config], str] | None = None) -> None:
        self.outcome, self.fresh, self.cache, self.probes = outcome, fresh, {}, 0
        self.fresh_asked: list[Config] = []

    def __call__(self, configs: Sequence[Config], fresh: bool) -> list[str]:
        out = []
        for c in configs:
            if fresh or c not in self.cache:
                self.probes += 1
                if fresh:
                    self.fresh_asked.append(c)
                got = (self.fresh or self.outcome)(c) if fresh else self.outcome(c)
                if not fresh:
                    self.cache[c] = got
                out.append(got)
            else:
                out.append(self.cache[c])
        return out


def needs(*units: int) -> Callable[[Config], str]:
    return lambda c: FAIL if set(units) <= c else PASS


@pytest.mark.parametrize("cause", [(0,), (3,), (7,), (1, 6), (2, 4, 9), (0, 11)])
def test_dd_returns_exactly_the_cause_whatever_the_order(cause: tuple[int, ...]) -> None:
    t = Counting(needs(*cause))
    res = isolate(12, t, order=list(range(12))[::-1])
    assert res.status == "found", res.reason
    assert set(res.change) == set(cause), res.steps
    assert set(res.difference) <= set(cause) and res.difference


def test_a_good_ranking_costs_fewer_probes_than_a_bad_one() -> None:
    well, badly = Counting(needs(4, 9)), Counting(needs(4, 9))
    first = isolate(14, well, order=[4, 9, 0, 1, 2, 3, 5, 6, 7, 8, 10, 11, 12, 13])
    last = isolate(14, badly, order=[0, 1, 2, 3, 5, 6, 7, 8, 10, 11, 12, 13, 4, 9])
    assert first.status == last.status == "found", (first.reason, last.reason)
    assert set(first.change) == set(last.change) == {4, 9}
    assert well.probes < badly.probes, (first.steps, last.steps)


@pytest.mark.parametrize("n", [16, 64])
def test_one_cause_costs_logarithmically_many_probes(n: int) -> None:
    # Zeller and Hildebrandt (TSE 2002; Zeller, ESEC/FSE 1999): with a single failure-inducing
    # unit, dd needs at most 2 log2(n) tests; the confirmation then adds 1 + |change|
    for cause in range(n):
        t = Counting(needs(cause))
        res = isolate(n, t, order=list(range(n)), prefix=0)
        assert res.status == "found" and res.change == (cause,), res.steps
        assert t.probes - res.confirmed <= 2 * math.log2(n), (cause, res.steps)


def test_found_means_confirmed_1_minimal_by_fresh_probes() -> None:
    t = Counting(needs(4, 9))
    res = isolate(14, t, order=[4, 9, 0, 1, 2, 3, 5, 6, 7, 8, 10, 11, 12, 13])
    assert res.status == "found" and set(res.change) == {4, 9}, res.reason
    # the change afresh, and the change without each of its units: not just the boundary pair
    assert set(t.fresh_asked) == {frozenset({4, 9}), frozenset({9}), frozenset({4})}
    assert res.confirmed == 3 == len(t.fresh_asked)


def test_a_removal_that_breaks_on_confirmation_leaves_it_unresolved() -> None:
    # the change {4, 9} is found, but its removal "without 4" breaks when probed afresh: the
    # boundary pair ({4, 9} fails, {4} passes) alone would have called it found
    def again(c: Config) -> str:
        return UNRESOLVED if c == frozenset({9}) else needs(4, 9)(c)
    res = isolate(14, Counting(needs(4, 9), fresh=again),
                  order=[4, 9, 0, 1, 2, 3, 5, 6, 7, 8, 10, 11, 12, 13])
    assert res.status == "unresolved" and "1-minimality is not shown" in res.reason, res.reason
    assert res.broken == ((9,),)


def test_a_removal_that_still_fails_on_confirmation_is_not_called_minimal() -> None:
    def again(c: Config) -> str:
        return FAIL if c == frozenset({9}) else needs(4, 9)(c)
    res = isolate(14, Counting(needs(4, 9), fresh=again),
                  order=[4, 9, 0, 1, 2, 3, 5, 6, 7, 8, 10, 11, 12, 13])
    assert res.status == "unresolved" and "not 1-minimal" in res.reason, res.reason


def test_every_intermediate_probe_broken_is_unresolved_and_names_them() -> None:
    full = frozenset(range(6))

    def outcome(c: Config) -> str:
        return PASS if not c else FAIL if c == full else UNRESOLVED
    res = isolate(6, Counting(outcome), order=list(range(6)))
    assert res.status == "unresolved" and res.change == (), (res.change, res.steps)
    assert set(res.difference) == set(full)
    assert {frozenset(b) for b in res.broken} == (
        {frozenset({u}) for u in full} | {full - {u} for u in full})
    assert "could not narrow" in res.reason


def test_two_units_whose_one_unit_neighbours_broke_are_unresolved() -> None:
    # units 1 and 2 only run together (a coupling the delta did not declare); the failure
    # needs both: dd cannot tell whether one of them alone would do
    def outcome(c: Config) -> str:
        if len(c & {1, 2}) == 1:
            return UNRESOLVED
        return FAIL if {1, 2} <= c else PASS
    res = isolate(6, Counting(outcome), order=list(range(6)))
    assert res.status == "unresolved", (res.change, res.steps)
    assert set(res.difference) == {1, 2} and res.confirmed == 0
    assert len(res.broken) == 4, res.broken  # {1}, {2} added to passing; removed from failing


def test_a_badly_ranked_cause_is_still_found_by_dd() -> None:
    t = Counting(needs(13))
    res = isolate(14, t, order=list(range(14)))
    assert res.status == "found" and res.change == (13,), res.steps
    assert t.probes < 14, "dd halves; it does not try the units one by one"


def test_unresolved_probes_are_stepped_around() -> None:
    # any configuration with unit 2 but without unit 3 does not run (a coupled pair split)
    def outcome(c: Config) -> str:
        if 2 in c and 3 not in c:
            return UNRESOLVED
        return FAIL if {5} <= c else PASS
    res = isolate(8, Counting(outcome), order=[2, 3, 5, 0, 1, 4, 6, 7])
    assert res.status == "found" and res.change == (5,), res.steps
    assert res.confirmed == 2  # the change, and the change without its one unit


def test_a_flaky_oracle_gives_unresolved_not_a_wrong_minimum() -> None:
    t = Counting(needs(1, 2), fresh=lambda c: PASS)  # the re-run never fails again
    res = isolate(6, t, order=[1, 2, 0, 3, 4, 5])
    assert res.status == "unresolved" and "did not fail again" in res.reason
