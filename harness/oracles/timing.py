"""Timing within one run (docs/design/statistics.md): interleaved samples through each
profile's own driver, described side by side. Bench and prod are two configurations that are
expected to differ, so this suite states how they differ, the ratio with its interval, and is
never a reason for a run (or a night) to be undecided; a timing regression is a claim about one build
against another (``proofdiff gate``) or against its own history (``proofdiff nightly``).

Sides of one round, in this order so that all see the same machine: the baseline ``A1`` (one
proof per batch), each other profile (a batch of ``concurrency`` proofs at its concurrency),
the baseline ``A2``. Rounds continue while any arm's interval is undecided, from 4 up to 6
(alpha is split over the 3 looks), so the description is as narrow as 6 rounds make it. A
batch that does not complete fully stops the sampling: timing a broken daemon measures nothing.

Arms (:func:`proofdiff.stats.unpaired.compare` each):

* ``aa``: baseline A1 vs A2 per-proof cost: describes this run's own timing noise (the ratio
  with its interval; where the interval excludes 1 the message says so). It passes with its
  description: a within-run A/A is no claim about a build.
* ``throughput``: per-proof cost (batch wall / proofs = 1 / throughput) of a profile vs the
  baseline, described; it fails only when the interval shows the profile costlier per proof
  by more than the 25 % floor (its lower bound above 1.25): its throughput collapsed.
* ``concurrency``: jobs the daemon really proved at once (from its own ``queue_wait_ms`` and
  ``total_ms``, :func:`proofdiff.stats.concurrency.in_progress_of`), the profile vs the baseline,
  described. A profile offered concurrency > 1 must run jobs side by side: it fails when the
  interval shows fewer than 1.25x the baseline's jobs at once (its upper bound below 1.25: a
  daemon that serializes jobs whatever it is offered cannot grow with hardware). At
  concurrency 1, or a config that allows one job at a time, there is nothing to overlap:
  SKIPPED, with the reason.
* ``latency-throughput`` (every sampled profile): steady latency and throughput figures; fails on
  a proof faster than its own SRS load; an error on no samples.
* ``lone-request`` (every sampled profile): one request alone on the idle daemon per round
  (the baseline's A1/A2 batches and a concurrency-1 profile's batches are lone already; a
  profile of higher concurrency gets a side ``<name>:lone`` of one proof), the median judged
  against a bound from the same profile's proofs (:mod:`proofdiff.oracles.lone_request`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from proofdiff.model import progress
from proofdiff.model.jobs import FlowRecord, JobSpec
from proofdiff.model.oracle_records import OracleRecord
from proofdiff.model.status import Outcome
from proofdiff.model.timing_verdict import TimingVerdict
from proofdiff.stats.unpaired import INCONCLUSIVE, compare, summarize
from proofdiff.stats.concurrency import in_progress_of

from proofdiff.oracles.evidence import Evidence, Recorder
from proofdiff.oracles.suite_table import SUITES
from proofdiff.oracles.behaviour import MODE_KEYS, requested
from proofdiff.oracles.lone_request import BATCH_KEYS, judge_lone

__all__ = ["INITIAL_ROUNDS", "MAX_ROUNDS", "ORACLES", "Sampling", "evaluate", "judge"]

#: The oracles of this suite, stated once in the suite table.
ORACLES = SUITES["timing"].oracles
INITIAL_ROUNDS, MAX_ROUNDS = 4, 6
LOOKS = MAX_ROUNDS - INITIAL_ROUNDS + 1
#: Per-proof cost floor: throughput within +/-25 % is "the same".
COST_FLOOR = 0.25
#: Concurrency floor: at least 1.25 jobs in progress on average counts as "side by side".
CONCURRENCY_FLOOR = 0.25


@dataclass
class Sampling:
    """Every batch so far by side label (``bench:A1``, ``prod``, ``bench:A2``), why sampling
    stopped early ('' = it did not) and on which side."""

    batches: dict[str, list[FlowRecord]] = field(default_factory=dict)
    stopped: str = ""
    stopped_side: str = ""

    def ok(self, side: str) -> list[FlowRecord]:
        """Batches of ``side`` whose every job completed."""
        return [b for b in self.batches.get(side, []) if b.jobs and len(b.completed()) == len(b.jobs)]

    def costs(self, *sides: str) -> list[float]:
        """Per-proof cost samples (batch wall / proofs, ms), one per batch."""
        return [b.wall_ms / len(b.jobs) for s in sides for b in self.ok(s)]

    def latencies(self, *sides: str) -> list[float]:
        """Per-job client latencies (ms)."""
        return [j.wall_ms for s in sides for b in self.ok(s) for j in b.jobs]

    def concurrency(self, *sides: str) -> list[float]:
        """Per-job jobs-in-progress samples."""
        return [c for s in sides for b in self.ok(s) for c in in_progress_of(b.jobs)]


def _sample(ev: Evidence, workload: str, base: str, others: Sequence[str]) -> Sampling:
    s = Sampling()
    plan = [(f"{base}:A1", base, 1)] + [(o, o, ev.profiles[o].concurrency) for o in others] \
        + [(f"{o}:lone", o, 1) for o in others if ev.profiles[o].concurrency > 1] \
        + [(f"{base}:A2", base, 1)]
    jobs = ev.workload(workload).jobs
    with progress.task("timing", f"{workload} rounds", total=MAX_ROUNDS) as shown:
        for rnd in range(MAX_ROUNDS):
            for side, profile, n in plan:
                specs = [JobSpec(index=i, job=jobs[(rnd * n + i) % len(jobs)].name)
                         for i in range(n)]
                b = ev.send(profile, workload, specs, name="timing", label=f"{side}#{rnd}",
                            concurrency=n)
                s.batches.setdefault(side, []).append(b)
                ev.log(f"timing round {rnd} {side}: {len(b.jobs)} proofs in {b.wall_ms:.0f} ms"
                       + ("" if len(b.completed()) == len(b.jobs) else " (NOT all completed)"))
                shown.advance(0, note=f"round {rnd} {side}: {b.wall_ms:.0f} ms")
                if len(b.completed()) != len(b.jobs):
                    bad = [f"{j.request_id or j.job} {j.status.value}: {j.error}"
                           for j in b.jobs if not j.completed]
                    s.stopped_side, s.stopped = side, (f"side {side} round {rnd}: "
                                                       + (b.stall or "; ".join(bad[:3])))
                    return s
            shown.advance()
            if rnd + 1 >= INITIAL_ROUNDS and all(
                    v.verdict != INCONCLUSIVE
                    for v in arms(ev, workload, s, base, others).values()):
                break
    return s


def arms(ev: Evidence, workload: str, s: Sampling, base: str,
         others: Sequence[str]) -> dict[str, TimingVerdict]:
    """Every arm's verdict on the samples so far: ``aa`` and, per other profile,
    ``throughput:<name>`` and ``concurrency:<name>``."""
    a1, a2 = f"{base}:A1", f"{base}:A2"
    wl = {p: ev.run(p, workload).workload_flow for p in (base, *others)}

    def wl_conc(p: str) -> list[float]:
        flow = wl[p]
        return in_progress_of(flow.jobs) if flow else []

    out = {"aa": compare(s.costs(a1), s.costs(a2), arm=f"A/A {base}", left=a1, right=a2,
                         metric="per-proof cost", floor_rel=COST_FLOOR, looks=LOOKS)}
    base_conc = wl_conc(base) + s.concurrency(a1, a2)
    for o in others:
        out[f"throughput:{o}"] = compare(
            s.costs(a1, a2), s.costs(o), arm=f"throughput {base} vs {o}", left=base, right=o,
            metric="per-proof cost (batch wall / proofs)", floor_rel=COST_FLOOR, looks=LOOKS)
        out[f"concurrency:{o}"] = compare(
            base_conc, wl_conc(o) + s.concurrency(o),
            arm=f"jobs in progress at once {base} vs {o}", left=base, right=o,
            metric="jobs in progress during each job", floor_rel=CONCURRENCY_FLOOR, looks=LOOKS,
            unit="jobs")
    return out


def judge(arm: str, v: TimingVerdict, concurrency: int = 1, *, allowed: int | None = None,
          seen: str = "") -> tuple[Outcome, str]:
    """One arm's outcome and message (module docstring): a description of the ratio with its
    interval, never undecided; FAIL only where the interval shows a property broken.

    Args:
        concurrency: the judged profile's. allowed: how many jobs its config lets the daemon
            prove at once (default ``concurrency``): a daemon held to 1 by its config obeys it.
        seen: what the daemon was observed doing (mode, workers, items in progress), quoted in
            a failure instead of a guess.
    """
    allowed = concurrency if allowed is None else allowed
    text = v.render()
    na, nb = v.left_summary.n, v.right_summary.n
    if arm.startswith("concurrency:") and min(concurrency, allowed) <= 1:
        other = arm.split(":", 1)[1]
        why = ("has concurrency 1" if concurrency <= 1 else
               f"is allowed {allowed} job at a time by its config")
        return Outcome.SKIPPED, (f"{text}\n{other} {why}: nothing to overlap, so whether the "
                                 "daemon proves jobs side by side is not tested; offer it more "
                                 "than one job at once (concurrency, workers, in-flight limit)")
    if min(na, nb) == 0:
        return Outcome.ERROR, (f"{text}\nno samples on {'both sides' if na == nb else 'one '}"
                               "side: nothing to compare (a batch died: see the other records)")
    ratio = v.ratio or 1.0
    lo, hi = v.ratio_ci
    shown = f"ratio {ratio:.3f} [{_f(lo)}, {_f(hi)}] over {na}+{nb} samples"
    if arm == "aa":
        odd = lo is not None and hi is not None and (lo > 1.0 or hi < 1.0)
        return Outcome.PASS, (f"{text}\ndescribed: the baseline against itself, {shown}"
                              + ("; its two halves differ, so this run's timing figures carry "
                                 "that much of the machine's drift" if odd else ""))
    other = arm.split(":", 1)[1]
    if arm.startswith("throughput:"):
        if lo is not None and lo > 1.0 + COST_FLOOR:
            return Outcome.FAIL, (f"{text}\nthroughput of {other} at concurrency {concurrency} "
                                  f"collapsed: each proof costs {ratio:.2f}x the baseline's, "
                                  f"at least {lo:.2f}x ({1 / ratio:.2f}x the throughput, ideal "
                                  f"{concurrency}x = bench x workers); look for a global lock "
                                  "or queue in the daemon")
        return Outcome.PASS, (f"{text}\ndescribed: per-proof cost of {other} against the "
                              f"baseline, {shown}: scaling {1 / ratio:.2f}x of the baseline "
                              f"(baseline x workers would be {concurrency}x)")
    if hi is not None and hi < 1.0 + CONCURRENCY_FLOOR:
        return Outcome.FAIL, (f"{text}\n{other} was offered {concurrency} jobs at once (its config "
                              f"allows {allowed}) but the daemon proved about "
                              f"{v.right_summary.median:.2f} at a time (median; at most "
                              f"{hi:.2f}x the baseline's): it serializes jobs, so its throughput "
                              f"cannot grow with hardware" + (f"; observed: {seen}" if seen else ""))
    return Outcome.PASS, (f"{text}\ndescribed: jobs in progress at once on {other} against the "
                          f"baseline, {shown}")


def _f(x: float | None) -> str:
    return "-" if x is None else f"{x:.3f}"


def _figures(rec: Recorder, ev: Evidence, workload: str, s: Sampling, name: str,
             sides: Sequence[str]) -> None:
    lat, cost = summarize(s.latencies(*sides)), summarize(s.costs(*sides))
    wl = ev.run(name, workload).workload_flow
    first = next((j for j in wl.jobs if j.index == 0), None) if wl else None
    warm = f"{first.wall_ms:.0f} ms (SRS load {first.timings.srs_load_ms} ms)" if first else "none"
    conc = ev.profiles[name].concurrency
    text = (f"profile {name!r} on {workload} at concurrency {conc}: warmup {warm}; steady latency "
            f"{lat.render()}; per-proof cost {cost.render()} = throughput "
            f"{60000 / cost.median if cost.median else 0:.1f} proofs/min")
    jobs = [j for b in (s.ok(x) for x in sides) for f in b for j in f.jobs] + (
        wl.completed() if wl else [])
    odd = [f"{j.job} (id={j.request_id}): total {j.timings.total_ms} ms < SRS load {j.timings.srs_load_ms} ms"
           for j in jobs if j.completed and j.timings.total_ms < j.timings.srs_load_ms]
    ev_ = {"latency_ms": [lat.median, lat.q1, lat.q3, lat.n],
           "cost_ms": [cost.median, cost.q1, cost.q3, cost.n],
           "warmup_ms": first.wall_ms if first else None}
    if s.stopped_side.split(":")[0] == name:
        rec("latency-throughput", name, Outcome.FAIL, f"{text}\ntiming sampling stopped on "
            f"{name!r}: {s.stopped}; a daemon that cannot finish a batch cannot be timed",
            evidence=ev_)
    elif lat.n == 0:
        rec("latency-throughput", name, Outcome.ERROR, f"{text}\nno timing sample of {name!r} "
            "completed: nothing to measure", evidence=ev_)
    elif odd:
        rec("latency-throughput", name, Outcome.FAIL, f"{text}\nimplausible timings (a proof "
            f"faster than its own SRS load): {'; '.join(odd)}", evidence=ev_)
    else:
        rec("latency-throughput", name, Outcome.PASS, text, evidence=ev_)


def _lone(rec: Recorder, ev: Evidence, workload: str, s: Sampling, name: str, base: str) -> None:
    """``lone-request`` on ``name``: its lone samples of every round against the bound from its
    own proofs (its timing batches and its workload run)."""
    own = [f"{base}:A1", f"{base}:A2"] if name == base else [name]
    lone_sides = own if name == base or ev.profiles[name].concurrency <= 1 else [f"{name}:lone"]
    lones = [j for side in lone_sides for b in s.batches.get(side, []) for j in b.jobs
             if not j.await_only]
    wl = ev.run(name, workload).workload_flow
    basis = [j for side in own for b in s.ok(side) for j in b.jobs] + list(wl.jobs if wl else ())
    stopped = s.stopped_side.split(":")[0]
    if stopped == name:
        rec("lone-request", name, Outcome.FAIL, f"timing sampling stopped on {name!r}: "
            f"{s.stopped}; a daemon that cannot finish a batch cannot be timed")
        return
    if stopped and not lones:
        rec("lone-request", name, Outcome.SKIPPED, f"timing sampling stopped on {stopped!r} "
            f"before a lone request was sent to {name!r}: {s.stopped}")
        return
    outcome, message, evidence = judge_lone(lones, basis,
                                            f"profile {name!r} ({workload}, timing rounds)")
    rec("lone-request", name, outcome, message, evidence=evidence,
        names=BATCH_KEYS if outcome is Outcome.FAIL else ())


def evaluate(ev: Evidence, workload: str) -> list[OracleRecord]:
    """The timing records of every profile on ``workload`` (module docstring)."""
    rec = Recorder(ev, "timing", workload)
    names = list(ev.profiles)
    base, others = names[0], []
    for n in names:
        why = ev.blocked(n, workload)
        if why and n == base:
            for o in names:
                rec.skip_all(ORACLES if o == base else ORACLES[:1] + ORACLES[2:], o,
                             why if o == base else f"the baseline {base!r} cannot be timed: {why}")
            return rec.records
        if why:
            rec.skip_all(("latency-throughput", "throughput", "concurrency", "lone-request"), n,
                         why)
        elif n != base:
            others.append(n)
    for n in (base, *others):
        ev.run(n, workload)  # every workload run (the warmups) before any timing sample
    s = _sample(ev, workload, base, others)
    stopped = s.stopped_side.split(":")[0]
    for name in (base, *others):
        _figures(rec, ev, workload, s, name, [f"{base}:A1", f"{base}:A2"] if name == base
                 else [name])
    for name in (base, *others):
        _lone(rec, ev, workload, s, name, base)
    for arm, v in arms(ev, workload, s, base, others).items():
        profile = base if arm == "aa" else arm.split(":", 1)[1]
        oracle = arm.split(":", 1)[0]
        if stopped == profile:
            rec(oracle, profile, Outcome.FAIL, f"timing sampling stopped on {profile!r}: "
                f"{s.stopped}; a daemon that cannot finish a batch cannot be timed", timing=v)
            continue
        if stopped and v.samples == 0:  # another profile's batch stopped the rounds
            rec(oracle, profile, Outcome.SKIPPED, f"timing sampling stopped on {stopped!r} "
                f"before this arm had samples on both sides: {s.stopped}", timing=v)
            continue
        outcome, message = judge(arm, v, ev.profiles[profile].concurrency,
                                 allowed=_allowed(ev, profile, workload), seen=_seen(ev, profile))
        rec(oracle, profile, outcome, message, timing=v,
            names=() if outcome is Outcome.PASS else MODE_KEYS)
    return rec.records


def _allowed(ev: Evidence, profile: str, workload: str) -> int:
    """Jobs the profile's config lets the daemon prove at once: its concurrency, its workers
    and its in-flight limit (each job needs at least one work item in progress)."""
    req = requested(ev.profiles[profile], ev.workload(workload).partitions)
    return int(min(req["concurrency"], req["workers"], req["limit"] or req["workers"]))


def _seen(ev: Evidence, profile: str) -> str:
    facts = ev.facts(profile)
    st = facts.status if facts and facts.status else {}
    if not st:
        return ""
    return (f"the daemon reports pipeline_enabled={st.get('pipeline_enabled')}, "
            f"partition_workers={st.get('partition_workers')}, synthesis "
            f"{st.get('synthesis') or 'n/a'}")
