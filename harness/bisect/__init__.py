"""``proofdiff bisect``: which part of the config delta between a passing and a failing profile
makes the failure (Zeller's dd over the delta's units, every probe a real run)."""

from proofdiff.bisect.bisect_result import BisectResult, ChangeItem
from proofdiff.bisect.bisection import BisectError, bisect_profiles

__all__ = ["BisectError", "BisectResult", "ChangeItem", "bisect_profiles"]
