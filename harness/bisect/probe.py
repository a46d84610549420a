"""One probe of a bisection: a real run of an intermediate profile against the named oracle.

A probe is :func:`proofdiff.core.differential.run_differential` on one profile (the good one
with some units of the delta applied), its own run id and report under the bisection's
``probes/``. Its outcome, as in dd (:func:`judge`):

* FAIL: it fails the way the bad profile fails: a record of the oracle (``suite/oracle``, a
  whole ``suite``, or by default any check of the gate's suites: preflight, validity, warmup,
  isolation) FAILs with the same check and the same signature
  (:mod:`proofdiff.core.failure_signature`) as one of the bad profile's failing records;
* PASS: it ran and every record of the oracle passed, the bad profile's failing checks among
  them (skipped records alone are not a pass), or the named oracle does not apply to the
  profile (a bench command line on a gRPC profile cannot be rejected);
* UNRESOLVED (Zeller's "?"): anything else: the oracle failed another way (another check, or
  the same check with another signature), the run broke (an ERROR or INCONCLUSIVE record, a
  daemon that did not start, a run-level error), it was partial (a selected suite left no
  record, a check of the bad profile's failure did not run) or it was interrupted.

An interrupted probe also stops the bisection (``KeyboardInterrupt``): a Ctrl-C is never a
probe outcome to step around.

Probes are cached by (image digest, resolved profile, workload, oracle): dd asks for some
configurations more than once. A ``fresh`` probe bypasses the cache (the confirmation).
"""

from __future__ import annotations

import json
import threading
import time
from typing import Any
from collections.abc import Callable, Sequence
from pathlib import Path

import msgspec

from proofdiff.fleet.executor import Executor, ThreadExecutor
from proofdiff.model.errors import ProofdiffError
from proofdiff.core.failure_signature import matches, signature
from proofdiff.core.profile_delta import profile_view
from proofdiff.core.differential import run_differential
from proofdiff.core.verdict import missing_cells
from proofdiff.model.oracle_records import OracleRecord
from proofdiff.model.profile import Profile
from proofdiff.model.result import DifferentialResult
from proofdiff.model.run_options import RunOptions
from proofdiff.model.status import Outcome, Verdict
from proofdiff.oracles.suite_table import applies

from proofdiff.bisect.dd import FAIL, PASS, UNRESOLVED, Config
from proofdiff.bisect.units import Unit, apply_units

__all__ = ["ANY_FAILURE_SUITES", "BudgetExceeded", "Failure", "Probe", "ProbeUnit", "Prober",
           "failures_of", "judge", "oracle_applies", "run_probe", "suites_for"]

#: The suites probed for "any failure" (no ``--oracle``): the checks a gate requires.
ANY_FAILURE_SUITES = ("preflight", "validity", "warmup", "isolation")


class BudgetExceeded(ProofdiffError):
    """The bisection's time budget ran out before a probe could start."""


class Probe(msgspec.Struct, frozen=True, kw_only=True):
    """One row of the probe table.

    Attributes:
        index: 1-based probe number. units: the applied units' labels (empty = the good
            profile). config: their indices. outcome: PASS | FAIL | UNRESOLVED. failing: the
            checks that failed (or broke, for UNRESOLVED). reason: one line on the outcome.
        wall_s: the probe's wall time, s. started_unix_s, stopped_unix_s: when it ran (s
            since the epoch, by the clock of the host that ran it). run_id: its report under
            ``probes/``. fresh: a re-run that bypassed the cache (confirmation). host: where
            it ran (``local``, or the Dask worker's name: :mod:`proofdiff.fleet`).
    """

    index: int
    units: tuple[str, ...]
    config: tuple[int, ...]
    outcome: str
    failing: tuple[str, ...] = ()
    reason: str = ""
    wall_s: float = 0.0
    run_id: str = ""
    fresh: bool = False
    started_unix_s: float = 0.0
    stopped_unix_s: float = 0.0
    host: str = ""


def suites_for(oracle: str | None) -> tuple[str, ...]:
    """The suites a probe runs for ``oracle`` (preflight always: it says why a run broke)."""
    if not oracle:
        return ANY_FAILURE_SUITES
    suite = oracle.split("/", 1)[0]
    return tuple(dict.fromkeys(["preflight", suite]))


def oracle_applies(oracle: str | None, profile: Profile) -> bool:
    """Whether ``oracle`` (``suite/oracle``) has a record on ``profile`` when it runs alone
    (a bench command line is checked on bench-cli profiles only); a suite or '' always does."""
    if not oracle or "/" not in oracle:
        return True
    suite, name = oracle.split("/", 1)
    return applies(suite, name, profile=profile, baseline=True)


def _targets(records: Sequence[OracleRecord], profile: str,
             oracle: str | None) -> list[OracleRecord]:
    mine = [r for r in records if r.profile == profile]
    if not oracle:
        return [r for r in mine if r.suite in ANY_FAILURE_SUITES]
    if "/" in oracle:
        return [r for r in mine if r.check == oracle]
    return [r for r in mine if r.suite == oracle]


class Failure(msgspec.Struct, frozen=True, kw_only=True):
    """One way the bad profile fails: the ``check`` (``suite/oracle``) and the signature its
    record carries (``match``, :func:`proofdiff.core.failure_signature.signature`)."""

    check: str
    match: dict[str, Any]

    def seen_in(self, record: OracleRecord) -> bool:
        """Whether ``record`` is this failure: a FAIL of the same check with the signature."""
        return (record.outcome is Outcome.FAIL and record.check == self.check
                and matches(record, self.match))


def failures_of(records: Sequence[OracleRecord]) -> tuple[Failure, ...]:
    """The failures of interest: one per FAIL record (the bad profile's, within the oracle)."""
    return tuple(Failure(check=r.check, match=signature(r)) for r in records
                 if r.outcome is Outcome.FAIL)


def _head(text: str) -> str:
    return (text.strip().splitlines() or [""])[0][:300]


def judge(result: DifferentialResult, profile: str, oracle: str | None,
          applicable: bool = True, expect: Sequence[Failure] | None = None,
          ) -> tuple[str, tuple[str, ...], str, OracleRecord | None]:
    """``(outcome, checks, reason, first failing record)`` of one probe's run (module
    docstring).

    Args:
        result: the probe's run. profile: the probe's profile name. oracle: ``suite/oracle``,
            ``suite`` or ``None`` (any failure of :data:`ANY_FAILURE_SUITES`).
        applicable: whether the named oracle applies to the profile at all
            (:func:`proofdiff.oracles.suite_table.applies`); one that does not cannot fail:
            PASS.
        expect: the bad profile's failures (:func:`failures_of`): FAIL needs one of them, and
            PASS needs each of their checks to have passed. ``None``: the bad and the good
            profile themselves, where any failure of the oracle is FAIL.

    Returns:
        ``checks``: the checks that failed (FAIL), or broke or failed another way
        (UNRESOLVED). ``record``: the first failing record (FAIL only).
    """
    if result.verdict is Verdict.INTERRUPTED:
        return UNRESOLVED, (), "the probe was interrupted: its records are partial", None
    if result.errors:
        return UNRESOLVED, (), _head(result.errors[0]), None
    if not applicable:
        return PASS, (), f"{oracle} does not apply to this profile", None
    missing = missing_cells(result.records, [profile], result.workloads, result.suites)
    if missing:
        return UNRESOLVED, (), f"the probe is partial: no record for {', '.join(missing)}", None
    recs = _targets(result.records, profile, oracle)
    failed = [r for r in recs if r.outcome is Outcome.FAIL]
    ours = [r for r in failed if expect is None or any(f.seen_in(r) for f in expect)]
    if ours:
        return FAIL, tuple(r.check for r in ours), _head(ours[0].message), ours[0]
    if failed:
        return UNRESOLVED, tuple(r.check for r in failed), (
            f"fails another way than the bad profile: {failed[0].check}: "
            f"{_head(failed[0].message)}"), None
    broken = [r for r in recs if r.outcome in (Outcome.ERROR, Outcome.INCONCLUSIVE)]
    if broken:
        return UNRESOLVED, tuple(r.check for r in broken), _head(broken[0].message), None
    passed = {r.check for r in recs if r.outcome is Outcome.PASS}
    unseen = sorted({f.check for f in expect or ()} - passed)
    if not passed or unseen:
        skipped = [r for r in recs if r.outcome is Outcome.SKIPPED
                   and (not unseen or r.check in unseen)]
        why = (_head(skipped[0].message) if skipped
               else f"no record of {', '.join(unseen) or oracle or 'the checks'} on {profile}")
        if unseen:
            why = f"{', '.join(unseen)} did not pass or fail: {why}"
        return UNRESOLVED, tuple(r.check for r in skipped), why[:300], None
    return PASS, (), f"{len(passed)} check(s) passed", None


class ProbeUnit(msgspec.Struct, frozen=True, kw_only=True):
    """What one probe's unit is given: its run options (workload, suites, run id) and the
    intermediate profile."""

    options: RunOptions
    profile: Profile


def run_probe(unit: ProbeUnit) -> DifferentialResult:
    """One probe, where the executor puts it (a thread here, or a Dask worker): the real run,
    its report left to the caller (:meth:`Prober.__call__` writes it under ``probes/``)."""
    return run_differential(unit.options, profiles={"probe": unit.profile}, write_report=False)


def _lost_probe(unit: ProbeUnit, message: str) -> DifferentialResult:
    """A probe whose host went away while it ran: an ERROR run (the probe is UNRESOLVED)."""
    from proofdiff.fleet.differential import lost_result

    return lost_result(unit.options, message)


class Prober:
    """Runs probes for :func:`proofdiff.bisect.dd.isolate` (``tester``) and keeps the table.

    Args:
        good: the good profile, image pinned. units: the delta's units. workload, oracle: what
            a probe runs and judges. image_digest: part of the cache key. run_dir: the
            bisection's report dir (probes go under ``probes/``). options: the bisection's run
            options, artifacts pinned (nothing is built again). deadline: ``time.monotonic()``
            after which no probe starts. jobs: probes side by side (threads).

    Attributes:
        probes: the probe table, in order. records: each configuration's failing record.
        expect: the bad profile's failures (:meth:`expect_failures_of`); ``None`` until then,
            when any failure of the oracle is FAIL (the good and bad profiles themselves).
    """

    def __init__(self, good: Profile, units: Sequence[Unit], *, workload: str,
                 oracle: str | None, image_digest: str, run_dir: Path,
                 options: RunOptions, deadline: float, jobs: int = 1,
                 executor: Executor | None = None,
                 log: Callable[[str], None] = lambda _l: None) -> None:
        self.good, self.units, self.workload, self.oracle = good, list(units), workload, oracle
        self.digest, self.run_dir, self.options = image_digest, run_dir, options
        self.executor = executor or ThreadExecutor(jobs)
        self.deadline, self.jobs, self.log = deadline, self.executor.slots, log
        self.probes: list[Probe] = []
        self.records: dict[Config, OracleRecord | None] = {}
        self.expect: tuple[Failure, ...] | None = None
        self._results: dict[str, DifferentialResult] = {}
        self._cache: dict[str, Probe] = {}
        self._lock = threading.Lock()

    def profile(self, cfg: Config) -> Profile:
        """The intermediate profile of ``cfg`` (good + those units)."""
        return apply_units(self.good, [self.units[i] for i in sorted(cfg)], name="probe")

    def _key(self, cfg: Config) -> str:
        view = profile_view(self.profile(cfg))
        return json.dumps([self.digest, view, self.workload, self.oracle], sort_keys=True,
                          default=str)

    def _start(self, cfg: Config) -> tuple[int, ProbeUnit]:
        """A probe's row (``running``) and its unit.

        Raises:
            BudgetExceeded: the deadline passed.
        """
        if time.monotonic() >= self.deadline:
            raise BudgetExceeded("the bisection's time budget (--bisect-budget) ran out",
                                 fix="rerun with a larger --bisect-budget")
        with self._lock:
            index = len(self.probes) + 1
            self.probes.append(Probe(index=index, units=(), config=(), outcome="running"))
        unit = ProbeUnit(options=msgspec.structs.replace(
            self.options, workloads=(self.workload,), suites=suites_for(self.oracle),
            report_dir=str(self.run_dir / "probes"), run_id=f"probe-{index:02d}", select=(),
            images=(), cluster="", hosts=""), profile=self.profile(cfg))
        return index, unit

    def _finish(self, cfg: Config, fresh: bool, index: int, unit: ProbeUnit,
                result: DifferentialResult, host: str) -> Probe:
        """Judge a probe's run, write its report (here, on the caller's side), fill its row.

        Raises:
            KeyboardInterrupt: the probe was interrupted (its row says so first).
        """
        from proofdiff.report.writer import write_report

        write_report(result, self.run_dir / "probes")
        labels = tuple(self.units[i].label for i in sorted(cfg))
        rid, wall = unit.options.run_id, round(result.wall_s, 1)
        # when it ran, by the clock of the host that ran it (the result is made at its end)
        started, stopped = result.created_unix_s - result.wall_s, result.created_unix_s
        if result.verdict is Verdict.INTERRUPTED:
            with self._lock:
                self.probes[index - 1] = Probe(
                    index=index, units=labels, config=tuple(sorted(cfg)), outcome=UNRESOLVED,
                    reason="interrupted", wall_s=wall, run_id=rid, fresh=fresh,
                    started_unix_s=started, stopped_unix_s=stopped, host=host)
            raise KeyboardInterrupt
        outcome, checks, reason, record = judge(result, "probe", self.oracle,
                                                oracle_applies(self.oracle, unit.profile),
                                                self.expect)
        row = Probe(index=index, units=labels, config=tuple(sorted(cfg)), outcome=outcome,
                    failing=checks, reason=reason, wall_s=wall, run_id=rid, fresh=fresh,
                    started_unix_s=started, stopped_unix_s=stopped, host=host)
        with self._lock:
            self.probes[index - 1] = row
            self.records[cfg] = record
            if not fresh:
                self._results[self._key(cfg)] = result
        self.log(f"probe {index}: {' + '.join(labels) or 'good'} -> {outcome} "
                 f"({row.wall_s:.0f} s){': ' + reason if outcome != PASS else ''}")
        return row

    def expect_failures_of(self, bad: Config, good: Config = frozenset()) -> str:
        """Take the failures of interest from ``bad``'s probe (its failing records within the
        oracle), and judge ``good``'s probe again against them: the good profile must pass the
        checks the bad one fails, not merely fail nothing. Returns good's outcome now.

        Raises:
            KeyError: either configuration was not probed yet (a bug of the caller's).
        """
        bad_run = self._results[self._key(bad)]
        self.expect = failures_of(_targets(bad_run.records, "probe", self.oracle))
        key = self._key(good)
        row = self._cache[key]
        outcome, checks, reason, _rec = judge(self._results[key], "probe", self.oracle,
                                              oracle_applies(self.oracle, self.profile(good)),
                                              self.expect)
        row = msgspec.structs.replace(row, outcome=outcome, failing=checks, reason=reason)
        self._cache[key] = row
        self.probes[row.index - 1] = row
        return outcome

    def __call__(self, configs: Sequence[Config], fresh: bool) -> list[str]:
        """``tester`` of :func:`~proofdiff.bisect.dd.isolate`: one outcome per config.

        Raises:
            BudgetExceeded: the deadline passed before a probe could start.
        """
        keys = [self._key(c) for c in configs]
        todo = list(dict.fromkeys(k for k in keys if fresh or k not in self._cache))
        cfg_of = {k: c for k, c in zip(keys, configs, strict=True)}
        # one slot: one probe after the other, so a Ctrl-C stops the batch at its probe
        step = len(todo) if self.executor.slots > 1 else 1
        done: list[Probe] = []
        for at in range(0, len(todo), step):
            batch = todo[at:at + step]
            started = [self._start(cfg_of[k]) for k in batch]
            results = self.executor.map_placed(run_probe, [u for _i, u in started],
                                               name="probe", lost=_lost_probe)
            done += [self._finish(cfg_of[k], fresh, i, u, r, host)
                     for k, (i, u), (host, r) in zip(batch, started, results, strict=True)]
        got = dict(zip(todo, done, strict=True))
        if not fresh:
            self._cache.update(got)
        return [(got.get(k) or self._cache[k]).outcome for k in keys]

    @property
    def count(self) -> int:
        """Probes run (cache hits not counted)."""
        return len(self.probes)
