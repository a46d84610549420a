"""The nightly: tonight's differential with timing, stored in the history, compared with the
nights before it on the same machine (new failures, flaky checks, slowdowns), with CI exit
codes.

    from proofdiff.nightly import run_nightly
    result = run_nightly(RunOptions(images=("curio/cuzk:nightly",), history="default"))
    result.decision, result.exit_code, result.checks, result.slowdowns
"""

from proofdiff.nightly.nightly import run_nightly
from proofdiff.nightly.nightly_result import NightDecision, NightlyResult

__all__ = ["NightDecision", "NightlyResult", "run_nightly"]
