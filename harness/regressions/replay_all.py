"""Every case replayed, judged as ``suites/test_regressions.py`` judges it (pytest's strict
xfail, for ``proofdiff run --suite regressions``).

Each case is replayed twice: as pinned, and with its ``[fix] overrides``, which must make it
hold (a fix that does not is no fix; a case without a recorded fix says so). Per case:
``ok`` (a fixed case holds, or an open case fails with its recorded signature; and the case
holds with its fix), ``XPASS`` (an open case holds: its bug is gone; mark the case fixed),
``FAIL`` (a fixed case fails, any case fails otherwise than recorded, or it does not hold with
its fix), ``SKIP`` (its image or inputs are missing), ``ERROR`` (a malformed case.toml, or a
run that could not judge: a build that failed, an oracle that could not decide),
``INTERRUPTED`` (a Ctrl-C or SIGTERM came before the case was judged: it and every case not
reached).
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import msgspec

from proofdiff.fleet.executor import Executor, open_executor
from proofdiff.model.errors import unexpected
from proofdiff.model.result import DifferentialResult
from proofdiff.model.run_options import RunOptions
from proofdiff.regressions.case import CaseError, discover, load_case
from proofdiff.regressions.replay import CaseOutcome, replay_run

__all__ = ["ALL_SKIPPED_EXIT", "CaseRun", "CaseUnit", "CaseVerdict", "exit_code", "judge_case",
           "replay_all", "replay_case"]

#: The exit code of a replay in which a case was skipped (unless allowed) or every case was:
#: what was skipped was not judged, so never 0 (the verdict's INCOMPLETE code;
#: ``suites/conftest.py`` gives pytest the same when every case was skipped).
ALL_SKIPPED_EXIT = 2


class CaseVerdict(msgspec.Struct, frozen=True, kw_only=True):
    """One case's verdict (module docstring), its status, and the replays (``None`` when the
    case did not load; ``with_fix`` ``None`` when it has no fix or was not judged as pinned)."""

    case: str
    verdict: str
    status: str = ""
    message: str = ""
    outcome: CaseOutcome | None = None
    with_fix: CaseOutcome | None = None


def _pinned(status: str, got: CaseOutcome) -> str:
    if got.status == "interrupted":
        return "INTERRUPTED"
    if got.status == "missing":
        return "SKIP"
    if got.status == "broken":
        return "ERROR"
    if got.status == "holds":
        return "ok" if status == "fixed" else "XPASS"
    if got.status == "reproduces":
        return "ok" if status == "open" else "FAIL"
    return "FAIL"


def judge_case(status: str, got: CaseOutcome, fixed: CaseOutcome | None) -> tuple[str, str]:
    """(verdict, message) of one case from its pinned replay ``got`` and its replay with the
    fix ``fixed`` (module docstring); the worse of the two decides.

    ``fixed`` is ``None`` when the case records no fix: the pinned verdict alone, said so."""
    verdict = _pinned(status, got)
    if got.build:  # a case on host programs: which of its pinned builds replayed
        got = msgspec.structs.replace(got, message=f"on build {got.build!r}: {got.message}")
    if verdict in ("SKIP", "ERROR", "INTERRUPTED"):
        return verdict, got.message
    if fixed is None:
        return verdict, f"{got.message}; no [fix] recorded: not replayed with a fix"
    if fixed.status == "interrupted":
        return "INTERRUPTED", f"{got.message}; with its fix: {fixed.message}"
    if fixed.status == "holds":
        return verdict, f"{got.message}; with its fix: {fixed.message}"
    with_fix = "ERROR" if fixed.status in ("broken", "missing") else "FAIL"
    worse = min((verdict, with_fix), key=["ERROR", "FAIL", "XPASS", "ok"].index)
    return worse, (f"{got.message}; with its fix it does not hold: {fixed.status}: "
                   f"{fixed.message}")


class CaseUnit(msgspec.Struct, frozen=True, kw_only=True):
    """One case's unit: its folder and the run options (report dir, artifacts)."""

    folder: str
    options: RunOptions


class CaseRun(msgspec.Struct, frozen=True, kw_only=True):
    """What one case's unit gives back: its verdict and the results of its replays (their
    reports are the caller's to write)."""

    verdict: CaseVerdict
    results: tuple[DifferentialResult, ...] = ()


def replay_case(unit: CaseUnit, log: Callable[[str], None] = lambda _l: None) -> CaseRun:
    """Replay one case as pinned and, where it records a fix, with it (module docstring),
    where the executor puts it: both replays on one host. A case that does not load, whose
    pinned profiles or fix do not resolve, or whose replay meets an unexpected error is ERROR
    for that case alone (its cause named), never the end of the other cases' replay."""
    name = unit.folder.rstrip("/").rsplit("/", 1)[-1]
    try:
        case = load_case(unit.folder)
        got, res = replay_run(case, unit.options, log=log)
        fixed, res_fixed = ((replay_run(case, unit.options, fixed=True, log=log)
                             if case.fix and got.status not in ("missing", "broken",
                                                                "interrupted")
                             else (None, None)))
    except CaseError as exc:
        return CaseRun(verdict=CaseVerdict(case=name, verdict="ERROR", message=str(exc)))
    except Exception as exc:  # noqa: BLE001 - a bug of ours: this case's ERROR, the others go on
        return CaseRun(verdict=CaseVerdict(case=name, verdict="ERROR",
                                           message=unexpected(exc, f"the replay of {name}")))
    verdict, message = judge_case(case.status, got, fixed)
    return CaseRun(verdict=CaseVerdict(case=case.id, verdict=verdict, status=case.status,
                                       message=message, outcome=got, with_fix=fixed),
                   results=tuple(r for r in (res, res_fixed) if r is not None))


def replay_all(options: RunOptions | None = None, *,
               log: Callable[[str], None] = lambda _l: None,
               executor: Executor | None = None,
               on_result: Callable[[DifferentialResult], None] = lambda _r: None,
               ) -> list[CaseVerdict]:
    """Replay every case under ``options.regressions_dir``, in name order, as pinned and with
    its fix (the report dir and the artifacts are ``options``'), each case a unit of
    ``executor`` (default: :func:`~proofdiff.fleet.executor.open_executor` of ``options``:
    one case after the other here, or the Dask cluster of ``cluster`` / ``hosts``). Every
    replay's report is written here, on the caller's side, then the run is handed to
    ``on_result`` (the CLI stores it in ``--history``).

    Raises:
        proofdiff.fleet.executor.FleetError: the cluster cannot be used (before any case).
    """
    opts = (options or RunOptions()).with_env()
    if executor is None:
        with open_executor(opts, log=log) as ex:
            return replay_all(opts, log=log, executor=ex, on_result=on_result)
    folders = discover(opts.regressions_dir)
    # on other machines, the artifacts and each case folder go there first
    unit_opts = executor.ship(msgspec.structs.replace(opts, cluster="", hosts="")) if folders \
        else opts
    units = [CaseUnit(folder=executor.ship_path(f"case {f.name}", str(f)), options=unit_opts)
             for f in folders]
    # progress lines reach the log only from this process's threads
    fn = replay_case if executor.remote else functools.partial(replay_case, log=log)
    names = {u.folder: f.name for u, f in zip(units, folders, strict=True)}
    try:
        runs = executor.map_placed(fn, units, name="case", lost=lambda u, why: CaseRun(
            verdict=CaseVerdict(case=names[u.folder], verdict="ERROR", message=why)))
    except KeyboardInterrupt as exc:  # the cases that came back, and the others INTERRUPTED
        back = list(getattr(exc, "got", None) or [None] * len(units))
        runs = [b if b is not None else ("", CaseRun(verdict=CaseVerdict(
            case=names[u.folder], verdict="INTERRUPTED",
            message="interrupted (Ctrl-C or SIGTERM) before this case was judged")))
            for b, u in zip(back, units, strict=True)]
    from proofdiff.report.writer import write_report

    for where, run in runs:
        for res in run.results:
            if executor.remote:  # the record names the fleet's host that replayed it
                res = msgspec.structs.replace(res, machine={**res.machine, "fleet_host": where})
            write_report(res, opts.report_root)
            on_result(res)
    return [r.verdict for _w, r in runs]


def exit_code(verdicts: list[CaseVerdict], *, allow_skipped: bool = False) -> int:
    """130 a case INTERRUPTED; 3 an ERROR or no case; 1 a FAIL or XPASS; 2 a case skipped
    (its inputs, image or binaries missing: it was not judged, so the replay is no pass)
    unless ``allow_skipped`` (the user's ``--allow-skipped``), and always when every case was
    skipped (nothing was replayed); 0 every case judged as expected."""
    kinds = {v.verdict for v in verdicts}
    if "INTERRUPTED" in kinds:
        return 130
    if not verdicts or "ERROR" in kinds:
        return 3
    if kinds & {"FAIL", "XPASS"}:
        return 1
    if kinds == {"SKIP"} or ("SKIP" in kinds and not allow_skipped):
        return ALL_SKIPPED_EXIT
    return 0
