"""``run_nightly``: tonight's differential, stored in the history and compared with the nights
before it on the same machine.

1. The differential (:func:`~proofdiff.core.differential.run_differential`) on every
   configured workload (each selected profile's, unless ``--workload`` names them) with the
   default suites and the timing suite (unless ``--suite`` names them); its report is
   ``differential/`` in the night's folder. With ``--cluster`` or ``--hosts`` it is one unit
   the night is the (host, workload) matrix, a row per host (:mod:`proofdiff.nightly.
   fleet_night`): every host runs the differential as a unit of its own and its night is
   judged, stored and written as below against that host's series. The allowlist applies
   there: an accepted failure is shown as such and has no standing here.
2. The history (``--history``; default a SQLite file in the report root,
   ``<report_dir>/history.sqlite``): the last :data:`NIGHTS` nightly runs on this machine
   fingerprint are read, tonight's run is stored (as ``nightly``, under the night's run id,
   whatever its verdict), and each timing series is analysed with and without it.
3. :mod:`proofdiff.nightly.compare`: each check's standing (new, still failing, flaky, fixed,
   error, missing); :mod:`proofdiff.nightly.night_timing`: tonight against the recent nights per
   timing series, and the change points new tonight; the decision and its exit code.
4. :mod:`proofdiff.nightly.night_bisect`: each new divergence bisected within the night's
   budget (``--bisect-budget``), so the decision names the proven minimal change, or says
   why there is none; an interrupted bisection makes the night INTERRUPTED.
5. The report (summary.json, index.html, junit.xml, allure-results with the previous night's
   Allure ``history/`` carried over: :mod:`proofdiff.nightly.allure_history`).

The night's report (summary.json, index.html, junit.xml, allure-results) is written in every
case, a history that fails included (decision ERROR, exit 3).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import msgspec
from sqlalchemy import select
from sqlalchemy.exc import DBAPIError, SQLAlchemyError

from proofdiff.core.differential import run_differential
from proofdiff.core.plan import load_selected, new_run_id
from proofdiff.history.changes import MAX_PVALUE, MIN_MAGNITUDE
from proofdiff.history.database import (History, HistoryError, describe_failure, history_url,
                                        open_history)
from proofdiff.history.fingerprint import machine_key
from proofdiff.history.query import load_series
from proofdiff.history.redaction import shown_url
from proofdiff.history.schema import Machine, OracleRow, Run
from proofdiff.history.store import store_result
from proofdiff.history.view import SeriesView, analyse
from proofdiff.model.errors import ProofdiffError, unexpected
from proofdiff.model.result import DifferentialResult
from proofdiff.model.run_options import RunOptions
from proofdiff.model.status import Outcome
from proofdiff.nightly.allure_history import carry_night, find_history
from proofdiff.nightly.compare import Key, decide, outcomes_of, standings, worse
from proofdiff.nightly.night_timing import judge_timing
from proofdiff.nightly.night_bisect import bisect_new, bisect_suffix
from proofdiff.nightly.nightly_result import (NightBisection, NightDecision, NightlyResult,
                                              SeriesCompare, Slowdown)
from proofdiff.oracles.suite_table import DEFAULT_SUITES

__all__ = ["NIGHTS", "NIGHT_METRICS", "compare_night", "judge_night", "nightly_options",
           "run_nightly", "with_bisections"]

#: Earlier nights compared, at most.
NIGHTS = 10

#: The history metrics whose steps are slowdowns: what proofdiff measured itself (a daemon's
#: own figures are claims, not evidence); ``daemon-memory`` is the idle daemon's memory as the
#: operating system counts it, whose step up over nights is a leak's trend.
NIGHT_METRICS = ("latency", "throughput", "start-to-ready", "daemon-memory")


def nightly_options(opts: RunOptions) -> RunOptions:
    """``opts`` with the nightly's defaults where the caller left them empty: the default
    suites and ``timing``; every workload the selected profiles name; the history file in the
    report root (``--history default``). A profile set that does not load is left to the
    differential, which reports it."""
    suites = opts.suites or (*DEFAULT_SUITES, *(() if "timing" in DEFAULT_SUITES else ("timing",)))
    workloads = opts.workloads
    if not workloads:
        try:
            workloads = tuple(dict.fromkeys(p.workload for p in load_selected(opts).values()))
        except ProofdiffError:
            workloads = ()
    return msgspec.structs.replace(opts, suites=tuple(suites), workloads=workloads,
                                   history=opts.history or "default")


def _past_nights(history: History, fingerprint: str, before_run: str
                 ) -> tuple[list[str], list[dict[Key, str]]]:
    """The last :data:`NIGHTS` nightly runs on this machine, oldest first: their run ids and
    each one's outcome per check.

    Raises:
        HistoryError: the database failed while read.
    """
    try:
        with history.engine.connect() as conn:
            runs = conn.execute(
                select(Run.id, Run.run_id).join(Machine, Run.machine_id == Machine.id)
                .where(Machine.fingerprint == fingerprint, Run.command == "nightly",
                       Run.run_id != before_run)
                .order_by(Run.created_at.desc(), Run.id.desc()).limit(NIGHTS)).all()
            runs = runs[::-1]
            rows = conn.execute(select(OracleRow.run_pk, OracleRow.suite, OracleRow.oracle,
                                       OracleRow.profile, OracleRow.workload,
                                       OracleRow.outcome)
                                .where(OracleRow.run_pk.in_([r.id for r in runs]))).all()
    except (DBAPIError, SQLAlchemyError) as exc:
        raise describe_failure(exc, history.url) from None
    nights: dict[int, dict[Key, str]] = {r.id: {} for r in runs}
    for row in rows:
        night = nights[row.run_pk]
        key = (f"{row.suite}/{row.oracle}", row.profile, row.workload)
        night[key] = worse(night[key], row.outcome) if key in night else row.outcome
    return [r.run_id for r in runs], [nights[r.id] for r in runs]


def _series(history: History, fingerprint: str, result: DifferentialResult
            ) -> list[SeriesView]:
    """Each :data:`NIGHT_METRICS` series of the night's profiles and workloads on this
    machine, nightly runs only (a developer's ``run --history`` on the same database is not a
    night), with its change points (Otava's defaults)."""
    series = [s for m in NIGHT_METRICS
              for s in load_series(history, m, profile=list(result.profiles),
                                   workload=list(result.workloads), machine=fingerprint,
                                   command=("nightly",))]
    return analyse(series, max_pvalue=MAX_PVALUE, min_magnitude=MIN_MAGNITUDE)


def compare_night(diff: DifferentialResult, *, history: str, report_root: Path,
                  run_id: str, wall_s: float = 0.0) -> NightlyResult:
    """Store tonight's differential as the nightly run ``run_id`` in the history that
    ``--history HISTORY`` names and compare it with the nights before it (module docstring,
    steps 2 and 3).

    Returns:
        The :class:`~proofdiff.nightly.nightly_result.NightlyResult`; a history that fails is
        decision ERROR with the cause (the comparison needs it), never an exception.
    """
    night = msgspec.structs.replace(diff, run_id=run_id)
    errors = list(diff.errors)
    started = time.time()
    url = history_url(history, report_root)
    shown, ids, past = shown_url(url), list[str](), list[dict[Key, str]]()
    slowdowns: list[Slowdown] = []
    confirmed: list[Slowdown] = []
    compared: list[SeriesCompare] = []
    key = machine_key(diff.machine)
    try:
        db = open_history(url)
        shown = db.url
        try:
            ids, past = _past_nights(db, key.fingerprint, run_id)
            before = _series(db, key.fingerprint, night)
            store_result(db, night, command="nightly")
            found, confirmed, compared = judge_timing(before, _series(db, key.fingerprint,
                                                                      night))
            slowdowns = [msgspec.structs.replace(s, started_unix_s=started,
                                                 stopped_unix_s=time.time()) for s in found]
        finally:
            db.close()
    except HistoryError as exc:
        errors.append(str(exc))
    except Exception as exc:  # noqa: BLE001 - a bug of ours: ERROR with its traceback
        errors.append(unexpected(exc, "the night's comparison with the history"))
    accepted: set[Key] = {(a.check, a.profile, a.workload) for a in diff.accepted}
    spans = {(r.check, r.profile, r.workload): (r.started_unix_s, r.stopped_unix_s)
             for r in diff.records}
    checks = [msgspec.structs.replace(c, started_unix_s=spans[k][0], stopped_unix_s=spans[k][1])
              if (k := (c.check, c.profile, c.workload)) in spans else c
              for c in standings(outcomes_of(diff.records), past, accepted)]
    decision, line = decide(verdict=diff.verdict, verdict_line=diff.verdict_line, checks=checks,
                            slowdowns=slowdowns, nights=len(ids), errors=errors,
                            passed=sum(r.outcome is Outcome.PASS for r in diff.records),
                            timing=compared, confirmed=confirmed)
    return NightlyResult(
        run_id=run_id, created_unix_s=time.time(), decision=decision, decision_line=line,
        exit_code=decision.exit_code, verdict=diff.verdict.value,
        verdict_line=diff.verdict_line, machine=key.label, history=shown, nights=tuple(ids),
        checks=tuple(checks), slowdowns=tuple(slowdowns), confirmed=tuple(confirmed),
        timing=tuple(compared),
        accepted=tuple(f"{a.check} on {a.profile}/{a.workload}: {a.entry}"
                       for a in diff.accepted),
        errors=tuple(errors), wall_s=round(wall_s, 3))


def with_bisections(result: NightlyResult, bisections: list[NightBisection], *,
                    budget_s: float, wall_s: float) -> NightlyResult:
    """``result`` with its bisections, decided now: the decision line names what they proved
    (and how many were not resolved); an interrupted bisection makes the night INTERRUPTED
    (exit 130)."""
    decision, line = result.decision, result.decision_line
    if any(b.status == "interrupted" for b in bisections):
        decision = NightDecision.INTERRUPTED
        line = "INTERRUPTED while bisecting: the report holds what was done"
    elif suffix := bisect_suffix(bisections):
        line = f"{line}; {suffix}"
    return msgspec.structs.replace(result, decision=decision, decision_line=line,
                                   exit_code=decision.exit_code, bisections=tuple(bisections),
                                   bisect_budget_s=budget_s, wall_s=round(wall_s, 3),
                                   created_unix_s=time.time())  # decided after them


def run_nightly(options: RunOptions | None = None, *,
                log: Callable[[str], None] = lambda _line: None,
                write_report: bool = True,
                bisect_budget_s: float | None = None, allure_history: str = "") -> NightlyResult:
    """Tonight's differential, stored and compared (module docstring).

    Args:
        options: as for a differential (:class:`~proofdiff.model.run_options.RunOptions`),
            with :func:`nightly_options`'s defaults; ``<report_dir>/<run id>/`` holds the
            night's report and ``differential/``.
        bisect_budget_s: the wall-clock budget, s, of the new divergences' bisections
            (:mod:`proofdiff.nightly.night_bisect`; 0 disables them); default the options'
            ``bisect_budget_s`` (1800).
        allure_history: the previous night's Allure history (a generated report or its
            ``history/``) to carry into ``allure-results/history/``; '' = the latest earlier
            night's report folder's (:mod:`proofdiff.nightly.allure_history`).

    Returns:
        The :class:`~proofdiff.nightly.nightly_result.NightlyResult`; a history that fails
        (locked, corrupt, newer schema, unreachable) and a differential that could not run
        come back as decision ERROR with the cause.
    """
    t0, started = time.monotonic(), time.time()
    opts = (options or RunOptions()).with_env()
    rid = opts.run_id or new_run_id()
    opts = nightly_options(msgspec.structs.replace(opts, run_id=rid))
    if opts.cluster or opts.hosts:  # a night per host (proofdiff.nightly.fleet_night)
        from proofdiff.nightly.fleet_night import fleet_night

        return fleet_night(opts, log=log, write_report=write_report,
                           bisect_budget_s=bisect_budget_s, allure_history=allure_history,
                           t0=t0, started=started)
    run_dir = opts.report_root / rid
    diff = run_differential(msgspec.structs.replace(opts, report_dir=str(run_dir),
                                                    run_id="differential"), log=log)
    return judge_night(diff, opts, log=log, write_report=write_report,
                       bisect_budget_s=bisect_budget_s, allure_history=allure_history, t0=t0,
                       started=started)


def judge_night(diff: DifferentialResult, opts: RunOptions, *, log: Callable[[str], None],
                write_report: bool, bisect_budget_s: float | None, allure_history: str,
                t0: float, started: float) -> NightlyResult:
    """Steps 2 to 5 of the module docstring for tonight's differential ``diff`` (its report
    already in ``<report root>/<opts.run_id>/differential/``): stored as the nightly run
    ``opts.run_id``, compared, its new divergences bisected, its report written there.
    ``t0``/``started``: when the night began (``time.monotonic()``, ``time.time()``)."""
    rid = opts.run_id
    run_dir = opts.report_root / rid
    result = compare_night(diff, history=opts.history, report_root=opts.report_root,
                           run_id=rid, wall_s=time.monotonic() - t0)
    log(f"nightly: {result.history}: compared with {len(result.nights)} earlier night(s)")
    budget = opts.bisect_budget_s if bisect_budget_s is None else bisect_budget_s
    if result.decision is NightDecision.NEW:  # not when the comparison failed or was cut
        result = with_bisections(result, bisect_new(
            diff, result.checks, opts, budget_s=budget, run_dir=run_dir, log=log),
            budget_s=budget, wall_s=time.monotonic() - t0)
    source, where = find_history(allure_history, opts.report_root, result.nights)
    result = msgspec.structs.replace(result, started_unix_s=started, allure_history=where)
    if write_report:
        from proofdiff.nightly.nightly_view import write_nightly_report

        write_nightly_report(result, run_dir)
        log(carry_night(source, run_dir))
    return result
