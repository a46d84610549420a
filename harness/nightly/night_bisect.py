"""The night's bisections: each NEW divergence (a check that fails on a profile and passes on
the baseline, whose standing against the earlier nights is new: :mod:`proofdiff.nightly.compare`)
is bisected from the baseline to that profile with its check as the oracle
(:func:`proofdiff.bisect.on_divergence.bisect_divergence`, the core ``proofdiff bisect`` and
``run --bisect`` use), one after another, within the night's ``--bisect-budget``.

The budget is wall-clock seconds over all of them: each bisection gets what is left (no probe
starts after it); once it is spent, the divergences not yet bisected are ``budget-spent``. A
divergence still failing, flaky or accepted is not new, and is never bisected again; one a
bisection cannot judge (an ERROR, a comparison with no baseline record) is ``not-bisectable``.
Only a ``found`` bisection names a change, the proven 1-minimal one; every other status says
why there is none (never the ranking's guess).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path

import msgspec

from proofdiff.bisect.bisect_result import BisectResult
from proofdiff.bisect.on_divergence import bisect_divergence, can_bisect
from proofdiff.model.oracle_records import Divergence
from proofdiff.model.result import DifferentialResult
from proofdiff.model.run_options import RunOptions
from proofdiff.nightly.nightly_result import CheckStanding, NightBisection, Standing

__all__ = ["bisect_new", "bisect_suffix", "new_divergences"]

def new_divergences(diff: DifferentialResult,
                    checks: Sequence[CheckStanding]) -> list[Divergence]:
    """Tonight's divergences whose check on its profile and workload is NEW, in order."""
    new = {(c.check, c.profile, c.workload) for c in checks if c.standing is Standing.NEW}
    return [d for d in diff.divergences
            if (f"{d.suite}/{d.oracle}", d.profile, d.workload) in new]


def _record(d: Divergence, status: str, line: str, bis: BisectResult | None = None,
            started: float = 0.0) -> NightBisection:
    now = time.time()
    if bis is None:
        return NightBisection(check=f"{d.suite}/{d.oracle}", workload=d.workload,
                              baseline=d.baseline, profile=d.profile, status=status, line=line,
                              started_unix_s=started or now, stopped_unix_s=now)
    return NightBisection(check=f"{d.suite}/{d.oracle}", workload=d.workload,
                          baseline=d.baseline, profile=d.profile, status=bis.status,
                          line=bis.line or bis.reason,
                          change=bis.change if bis.status == "found" else (),
                          run_id=bis.run_id, probes=bis.n_probes, wall_s=bis.wall_s,
                          started_unix_s=started, stopped_unix_s=now)


def bisect_new(diff: DifferentialResult, checks: Sequence[CheckStanding], opts: RunOptions,
               *, budget_s: float, run_dir: Path,
               log: Callable[[str], None] = lambda _l: None) -> list[NightBisection]:
    """Bisect each new divergence of tonight's ``diff`` (module docstring).

    Args:
        diff: tonight's differential. checks: the night's standings. opts: the night's options
            (profiles, overrides, artifacts; ``bisect_jobs``). budget_s: the night's budget, s
            (0: none is bisected, each says ``disabled``). run_dir: the night's folder; the
            bisections' reports go to ``run_dir/bisect-<n>/``.

    Returns:
        One :class:`NightBisection` per new divergence, in order; an interrupted bisection
        (Ctrl-C, SIGTERM) is the last one (status ``interrupted``), the rest not started.
    """
    found = new_divergences(diff, checks)
    out: list[NightBisection] = []
    deadline = time.monotonic() + budget_s
    for n, d in enumerate(found, 1):
        left = deadline - time.monotonic()
        if not can_bisect(d):
            out.append(_record(d, "not-bisectable", (
                f"not bisected: {d.profile} is {d.outcome.value}, not a failure to isolate"
                if d.baseline_outcome is not None else
                f"not bisected: {d.baseline} has no record of {d.suite}/{d.oracle}")))
        elif budget_s <= 0:
            out.append(_record(d, "disabled", "not bisected: --bisect-budget 0"))
        elif left <= 0:
            out.append(_record(d, "budget-spent", f"not bisected: the night's bisection "
                                                  f"budget ({budget_s:.0f} s) was spent"))
        else:
            options = msgspec.structs.replace(opts, report_dir=str(run_dir),
                                              bisect_budget_s=left)
            started = time.time()
            try:
                _, bis = bisect_divergence(diff, d, options, run_id=f"bisect-{n}", log=log)
            except KeyboardInterrupt:
                out.append(_record(d, "interrupted", "interrupted before its report",
                                   started=started))
                break
            out.append(_record(d, bis.status, "", bis, started))
            log(f"nightly: bisect {out[-1].summary()}")
            if bis.status == "interrupted":
                break
    return out


def bisect_suffix(bisections: Sequence[NightBisection]) -> str:
    """What the decision line adds: the proven changes, and how many were not found."""
    found = [b for b in bisections if b.found]
    rest = len(bisections) - len(found)
    parts = [f"bisected {b.check} on {b.profile}: "
             + " + ".join(c.path for c in b.change) for b in found[:2]]
    if len(found) > 2:
        parts.append(f"+{len(found) - 2} more found")
    if rest:
        parts.append(f"{rest} not resolved by bisection")
    return "; ".join(parts)
