"""Shared by the suites: run them in the registry's order (preflight before any proof, the cheap
oracles before the expensive ones; correctness does not depend on it)."""

from __future__ import annotations

from pathlib import Path

import pytest

from proofdiff.oracles.suite_table import SUITES

_ORDER = list(SUITES)


def _rank(item: pytest.Item) -> int:
    stem = Path(item.path).stem.removeprefix("test_")
    return _ORDER.index(stem) if stem in _ORDER else len(_ORDER)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    items.sort(key=_rank)  # stable: keeps pytest's grouping within a suite
