"""Shared pieces of the differential suites.

* Order: preflight, validity, warmup, isolation, timing (preflight runs before any proof; the
  cheap oracles before the expensive ones). Each suite is independent of the order for
  correctness (``fixtures.differential``); the order only makes failures show up early.
* ``proofdiff_gate``: skips a proving test of a profile whose preflight failed or whose
  daemon died, with the reason, instead of piling consequences on the root cause.
* ``proofdiff_record``: writes an :class:`~harness.oracle_records.OracleRecord`, then fails
  (or passes) the test with the same message, so the report and pytest always agree.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from fixtures.differential import blocked, record
from fixtures.session import ProofdiffSession
from harness.oracle_records import OracleRecord

SUITE_ORDER = ("preflight", "validity", "warmup", "isolation", "timing")


class TimingInconclusive(UserWarning):
    """A timing arm was neither SAME nor DIFFERENT within the sample budget."""


def suite_name(path: str | Path) -> str:
    """``suites/test_isolation.py`` -> ``isolation``."""
    stem = Path(path).stem
    return stem[5:] if stem.startswith("test_") else stem


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    def rank(item: pytest.Item) -> int:
        name = suite_name(item.path)
        return SUITE_ORDER.index(name) if name in SUITE_ORDER else len(SUITE_ORDER)

    items.sort(key=rank)  # stable: keeps pytest's grouping within a suite


@pytest.fixture
def proofdiff_gate(proofdiff_session: ProofdiffSession,
                   request: pytest.FixtureRequest) -> Callable[..., None]:
    """``gate(profile, workload, oracle)``: skip, and record the oracle as ``skipped`` with the
    reason, when the profile is blocked (its preflight failed or its daemon died)."""
    suite = suite_name(request.node.path)

    def gate(profile: str, workload: str, oracle: str = "") -> None:
        why = blocked(proofdiff_session, profile, workload)
        if why:
            record(proofdiff_session, OracleRecord(suite, oracle or request.node.originalname,
                                                   profile, workload, "skipped", why))
            pytest.skip(why)

    return gate


@pytest.fixture
def proofdiff_record(proofdiff_session: ProofdiffSession,
                     request: pytest.FixtureRequest) -> Callable[..., None]:
    """``rec(oracle, profile, workload, outcome, message, data=None)``: record, then fail the
    test on ``fail``, warn on ``inconclusive``."""
    suite = suite_name(request.node.path)

    def rec(oracle: str, profile: str, workload: str, outcome: str, message: str,
            data: dict[str, Any] | None = None) -> None:
        record(proofdiff_session, OracleRecord(suite, oracle, profile, workload, outcome,
                                               message, dict(data or {})))
        try:
            import allure

            allure.attach(message, name=f"{suite}/{oracle} {profile or 'all'}: {outcome}",
                          attachment_type=allure.attachment_type.TEXT)
        except Exception:  # noqa: BLE001 - allure is evidence only
            pass
        if outcome == "fail":
            pytest.fail(message, pytrace=False)
        if outcome == "inconclusive":
            warnings.warn(TimingInconclusive(message.splitlines()[0]), stacklevel=2)

    return rec
