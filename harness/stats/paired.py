"""The gate's timing question, per metric: is the candidate worse than its baseline by at least
the tolerated slowdown? One-sided, paired, sequential.

**The question.** ``delta = log(1 + max_slowdown)`` (``--max-slowdown``, default 5 %) and the
practical margin ``margin = MARGIN_SHARE * delta`` (1 % at the default), on the log scale of
``theta``, the mean log-ratio worse/better (candidate over baseline for a duration; baseline over
candidate where lower is worse, as for jobs in progress):

* **WITHIN** when the candidate is shown to be less than ``delta`` worse: the upper bound of
  ``theta`` at the WITHIN boundary lies below ``delta``. A faster candidate is WITHIN too: a
  faster build never fails on timing. A candidate exactly ``delta`` worse is WITHIN with
  probability at most ``beta`` (default 10 %) over all looks.
* **WORSE** (a regression) when it is shown to be worse than the margin: the lower bound of
  ``theta`` at the WORSE boundary lies above ``margin``. A candidate no more than the margin
  worse (an A/A gate included) is WORSE with probability at most ``alpha`` over all looks.
* **INCONCLUSIVE** otherwise; the metric is sampled on up to a cap sized from its noise, or
  stopped at once when its noise makes ``delta`` undecidable within ``max_pairs``.

Between ``margin`` and ``delta`` lies the zone where either answer is right; where both bounds
say so (slower than the margin, and less than ``delta``), the verdict is WITHIN: the user's
question is whether the candidate is worse by at least ``delta``, and it is shown not to be.
The margin is there because two sides on one host are never perfectly exchangeable (their
daemons' placement, memory, the order of a round): a slowdown below it is not worth blocking a
push for, and it keeps such a bias from failing an A/A gate. It is a fifth of ``delta`` so that
a candidate ``delta`` worse lies four fifths of ``delta`` from it, close to the ``delta`` that an
unchanged candidate lies from the WITHIN bound: both questions need about the same pairs.

**The error rates of a gate.** A PASS needs every metric WITHIN: it is an intersection-union
test (Berger 1982, Technometrics 24(4)), so a candidate ``delta`` worse on any one metric
passes with probability at most ``beta``, with no split of ``beta`` over the metrics. A FAIL
needs one metric WORSE, so the WORSE questions of every metric x profile x workload form a
family whose family-wise level is the gate's ``alpha`` (5 %): each metric is tested at
``alpha / K`` (Bonferroni; the gate ends its timing at the first WORSE, so Holm's step-down
would never raise a share).

**The statistic.** Pairs are interleaved (the baseline first in even rounds, the candidate
first in odd ones) and ``d_i`` is pair ``i``'s log-ratio: drift shared by a pair cancels. The
location is the ``trim``-trimmed mean of the ``d_i`` (default 10 %: nothing is cut below 10
pairs, one value at each end from 10, two from 20), so that a spike in a long series costs
little; its standard error is Tukey-McLaughlin's. The boundaries of both questions are placed
for this statistic on seeded null paths (:mod:`proofdiff.stats.boundaries`): a look after every
pair from the ``first`` (default 5 tested pairs), WORSE spending ``alpha / K`` linearly and
WITHIN spending ``beta`` early (Hwang-Shih-DeCani, gamma 1) over ``max_pairs`` (``--rounds`` less
the warm-up), so each question's rate holds over all looks.

**The cap and the minimum detectable effect.** From its noise ``s`` (the standard deviation of
one pair's log-ratio on the trimmed mean's scale), a metric's cap is the fewest pairs ``n`` at
which both questions are decided with the power wanted: an unchanged candidate WITHIN with
:data:`PASS_POWER` (``(c_within(n) + z) s / sqrt(n) <= delta``) and a candidate ``delta`` worse
WORSE with :data:`FAIL_POWER` (``(c_worse(n) + z) s / sqrt(n) <= delta - margin``). It is sized
again at each look from all pairs so far (the noise of the first rounds, then refined), and it
only ends sampling. The **MDE** is the smallest tolerance those two conditions meet at
``max_pairs``: what this metric's noise can decide. When even an optimistic noise (its 90 %
lower confidence bound) cannot make an unchanged candidate WITHIN at ``max_pairs``, the metric is
INCONCLUSIVE at once, naming its noise and MDE, from :data:`UNDECIDABLE_FROM` pairs on (a spike
in the first few pairs is not the noise).

The simulated error rates and power of whole gates, from measured samples, are
:mod:`proofdiff.stats.power`'s.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from scipy import special, stats  # type: ignore[import-untyped]

from proofdiff.model.status import Comparison
from proofdiff.model.timing_verdict import TimingVerdict, json_safe, json_safe_all
from proofdiff.stats.boundaries import critical_values, trimmed
from proofdiff.stats.unpaired import direction_of, summarize

__all__ = ["DEFAULT_BETA", "DEFAULT_FIRST", "DEFAULT_MAX_SLOWDOWN", "DEFAULT_TRIM", "FAIL_POWER",
           "INCONCLUSIVE", "MARGIN_SHARE", "PASS_POWER", "UNDECIDABLE_FROM", "WITHIN", "WORSE",
           "Look", "Question", "look", "paired_verdict", "sequential_verdict", "trimmed",
           "wants_more"]

WITHIN, WORSE, INCONCLUSIVE = Comparison.WITHIN, Comparison.WORSE, Comparison.INCONCLUSIVE
#: The tolerated slowdown of ``--max-slowdown``'s default: 5 %.
DEFAULT_MAX_SLOWDOWN = 0.05
#: The practical margin's share of the tolerance (on the log scale).
MARGIN_SHARE = 0.2
#: The false-WITHIN level of one metric over all looks.
DEFAULT_BETA = 0.10
#: The share trimmed at each end of the log-ratios.
DEFAULT_TRIM = 0.10
#: Tested pairs at the first look.
DEFAULT_FIRST = 5
#: The power the cap is sized for: a candidate ``delta`` worse WORSE this often ...
FAIL_POWER = 0.90
#: ... and an unchanged one WITHIN this often.
PASS_POWER = 0.95
#: Tested pairs from which a metric's noise may declare the tolerance undecidable.
UNDECIDABLE_FROM = 15
#: Spending shapes (Hwang-Shih-DeCani gamma) of the WORSE and the WITHIN question.
GAMMA_WORSE, GAMMA_WITHIN = 0.0, 1.0


def _z(p: float) -> float:
    """The standard normal quantile that ``p`` of the mass lies above."""
    return float(-special.ndtri(p))


@dataclass(frozen=True)
class Question:
    """The gate's question for one metric (module docstring).

    Attributes:
        max_slowdown: the tolerance, a fraction (0.05 = 5 %). alpha: this metric's false-WORSE
            level over all looks (its share of the gate's). beta: its false-WITHIN level.
        max_pairs: the most tested pairs (``--rounds`` less the warm-up). first: tested pairs
            at the first look. trim: the share trimmed at each end.
    """

    max_slowdown: float = DEFAULT_MAX_SLOWDOWN
    alpha: float = 0.05
    beta: float = DEFAULT_BETA
    max_pairs: int = 40
    first: int = DEFAULT_FIRST
    trim: float = DEFAULT_TRIM

    def __post_init__(self) -> None:
        if not 0.0 < self.max_slowdown < 1.0:
            raise ValueError(f"max_slowdown must be a fraction in (0, 1), got {self.max_slowdown}")
        critical_values(self.first, self.max_pairs, self.trim, self.spending)  # checks the rest

    @property
    def spending(self) -> tuple[tuple[float, float], ...]:
        """``((alpha, gamma), (beta, gamma))`` of the WORSE and the WITHIN question."""
        return ((self.alpha, GAMMA_WORSE), (self.beta, GAMMA_WITHIN))

    @property
    def delta(self) -> float:
        """The tolerance on the log scale."""
        return math.log1p(self.max_slowdown)

    @property
    def margin(self) -> float:
        """The practical margin on the log scale."""
        return MARGIN_SHARE * self.delta

    def bounds(self, n: int) -> tuple[float, float]:
        """The WORSE and the WITHIN boundary at ``n`` tested pairs (``first <= n``; past
        ``max_pairs``, the last)."""
        worse, within = critical_values(self.first, self.max_pairs, self.trim, self.spending)
        k = min(n, self.max_pairs) - self.first
        return worse[k], within[k]

    def _decides(self, sd: float, n: int, delta: float) -> tuple[bool, bool]:
        """Whether at ``n`` pairs of noise ``sd`` an unchanged candidate is WITHIN with
        :data:`PASS_POWER`, and one ``delta`` worse is WORSE with :data:`FAIL_POWER`."""
        c_worse, c_within = self.bounds(n)
        half = sd / math.sqrt(n)
        return ((c_within + _z(1.0 - PASS_POWER)) * half <= delta,
                (c_worse + _z(1.0 - FAIL_POWER)) * half <= (1.0 - MARGIN_SHARE) * delta)

    def cap(self, sd: float) -> int | None:
        """The fewest tested pairs that decide both ways at noise ``sd`` (module docstring);
        ``None`` when ``max_pairs`` do not."""
        return next((n for n in range(self.first, self.max_pairs + 1)
                     if all(self._decides(sd, n, self.delta))), None)

    def passable(self, sd: float) -> bool:
        """An unchanged candidate can be WITHIN by ``max_pairs`` at noise ``sd``."""
        return self._decides(sd, self.max_pairs, self.delta)[0]

    def mde(self, sd: float) -> float:
        """The smallest tolerance (a fraction) that noise ``sd`` decides both ways at
        ``max_pairs``."""
        c_worse, c_within = self.bounds(self.max_pairs)
        half = sd / math.sqrt(self.max_pairs)
        need = max(c_within + _z(1.0 - PASS_POWER),
                   (c_worse + _z(1.0 - FAIL_POWER)) / (1.0 - MARGIN_SHARE)) * half
        return math.expm1(need)


def _sd_low(sd: float, n: int) -> float:
    """The 90 % lower confidence bound of a standard deviation ``sd`` from ``n`` values."""
    return sd * math.sqrt(float(stats.chi2.ppf(0.10, n - 1)) / (n - 1))


@dataclass(frozen=True)
class Look:
    """One look at a metric's worse-positive log-ratios (:func:`look`): the trimmed mean ``m``
    with its standard error ``se``, ``df`` and per-pair noise ``sd``; the ``lower`` (WORSE)
    and ``upper`` (WITHIN) bounds of ``theta``; the verdict; the cap from the noise (``None``:
    beyond ``max_pairs``); ``stop``: why an INCONCLUSIVE metric is not sampled further ('' =
    it is)."""

    verdict: Comparison
    m: float
    se: float
    df: int
    sd: float
    lower: float
    upper: float
    cap: int | None
    stop: str


def look(d: Sequence[float], q: Question) -> Look:
    """Judge the worse-positive log-ratios ``d`` (``len(d) >= q.first``) once (module
    docstring): WITHIN, WORSE, or INCONCLUSIVE with why sampling stops, if it does."""
    n = len(d)
    m, se, df, sd = trimmed(d, q.trim)
    se = max(se, 1e-9)
    c_worse, c_within = q.bounds(n)
    lower, upper = m - c_worse * se, m + c_within * se
    cap = q.cap(sd)
    stop = ""
    if upper < q.delta:
        verdict = WITHIN
    elif lower > q.margin:
        verdict = WORSE
    else:
        verdict = INCONCLUSIVE
        if n >= UNDECIDABLE_FROM and not q.passable(_sd_low(sd, n)):
            stop = (f"its noise ({sd:.1%} per pair at {n} pairs) decides a tolerance of "
                    f"{q.mde(sd):.1%} within {q.max_pairs} pairs, not the {q.max_slowdown:.1%} "
                    "asked: not sampled further (raise --rounds or --max-slowdown, or lower "
                    "the noise)")
        elif n >= (cap or q.max_pairs):
            stop = (f"undecided at {n} pairs, its cap ("
                    + (f"sized from its noise, {sd:.1%} per pair)" if cap
                       else f"--rounds; its noise, {sd:.1%} per pair, decides "
                            f"{q.mde(sd):.1%})"))
    return Look(verdict, m, se, df, sd, lower, upper, cap, stop)


def paired_verdict(baseline: Sequence[float], candidate: Sequence[float], question: Question, *,
                   worse: str = "higher", warmup: int = 1, arm: str = "",
                   metric: str = "latency", left: str = "baseline", right: str = "candidate",
                   unit: str = "ms") -> TimingVerdict:
    """The verdict of one metric on the interleaved pairs so far (module docstring), with its
    evidence.

    Args:
        baseline, candidate: one sample per round in drawing order (> 0, ``unit``), the
            ``warmup`` leading rounds kept but not tested. question: the metric's question.
        worse: ``higher`` (durations) or ``lower`` (jobs in progress) is the worse way.

    Returns:
        WITHIN, WORSE, or INCONCLUSIVE with its reason. ``cap_pairs`` is the tested pairs the
        metric is sampled to at most, from its noise: an INCONCLUSIVE verdict with ``n_pairs
        < cap_pairs`` wants more pairs; one at its cap, or found undecidable, does not.

    Raises:
        ValueError (a caller's bug): unequal lengths, a sample not finite and > 0, ``worse``
            not ``higher`` or ``lower``, ``warmup < 0``.
    """
    if len(baseline) != len(candidate):
        raise ValueError(f"baseline and candidate must pair up: {len(baseline)} vs "
                         f"{len(candidate)} samples")
    b_all, c_all = [float(x) for x in baseline], [float(x) for x in candidate]
    if not all(math.isfinite(x) and x > 0 for x in (*b_all, *c_all)):
        raise ValueError("samples must be finite and > 0 (a zero means the job did not run)")
    if worse not in ("higher", "lower") or warmup < 0:
        raise ValueError(f"need worse in (higher, lower) and warmup >= 0, got {worse!r}, "
                         f"{warmup}")
    q = question
    b, c = b_all[warmup:], c_all[warmup:]
    n = len(b)
    sign = 1.0 if worse == "higher" else -1.0
    base: dict[str, Any] = dict(
        arm=arm, metric=metric, left=left, right=right, paired=True, unit=unit, worse=worse,
        test=f"paired one-sided test on the {q.trim:.0%}-trimmed mean log-ratio",
        n_pairs=n, warmup_pairs=min(warmup, len(b_all)), max_slowdown=q.max_slowdown,
        margin=math.expm1(q.margin), max_pairs=q.max_pairs, alpha=q.alpha, beta=q.beta,
        look=max(0, n - q.first + 1), max_looks=q.max_pairs - q.first + 1,
        left_summary=summarize(b), right_summary=summarize(c), left_samples=json_safe_all(b_all),
        right_samples=json_safe_all(c_all))
    if n < q.first:
        return TimingVerdict(verdict=INCONCLUSIVE, cap_pairs=q.first, reason=(
            f"{n} tested pair(s) after {warmup} warm-up; the first look is at {q.first}"), **base)
    at = look([sign * math.log(y / x) for x, y in zip(b, c)], q)
    # the ratio right/left and its bounds on the samples' own scale (worse = lower: inverted)
    ratio = math.exp(sign * at.m)
    ci = ((math.exp(at.lower), math.exp(at.upper)) if sign > 0
          else (math.exp(-at.upper), math.exp(-at.lower)))
    tol, mar = f"{q.max_slowdown:.1%}", f"{math.expm1(q.margin):.1%}"
    worse_word = "worse" if unit != "ms" else "slower"
    if at.verdict is WITHIN:
        why = (f"less than {tol} {worse_word}: the bound on the worse side, "
               f"{math.exp(at.upper):.3f}, is below {1 + q.max_slowdown:.3f}")
        if at.lower > q.margin:
            why += f" (slower than the {mar} margin, within the tolerance)"
    elif at.verdict is WORSE:
        why = (f"{worse_word} than the {mar} margin: the bound on the better side, "
               f"{math.exp(at.lower):.3f}, is above {math.exp(q.margin):.3f} (tolerance {tol})")
    else:
        why = (f"ratio {ratio:.3f}: neither shown less than {tol} {worse_word} (bound "
               f"{math.exp(at.upper):.3f}) nor worse than the {mar} margin (bound "
               f"{math.exp(at.lower):.3f})")
    t_stat = (at.m - q.margin) / at.se
    c_worse, c_within = q.bounds(n)
    return TimingVerdict(
        verdict=at.verdict, regression=at.verdict is WORSE,
        direction=direction_of(ratio, unit) if at.lower > 0.0 or at.upper < 0.0 else "",
        ratio=json_safe(ratio), ratio_ci=(json_safe(ci[0]), json_safe(ci[1])),
        log_ratio_sd=json_safe(at.sd), statistic=json_safe(t_stat), df=at.df,
        p_value=json_safe(float(special.stdtr(at.df, -t_stat))) if at.df > 0 else None,
        mde=json_safe(q.mde(at.sd)), cap_pairs=n if at.stop else (at.cap or q.max_pairs),
        alpha_look=json_safe(float(special.ndtr(-c_worse))),
        beta_look=json_safe(float(special.ndtr(-c_within))),
        reason=f"{why}; {at.stop}" if at.stop else why, **base)


def wants_more(v: TimingVerdict) -> bool:
    """An INCONCLUSIVE verdict below its cap: its metric is sampled on."""
    return v.verdict is INCONCLUSIVE and v.n_pairs < v.cap_pairs


def sequential_verdict(draw: Callable[[int], tuple[Sequence[float], Sequence[float]]],
                       question: Question, *, warmup: int = 1, **kwargs: Any) -> TimingVerdict:
    """One metric judged alone, drawing one more interleaved pair while it wants more
    (:func:`wants_more`); the gate runs the same looks for all its metrics at once
    (:mod:`proofdiff.gate.arm_judge`).

    Args:
        draw: ``draw(n)`` returns ``n`` NEW pairs as two sequences (baseline, candidate);
            empty sequences end the sampling.
        kwargs: passed to :func:`paired_verdict` (``worse``, ``arm``, ``unit``, ...).
    """
    b: list[float] = []
    c: list[float] = []
    want = warmup + question.first
    while True:
        nb, nc = draw(want - len(b))
        b += [float(x) for x in nb]
        c += [float(x) for x in nc]
        v = paired_verdict(b, c, question, warmup=warmup, **kwargs)
        if not wants_more(v) or len(b) < want:
            return v
        want = len(b) + 1
