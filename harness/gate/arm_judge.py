"""One timing arm's metrics judged look by look (pure: samples in, verdicts out), so that the
gate (:func:`proofdiff.gate.timing_rounds.measure_profile`), its simulation from measured
samples (:mod:`proofdiff.stats.power`) and the tests decide alike.

At each look every metric still open is judged on all its pairs so far
(:func:`proofdiff.stats.paired.paired_verdict`); a metric closes when it is WITHIN or WORSE, when
it reaches the cap sized from its noise, or when its noise makes the tolerance undecidable. The
arm samples on while a metric is open; a WORSE ends it (and the gate's timing: :class:`Family`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import msgspec

from proofdiff.model.timing_verdict import TimingVerdict
from proofdiff.stats.paired import WORSE, Question, paired_verdict, wants_more

__all__ = ["ArmJudge", "Family", "MetricSpec", "run_arm"]

#: ``samples()``: each metric's samples so far, ``metric -> (baseline, candidate)``.
Samples = Callable[[], Mapping[str, tuple[Sequence[float], Sequence[float]]]]


@dataclass
class Family:
    """The gate's family of WORSE questions (metric x profile x workload): ``size`` of them at
    family-wise level ``alpha``, each at ``alpha / size`` (Bonferroni: the first WORSE ends the
    gate's timing, so no share is ever handed on). ``failed``: the first WORSE found
    (``latency on bench/wpost-2k``), '' while none."""

    alpha: float = 0.05
    size: int = 1
    failed: str = ""

    def share(self) -> float:
        """One metric's false-WORSE level."""
        return self.alpha / max(1, self.size)


@dataclass(frozen=True)
class MetricSpec:
    """How one metric is judged: its question, which way is worse (``higher`` | ``lower``) and
    its samples' unit."""

    question: Question
    worse: str
    unit: str


@dataclass
class ArmJudge:
    """The metrics of one arm (``profile`` on ``workload``), in order, with their specs."""

    profile: str
    workload: str
    specs: Mapping[str, MetricSpec]
    warmup: int = 1
    last: dict[str, TimingVerdict] = field(default_factory=dict)
    closed: set[str] = field(default_factory=set)

    @property
    def first_look(self) -> int:
        """Rounds (the warm-up included) before the first look."""
        return self.warmup + min(s.question.first for s in self.specs.values())

    def open(self) -> list[str]:
        """The metrics still sampled."""
        return [m for m in self.specs if m not in self.closed]

    def look(self, samples: Mapping[str, tuple[Sequence[float], Sequence[float]]]) -> None:
        """Judge every open metric on its samples so far (``metric -> (baseline, candidate)``,
        one per round in drawing order, the warm-up first)."""
        for metric in self.open():
            spec = self.specs[metric]
            b, c = samples[metric]
            v = paired_verdict(b, c, spec.question, worse=spec.worse, warmup=self.warmup,
                               arm=f"{metric} {self.profile}", metric=metric, unit=spec.unit)
            self.last[metric] = v
            if not wants_more(v):
                self.closed.add(metric)

    def worse(self) -> list[TimingVerdict]:
        """The WORSE verdicts so far."""
        return [v for v in self.last.values() if v.verdict is WORSE]

    def verdicts(self, stopped: str = "") -> tuple[TimingVerdict, ...]:
        """Each metric's last verdict, in order; a metric never judged gets one on no pairs.
        ``stopped``: why sampling ended before a still open metric's cap, added to its reason."""
        out = []
        for metric, spec in self.specs.items():
            v = self.last.get(metric) or paired_verdict(
                [], [], spec.question, worse=spec.worse, warmup=self.warmup,
                arm=f"{metric} {self.profile}", metric=metric, unit=spec.unit)
            if stopped and wants_more(v):
                v = msgspec.structs.replace(v, reason=f"{v.reason}; sampling stopped: {stopped}")
            out.append(v)
        return tuple(out)



def run_arm(judge: ArmJudge, family: Family, draw_wave: Callable[[int], tuple[int, str]],
            samples: Samples, *, budget_pairs: int, deadline: float,
            clock: Callable[[], float]) -> tuple[int, str]:
    """Sample one arm until it has decided: while a metric is open, draw a wave of rounds
    (``draw_wave(k)`` draws from round ``k`` on and returns the rounds drawn so far and why
    sampling must stop, '' when it need not), then look; stop at ``budget_pairs`` rounds, at
    ``deadline`` (``clock()``), when a round stops the arm, or at a WORSE (which sets
    ``family.failed``, ending the gate's timing). Returns the rounds drawn and why sampling
    stopped before the metrics closed ('' when it did not)."""
    rounds, stopped = 0, ""
    while judge.open() and rounds < budget_pairs and not stopped:
        if family.failed:
            stopped = f"the gate already fails on timing ({family.failed})"
            break
        if clock() >= deadline:
            stopped = "the gate's time budget (--budget-s) ran out"
            break
        rounds, stopped = draw_wave(rounds)
        if rounds >= judge.first_look:
            judge.look(samples())
        if judge.worse():
            family.failed = family.failed or (f"{judge.worse()[0].metric} on "
                                              f"{judge.profile}/{judge.workload}")
            break
    return rounds, stopped
