"""One probe of a bisection: a real run of an intermediate profile against the named oracle.

A probe is :func:`proofdiff.core.differential.run_differential` on one profile (the good one
with some units of the delta applied), its own run id and report under the bisection's
``probes/``. Its outcome, as in dd:

* FAIL: the oracle (``suite/oracle``, a whole ``suite``, or by default any check of the
  gate's suites: preflight, validity, warmup, isolation) failed;
* PASS: it ran and passed (skipped records alone are not a pass), or the named oracle does
  not apply to the profile (a bench command line on a gRPC profile cannot be rejected);
* UNRESOLVED: the run broke rather than passed or failed (an ERROR record, a daemon that did not
  start, the oracle skipped because preflight blocked it, a run-level error).

Probes are cached by (image digest, resolved profile, workload, oracle): dd asks for some
configurations more than once. A ``fresh`` probe bypasses the cache (the confirmation).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import msgspec

from proofdiff.model.errors import ProofdiffError
from proofdiff.core.profile_delta import profile_view
from proofdiff.core.differential import run_differential
from proofdiff.model.oracle_records import OracleRecord
from proofdiff.model.profile import Profile
from proofdiff.model.result import DifferentialResult
from proofdiff.model.run_options import RunOptions
from proofdiff.model.status import Outcome
from proofdiff.oracles.suite_table import applies

from proofdiff.bisect.dd import FAIL, PASS, UNRESOLVED, Config
from proofdiff.bisect.units import Unit, apply_units

__all__ = ["ANY_FAILURE_SUITES", "BudgetExceeded", "Probe", "Prober", "judge", "oracle_applies",
           "suites_for"]

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
        wall_s: the probe's wall time, s. run_id: its report under ``probes/``. fresh: a
            re-run that bypassed the cache (confirmation).
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


def judge(result: DifferentialResult, profile: str, oracle: str | None,
          applicable: bool = True) -> tuple[str, tuple[str, ...], str, OracleRecord | None]:
    """``(outcome, checks, reason, first failing record)`` of one probe's run (module
    docstring). ``applicable``: whether the named oracle applies to the profile at all
    (:func:`proofdiff.oracles.suite_table.applies`); one that does not cannot fail: PASS."""
    if not applicable and not result.errors:
        return PASS, (), f"{oracle} does not apply to this profile", None
    recs = _targets(result.records, profile, oracle)
    failed = [r for r in recs if r.outcome is Outcome.FAIL]
    if failed:
        return FAIL, tuple(r.check for r in failed), failed[0].message.splitlines()[0][:300], \
            failed[0]
    broken = [r for r in recs if r.outcome in (Outcome.ERROR, Outcome.INCONCLUSIVE)]
    if result.errors or broken:
        why = result.errors[0] if result.errors else broken[0].message.splitlines()[0]
        return UNRESOLVED, tuple(r.check for r in broken), why[:300], None
    ran = [r for r in recs if r.outcome is Outcome.PASS]
    if not ran:
        skipped = [r for r in recs if r.outcome is Outcome.SKIPPED]
        why = (skipped[0].message.splitlines()[0] if skipped
               else f"no record of {oracle or 'the checks'} on {profile}")
        return UNRESOLVED, tuple(r.check for r in skipped), why[:300], None
    return PASS, (), f"{len(ran)} check(s) passed", None


class Prober:
    """Runs probes for :func:`proofdiff.bisect.dd.isolate` (``tester``) and keeps the table.

    Args:
        good: the good profile, image pinned. units: the delta's units. workload, oracle: what
            a probe runs and judges. image_digest: part of the cache key. run_dir: the
            bisection's report dir (probes go under ``probes/``). options: the bisection's run
            options, artifacts pinned (nothing is built again). deadline: ``time.monotonic()``
            after which no probe starts. jobs: probes side by side (threads).
    """

    def __init__(self, good: Profile, units: Sequence[Unit], *, workload: str,
                 oracle: str | None, image_digest: str, run_dir: Path,
                 options: RunOptions, deadline: float, jobs: int = 1,
                 log: Callable[[str], None] = lambda _l: None) -> None:
        self.good, self.units, self.workload, self.oracle = good, list(units), workload, oracle
        self.digest, self.run_dir, self.options = image_digest, run_dir, options
        self.deadline, self.jobs, self.log = deadline, max(1, jobs), log
        self.probes: list[Probe] = []
        self.records: dict[Config, OracleRecord | None] = {}
        self._cache: dict[str, Probe] = {}
        self._lock = threading.Lock()

    def profile(self, cfg: Config) -> Profile:
        """The intermediate profile of ``cfg`` (good + those units)."""
        return apply_units(self.good, [self.units[i] for i in sorted(cfg)], name="probe")

    def _key(self, cfg: Config) -> str:
        view = profile_view(self.profile(cfg))
        return json.dumps([self.digest, view, self.workload, self.oracle], sort_keys=True,
                          default=str)

    def _run(self, cfg: Config, fresh: bool) -> Probe:
        if time.monotonic() >= self.deadline:
            raise BudgetExceeded("the bisection's time budget (--budget-s) ran out",
                                 fix="rerun with a larger --budget-s")
        with self._lock:
            index = len(self.probes) + 1
            self.probes.append(Probe(index=index, units=(), config=(), outcome="running"))
        labels = tuple(self.units[i].label for i in sorted(cfg))
        t0 = time.monotonic()
        rid = f"probe-{index:02d}"
        probe = self.profile(cfg)
        result = run_differential(msgspec.structs.replace(
            self.options, workloads=(self.workload,), suites=suites_for(self.oracle),
            report_dir=str(self.run_dir / "probes"), run_id=rid, select=(), images=()),
            profiles={"probe": probe})
        outcome, checks, reason, record = judge(result, "probe", self.oracle,
                                                oracle_applies(self.oracle, probe))
        row = Probe(index=index, units=labels, config=tuple(sorted(cfg)), outcome=outcome,
                    failing=checks, reason=reason, wall_s=round(time.monotonic() - t0, 1),
                    run_id=rid, fresh=fresh)
        with self._lock:
            self.probes[index - 1] = row
            self.records[cfg] = record
        self.log(f"probe {index}: {' + '.join(labels) or 'good'} -> {outcome} "
                 f"({row.wall_s:.0f} s){': ' + reason if outcome != PASS else ''}")
        return row

    def __call__(self, configs: Sequence[Config], fresh: bool) -> list[str]:
        """``tester`` of :func:`~proofdiff.bisect.dd.isolate`: one outcome per config.

        Raises:
            BudgetExceeded: the deadline passed before a probe could start.
        """
        keys = [self._key(c) for c in configs]
        todo = list(dict.fromkeys(k for k in keys if fresh or k not in self._cache))
        cfg_of = {k: c for k, c in zip(keys, configs, strict=True)}
        if self.jobs > 1 and len(todo) > 1:
            with ThreadPoolExecutor(max_workers=self.jobs) as pool:
                done = list(pool.map(lambda k: self._run(cfg_of[k], fresh), todo))
        else:
            done = [self._run(cfg_of[k], fresh) for k in todo]
        got = dict(zip(todo, done, strict=True))
        if not fresh:
            self._cache.update(got)
        return [(got.get(k) or self._cache[k]).outcome for k in keys]

    @property
    def count(self) -> int:
        """Probes run (cache hits not counted)."""
        return len(self.probes)
