"""Every case replayed, judged as ``suites/test_regressions.py`` judges it (pytest's strict
xfail, for ``proofdiff run --suite regressions``).

Per case: ``ok`` (a fixed case holds, or an open case fails with its recorded signature),
``XPASS`` (an open case holds: its bug is gone; mark the case fixed), ``FAIL`` (a fixed case
fails, or any case fails otherwise than recorded), ``SKIP`` (its image or inputs are missing),
``ERROR`` (a malformed case.toml, or a run that could not judge).
"""

from __future__ import annotations

from collections.abc import Callable

import msgspec

from proofdiff.model.run_options import RunOptions
from proofdiff.regressions.case import CaseError, discover, load_case
from proofdiff.regressions.replay import CaseOutcome, replay

__all__ = ["CaseVerdict", "exit_code", "replay_all"]


class CaseVerdict(msgspec.Struct, frozen=True, kw_only=True):
    """One case's verdict (module docstring), its status, and the replay (``None`` when the
    case did not load)."""

    case: str
    verdict: str
    status: str = ""
    message: str = ""
    outcome: CaseOutcome | None = None


def _verdict(status: str, got: CaseOutcome) -> str:
    if got.status == "missing":
        return "SKIP"
    if got.status == "broken":
        return "ERROR"
    if got.status == "holds":
        return "ok" if status == "fixed" else "XPASS"
    if got.status == "reproduces":
        return "ok" if status == "open" else "FAIL"
    return "FAIL"


def replay_all(options: RunOptions | None = None, *,
               log: Callable[[str], None] = lambda _l: None) -> list[CaseVerdict]:
    """Replay every case under ``options.regressions_dir``, in name order (the report dir and
    the artifacts are ``options``')."""
    opts = (options or RunOptions()).with_env()
    out = []
    for folder in discover(opts.regressions_dir):
        try:
            case = load_case(folder)
        except CaseError as exc:
            out.append(CaseVerdict(case=folder.name, verdict="ERROR", message=str(exc)))
            continue
        got = replay(case, opts, log=log)
        out.append(CaseVerdict(case=case.id, verdict=_verdict(case.status, got),
                               status=case.status, message=got.message, outcome=got))
    return out


def exit_code(verdicts: list[CaseVerdict]) -> int:
    """0 every case as expected (or skipped), 1 a FAIL or XPASS, 3 an ERROR or no case."""
    kinds = {v.verdict for v in verdicts}
    if not verdicts or "ERROR" in kinds:
        return 3
    return 1 if kinds & {"FAIL", "XPASS"} else 0
