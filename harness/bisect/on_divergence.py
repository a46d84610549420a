"""``proofdiff run --bisect``: bisect a run's first divergence, and put the proven result where
the ranking was.

The divergence bisected is the first one a bisection can judge: the failing profile FAILs the
check (an ERROR is no failure to isolate) and the baseline has a record of it (a comparison
oracle, such as timing throughput prod vs bench, has none on one profile). The bisection runs
between the baseline (good) and that profile (bad) on the divergence's workload (and image),
with the check as its oracle, within the options' ``bisect_budget_s``. When it finds a change,
confirmed 1-minimal, that change replaces the divergence's ranked suspects (each item with
both values); otherwise the ranking stays. Either way ``extra["bisect"]`` says what was done
and where the bisection's own report is.
"""

from __future__ import annotations

from collections.abc import Callable

import msgspec

from proofdiff.bisect.bisect_result import BisectResult, proven_suspects
from proofdiff.bisect.bisection import bisect_profiles
from proofdiff.model.oracle_records import Divergence
from proofdiff.model.result import DifferentialResult
from proofdiff.model.run_options import RunOptions
from proofdiff.model.status import Outcome

__all__ = ["bisect_divergence", "can_bisect", "bisect_first_divergence", "bisectable"]


def can_bisect(d: Divergence) -> bool:
    """A bisection can judge ``d``: its profile FAILs the check (an ERROR is no failure to
    isolate) and the baseline has a record of it."""
    return d.outcome is Outcome.FAIL and d.baseline_outcome is not None


def bisectable(result: DifferentialResult) -> Divergence | None:
    """The first divergence a bisection can judge (module docstring), or ``None``."""
    return next((d for d in result.divergences if can_bisect(d)), None)


def bisect_first_divergence(result: DifferentialResult, options: RunOptions, *,
                            log: Callable[[str], None] = lambda _l: None,
                            ) -> tuple[DifferentialResult, BisectResult | None]:
    """Bisect ``result``'s first bisectable divergence (module docstring).

    Args:
        result: the differential's result. options: the run's options (the profile set and
            overrides it ran, the artifacts, the report root; ``bisect_budget_s``,
            ``probe_jobs``).

    Returns:
        ``(result, bisection)``: the result with the proven change as that divergence's
        suspects when found, and ``extra["bisect"]``; ``bisection`` is ``None`` when no
        divergence could be bisected (``extra["bisect"]`` says why).
    """
    div = bisectable(result)
    if div is None:
        why = ("no divergence to bisect" if not result.divergences else
               "no divergence a bisection can judge: each is an ERROR or a comparison the "
               "baseline has no record of")
        return _with(result, {"status": "not run", "line": why}), None
    return bisect_divergence(result, div, options, run_id=f"{result.run_id}-bisect", log=log)


def bisect_divergence(result: DifferentialResult, div: Divergence, options: RunOptions, *,
                      run_id: str, log: Callable[[str], None] = lambda _l: None,
                      ) -> tuple[DifferentialResult, BisectResult]:
    """Bisect one bisectable divergence ``div`` of ``result`` (module docstring) as the
    bisection ``run_id`` (its report: ``<report root>/<run_id>/``), within
    ``options.bisect_budget_s``.

    Returns:
        ``(result, bisection)``: the result with the proven change as ``div``'s suspects when
        found, and ``extra["bisect"]`` (the last bisection's note).
    """
    check = f"{div.suite}/{div.oracle}"
    log(f"bisect: {check} on {div.workload}, {div.baseline} -> {div.profile}, within "
        f"{options.bisect_budget_s:.0f} s")
    overrides = (*options.overrides, *([f'*.image="{div.image}"'] if div.image else []))
    bis = bisect_profiles(
        msgspec.structs.replace(options, run_id=run_id, overrides=overrides,
                                workloads=(div.workload,), select=(), images=()),
        good=div.baseline, bad=div.profile, oracle=check, log=log)
    note = {"status": bis.status, "line": bis.line, "run_id": bis.run_id,
            "divergence": div.headline, "probes": bis.n_probes}
    if bis.status != "found":
        return _with(result, note), bis
    proven = proven_suspects(bis.change, f"bisected: the 1-minimal failure-inducing change, "
                                         f"confirmed with {bis.confirmed_probes} probes (report "
                                         f"{bis.run_id})")
    divs = tuple(msgspec.structs.replace(d, suspects=proven) if d is div else d
                 for d in result.divergences)
    return _with(msgspec.structs.replace(result, divergences=divs), note), bis


def _with(result: DifferentialResult, note: dict[str, object]) -> DifferentialResult:
    return msgspec.structs.replace(result, extra={**result.extra, "bisect": note})
