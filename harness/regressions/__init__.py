"""Regression cases: production bugs as replayable tests (``regressions/<case-id>/case.toml``),
replayed by ``suites/test_regressions.py`` and ``proofdiff run --suite regressions``, created by
``proofdiff repro``."""

from __future__ import annotations

import os
from pathlib import Path

from proofdiff.regressions.case import Case, CaseError, discover, load_case, write_case
from proofdiff.regressions.replay import CaseOutcome, replay

__all__ = ["Case", "CaseError", "CaseOutcome", "cases_dir", "discover", "load_case", "replay",
           "write_case"]


def cases_dir() -> Path:
    """Where the cases are: ``$PROOFDIFF_REGRESSIONS``, else ``./regressions`` when it exists,
    else the checkout's ``regressions/`` (beside the ``harness`` package). Read at call time."""
    env = os.environ.get("PROOFDIFF_REGRESSIONS")
    if env:
        return Path(env)
    here = Path.cwd() / "regressions"
    return here if here.is_dir() else Path(__file__).resolve().parents[2] / "regressions"
