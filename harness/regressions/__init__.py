"""Regression cases: production bugs as replayable tests (``regressions/<case-id>/case.toml``),
replayed by ``suites/test_regressions.py`` and ``proofdiff run --suite regressions``, created by
``proofdiff repro``. Where the cases are is ``RunOptions.regressions_dir``."""

from __future__ import annotations

from proofdiff.regressions.case import CaseError, RegressionCase, discover, load_case, write_case
from proofdiff.regressions.replay import CaseOutcome, replay

__all__ = ["CaseError", "CaseOutcome", "RegressionCase", "discover", "load_case", "replay",
           "write_case"]
