"""``bisect_profiles``: the minimal config change from a passing profile to a failing one.

1. The good and the bad profile are probed as they are. The bad one's failing records are
   the failure of interest: every later probe is FAIL only when it fails the same check with
   the same signature (:func:`proofdiff.bisect.probe.judge`), and the first is the evidence
   the suspects are ranked by. A good profile that fails, or a bad one that passes, stops the
   bisection at once: there is nothing to isolate, and the result says which; a good profile
   on which the bad one's failing checks did not run (skipped, broken) stops it UNRESOLVED.
2. The effective delta between them is cut into units (:mod:`proofdiff.bisect.units`), ranked
   by :func:`proofdiff.core.suspects.rank` on the bad profile's failing record (items the
   evidence names first; items the failing flow did not use left out of the ranking's front).
3. :func:`proofdiff.bisect.dd.isolate` finds the minimal failure-inducing change, every probe a
   real run (:mod:`proofdiff.bisect.probe`), within the options' ``bisect_budget_s``, and
   confirms it 1-minimal afresh; UNRESOLVED names the probes that broke.
"""

from __future__ import annotations

import time
from contextlib import ExitStack
from collections.abc import Callable, Sequence
from typing import Any

import msgspec

from proofdiff.bisect.bisect_result import EXIT, BisectResult, ChangeItem
from proofdiff.bisect.bisect_view import write_bisect_report
from proofdiff.bisect.dd import FAIL, PASS, UNRESOLVED, DDResult, isolate
from proofdiff.bisect.probe import BudgetExceeded, Probe, Prober, oracle_applies
from proofdiff.bisect.units import Unit, units_of
from proofdiff.core.plan import new_run_id, pin_artifacts
from proofdiff.core.profile_delta import profile_delta, profile_view
from proofdiff.core.suspects import rank
from proofdiff.fleet.executor import open_executor
from proofdiff.model.errors import ProofdiffError
from proofdiff.model.image import ImageInfo
from proofdiff.model.profile import Profile
from proofdiff.model.profile_file import load_profiles, select_profiles
from proofdiff.model.run_options import RunOptions
from proofdiff.oracles.suite_table import SUITES
from proofdiff.runtime.host import machine_facts
from proofdiff.runtime.identity import image_info
from proofdiff.runtime.runner import Runner
from proofdiff.runtime.spec import ContainerError

__all__ = ["BisectError", "bisect_profiles", "check_oracle"]

class BisectError(ProofdiffError):
    """The bisection cannot start: an unknown profile or oracle, or a missing image."""


def check_oracle(oracle: str | None) -> str:
    """``oracle`` checked against the suite table: ``suite/oracle``, ``suite`` or '' (any).

    Raises:
        BisectError: an unknown suite or oracle (the known ones listed).
    """
    if not oracle:
        return ""
    suite, _, name = oracle.partition("/")
    if suite not in SUITES:
        raise BisectError(f"--oracle {oracle!r}: unknown suite {suite!r}",
                          fix=f"name a suite (known: {', '.join(SUITES)}), or suite/oracle")
    if name and name not in SUITES[suite].oracles:
        raise BisectError(f"--oracle {oracle!r}: suite {suite!r} has no oracle {name!r}",
                          fix=f"name one of its oracles: {', '.join(SUITES[suite].oracles)}")
    return oracle


def _ordered(units: Sequence[Unit], suspects: Sequence[str]) -> list[int]:
    pos = {p: i for i, p in enumerate(suspects)}

    def key(i: int) -> tuple[int, int]:
        return (min((pos.get(p, len(pos)) for p in units[i].paths), default=len(pos)), i)
    return sorted(range(len(units)), key=key)


def _broken(res: DDResult, probes: Sequence[Probe]) -> list[Probe]:
    """The probes behind ``res.broken`` (configurations whose probes broke), in order."""
    wanted = {frozenset(c) for c in res.broken}
    return [p for p in probes if p.outcome == UNRESOLVED and frozenset(p.config) in wanted]


def bisect_profiles(options: RunOptions | None = None, *, good: str = "bench",
                    bad: str = "prod", oracle: str | None = None,
                    resolved: dict[str, Profile] | None = None,
                    log: Callable[[str], None] = lambda _l: None,
                    write_report: bool = True) -> BisectResult:
    """Bisect the delta from ``good`` to ``bad`` (module docstring).

    Args:
        options: the profile set and ``--set`` overrides (or ``resolved``: the profiles
            themselves, a regression case's), the workload (its first; default the bad
            profile's), the artifacts, the report dir (``<report_dir>/<run id>/`` gets
            summary.json, index.html and ``probes/``), the run id, and the bisection's budget
            (``bisect_budget_s``: no probe starts after it) and probes side by side
            (``probe_jobs`` threads, or the Dask cluster of ``cluster`` / ``hosts``: each
            probe a unit, :mod:`proofdiff.fleet`).
        good, bad: profile names. oracle: ``suite/oracle`` or ``suite``; default any failure.

    Returns:
        The :class:`BisectResult`; bad input comes back as status ``error`` with the cause,
        and the report is written in every case.
    """
    t0, started = time.monotonic(), time.time()
    opts = (options or RunOptions()).with_env()
    rid = opts.run_id or f"bisect-{new_run_id()}"
    run_dir = opts.report_root / rid
    status, reason, line = "error", "", ""
    prober: Prober | None = None
    units: list[Unit] = []
    order: list[int] = []
    change: tuple[ChangeItem, ...] = ()
    difference: tuple[str, ...] = ()
    steps: tuple[str, ...] = ()
    broken: list[Probe] = []
    confirmed = 0
    evidence: dict[str, str] = {}
    wl = ""
    image = ImageInfo(tag="")
    views: dict[str, dict[str, Any]] = {}
    stack = ExitStack()  # the executor of the probes (threads, or a Dask cluster)
    try:
        checked = check_oracle(oracle)
        chosen = select_profiles(resolved or load_profiles(opts.profiles, opts.overrides),
                                 [good, bad])
        g, b = chosen[good], chosen[bad]
        if checked and not oracle_applies(checked, b):
            # it could never fail on bad: the run would only say "bad passes", as if the
            # oracle had been seen to pass
            raise BisectError(f"--oracle {checked!r} does not apply to the bad profile {bad!r} "
                              "(it never has a record there)",
                              fix="name an oracle that bad runs, or leave --oracle out "
                                  "(any failure)")
        wl = opts.workloads[0] if opts.workloads else b.workload
        opts, reference = pin_artifacts(opts, [wl], reference=not (g.image and b.image),
                                        log=log)
        ref_tag = reference.tag if reference else None
        g = msgspec.structs.replace(g, workload=wl, image=g.image or ref_tag)
        b = msgspec.structs.replace(b, workload=wl, image=b.image or ref_tag)
        views = {good: profile_view(g), bad: profile_view(b)}
        try:
            image = image_info(Runner(rid), g.image or "")
        except ContainerError as exc:
            raise BisectError(exc.headline, fix=exc.fix) from None
        delta = profile_delta(g, b)
        units = units_of(delta)
        executor = stack.enter_context(open_executor(opts, jobs=opts.probe_jobs, log=log))
        opts = executor.ship(opts)  # probes on other machines: the artifacts go there first
        prober = Prober(g, units, workload=wl, oracle=checked or None, image_digest=image.digest,
                        run_dir=run_dir, deadline=t0 + opts.bisect_budget_s,
                        executor=executor, log=log, options=opts)
        full = frozenset(range(len(units)))
        log(f"bisect {rid}: {len(delta.items)} delta items in {len(units)} units, {good} -> "
            f"{bad} on {wl}, oracle {checked or 'any failure'}")
        g_out, b_out = prober([frozenset(), full], False)
        if g_out == PASS and b_out == FAIL:  # good must pass the checks bad fails
            g_out = prober.expect_failures_of(full)
        record = prober.records.get(full)
        if record is not None:
            evidence = {"check": record.check, "message": record.message.splitlines()[0][:500]}
        if g_out != PASS or b_out != FAIL:
            p_g, p_b = prober.probes[0], prober.probes[-1]
            if g_out == FAIL:
                status, reason = "good-fails", (f"the good profile {good!r} already fails "
                                                f"{', '.join(p_g.failing)}: {p_g.reason}")
            elif b_out == PASS:
                status, reason = "bad-passes", (f"the bad profile {bad!r} passes "
                                                f"{checked or 'every check'}: nothing to isolate")
            else:
                status, reason = "unresolved", (
                    f"{good if g_out != PASS else bad} neither passed nor failed: "
                    f"{(p_g if g_out != PASS else p_b).reason}")
        else:
            suspects = [s.path for s in rank(delta, record)] if record else []
            order = _ordered(units, suspects)
            res = isolate(len(units), prober, order=order, batch=prober.jobs > 1)
            status, reason, steps, confirmed = res.status, res.reason, res.steps, res.confirmed
            broken = _broken(res, prober.probes)
            if broken:
                reason += "; probes that broke: " + "; ".join(
                    f"probe {p.index} ({' + '.join(p.units) or good}): {p.reason}"
                    for p in broken)
            change = tuple(ChangeItem(path=i.path, good=i.left, bad=i.right,
                                      unit=units[u].label)
                           for u in res.change for i in units[u].items)
            difference = tuple(units[u].label for u in res.difference)
    except BudgetExceeded as exc:
        status, reason = "budget", str(exc)
    except KeyboardInterrupt:
        status, reason = "interrupted", "interrupted: the report holds the probes so far"
    except ProofdiffError as exc:
        status, reason = "error", str(exc)
    finally:
        stack.close()
    probes = tuple(prober.probes) if prober else ()
    n = len(probes)
    if status == "found":
        line = (f"FOUND in {n} probes: {' + '.join(c.path for c in change)} "
                f"({good} -> {bad}) makes {oracle or 'a check'} fail; 1-minimal, confirmed "
                f"with {confirmed} probes")
    else:
        line = f"{status.upper()} after {n} probes: {reason}"
    result = BisectResult(
        run_id=rid, created_unix_s=time.time(), status=status, exit_code=EXIT[status], line=line,
        good=good, bad=bad, workload=wl, oracle=oracle or "", image=image,
        change=change, difference=difference, broken_probes=tuple(p.index for p in broken),
        confirmed_probes=confirmed, units=tuple(units[i].label for i in order)
        or tuple(u.label for u in units), probes=probes, n_probes=n, evidence=evidence,
        steps=steps, reason=reason, profiles=views, wall_s=round(time.monotonic() - t0, 1),
        machine=machine_facts(), started_unix_s=started)
    if write_report:
        write_bisect_report(result, run_dir)
    return result
