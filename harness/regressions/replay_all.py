"""Every case replayed, judged as ``suites/test_regressions.py`` judges it (pytest's strict
xfail, for ``proofdiff run --suite regressions``).

Each case is replayed twice: as pinned, and with its ``[fix] overrides``, which must make it
hold (a fix that does not is no fix; a case without a recorded fix says so). Per case:
``ok`` (a fixed case holds, or an open case fails with its recorded signature; and the case
holds with its fix), ``XPASS`` (an open case holds: its bug is gone; mark the case fixed),
``FAIL`` (a fixed case fails, any case fails otherwise than recorded, or it does not hold with
its fix), ``SKIP`` (its image or inputs are missing), ``ERROR`` (a malformed case.toml, or a
run that could not judge: a build that failed, an oracle that could not decide).
"""

from __future__ import annotations

from collections.abc import Callable

import msgspec

from proofdiff.model.run_options import RunOptions
from proofdiff.regressions.case import CaseError, discover, load_case
from proofdiff.regressions.replay import CaseOutcome, replay

__all__ = ["ALL_SKIPPED_EXIT", "CaseVerdict", "exit_code", "judge_case", "replay_all"]

#: The exit code of a replay in which every case was skipped: nothing was judged, so never 0
#: (the verdict's INCOMPLETE code; ``suites/conftest.py`` gives pytest the same).
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
    if verdict in ("SKIP", "ERROR"):
        return verdict, got.message
    if fixed is None:
        return verdict, f"{got.message}; no [fix] recorded: not replayed with a fix"
    if fixed.status == "holds":
        return verdict, f"{got.message}; with its fix: {fixed.message}"
    with_fix = "ERROR" if fixed.status in ("broken", "missing") else "FAIL"
    worse = min((verdict, with_fix), key=["ERROR", "FAIL", "XPASS", "ok"].index)
    return worse, (f"{got.message}; with its fix it does not hold: {fixed.status}: "
                   f"{fixed.message}")


def replay_all(options: RunOptions | None = None, *,
               log: Callable[[str], None] = lambda _l: None) -> list[CaseVerdict]:
    """Replay every case under ``options.regressions_dir``, in name order, as pinned and with
    its fix (the report dir and the artifacts are ``options``')."""
    opts = (options or RunOptions()).with_env()
    out = []
    for folder in discover(opts.regressions_dir):
        try:
            case = load_case(folder)
        except CaseError as exc:
            out.append(CaseVerdict(case=folder.name, verdict="ERROR", message=str(exc)))
            continue
        got = replay(case, opts, log=log)
        fixed = (replay(case, opts, fixed=True, log=log)
                 if case.fix and got.status not in ("missing", "broken") else None)
        verdict, message = judge_case(case.status, got, fixed)
        out.append(CaseVerdict(case=case.id, verdict=verdict, status=case.status,
                               message=message, outcome=got, with_fix=fixed))
    return out


def exit_code(verdicts: list[CaseVerdict]) -> int:
    """0 every case as expected (some may be skipped), 1 a FAIL or XPASS, 2 every case skipped
    (nothing was replayed: never a pass), 3 an ERROR or no case."""
    kinds = {v.verdict for v in verdicts}
    if not verdicts or "ERROR" in kinds:
        return 3
    if kinds & {"FAIL", "XPASS"}:
        return 1
    return ALL_SKIPPED_EXIT if kinds == {"SKIP"} else 0
