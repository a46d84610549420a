"""``python -m proofdiff``: the same as ``proofdiff``."""

from proofdiff.cli import entry

entry()
