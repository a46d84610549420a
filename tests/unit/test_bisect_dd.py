"""dd (proofdiff.bisect.dd) against failure predicates stated as sets: the minimal change it
returns is exactly the cause, with suspects first it takes few probes, and a probe that does
not repeat makes the result unresolved rather than a wrong minimum."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pytest

from proofdiff.bisect.dd import FAIL, PASS, UNRESOLVED, Config, isolate


class Counting:
    """A tester from a predicate on configurations; counts probes (cached like the Prober)."""

    def __init__(self, outcome: Callable[[Config], str],
                 fresh: Callable[[Config], str] | None = None) -> None:
        self.outcome, self.fresh, self.cache, self.probes = outcome, fresh, {}, 0

    def __call__(self, configs: Sequence[Config], fresh: bool) -> list[str]:
        out = []
        for c in configs:
            if fresh or c not in self.cache:
                self.probes += 1
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


def test_suspects_first_finds_a_two_key_cause_in_a_few_probes() -> None:
    t = Counting(needs(4, 9))
    res = isolate(14, t, order=[4, 9, 0, 1, 2, 3, 5, 6, 7, 8, 10, 11, 12, 13])
    assert res.status == "found" and set(res.change) == {4, 9}
    # top-1 (pass), top-2 (fail), the context check, then the two confirmations
    assert t.probes == 5, res.steps


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


def test_a_flaky_oracle_gives_unresolved_not_a_wrong_minimum() -> None:
    t = Counting(needs(1, 2), fresh=lambda c: PASS)  # the re-run never fails again
    res = isolate(6, t, order=[1, 2, 0, 3, 4, 5])
    assert res.status == "unresolved" and "flaky" in res.reason
