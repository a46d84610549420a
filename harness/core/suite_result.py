"""What one suite made on one workload, and the runs with the flows the suites sent: the shapes
the session keeps in its store (in memory, or shared between pytest-xdist workers), and a
cache that keeps a failure as well as a value."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

import msgspec

from proofdiff.model.jobs import FlowRecord
from proofdiff.model.oracle_records import OracleRecord
from proofdiff.model.runs import RunRecord

__all__ = ["SuiteResult", "merge_flows", "once"]


class SuiteResult(msgspec.Struct, frozen=True, kw_only=True):
    """One suite on one workload: its records and the flows it sent, by profile."""

    suite: str
    workload: str
    records: tuple[OracleRecord, ...]
    flows: dict[str, tuple[FlowRecord, ...]] = msgspec.field(default_factory=dict)


def merge_flows(runs: Sequence[RunRecord], suites: Sequence[SuiteResult]) -> list[RunRecord]:
    """``runs`` with the flows each suite sent to the same daemon appended, in suite order."""
    out = []
    for run in runs:
        extra = [f for res in suites if res.workload == run.workload
                 for f in res.flows.get(run.profile, ())]
        out.append(msgspec.structs.replace(run, flows=(*run.flows, *extra)) if extra else run)
    return out


T = TypeVar("T")
E = TypeVar("E", bound=Exception)


def once(cache: dict[str, T | E], key: str, make: Callable[[], T], errors: type[E]) -> T:
    """``make()`` once per key; an ``errors`` exception is kept and raised again each time."""
    if key not in cache:
        try:
            cache[key] = make()
        except errors as exc:
            cache[key] = exc
    got = cache[key]
    if isinstance(got, errors):
        raise got
    return got  # type: ignore[return-value]
