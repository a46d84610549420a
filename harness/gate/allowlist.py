"""The gate's use of the allowlist (:mod:`proofdiff.model.allowlist`, the format shared with
``run`` and ``nightly``): a matching entry marks a finding accepted, with its reason and link."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence

import msgspec

from proofdiff.gate.gate_result import Finding
from proofdiff.model.allowlist import (AllowEntry, AllowlistError, StaleEntry, load_allowlist,
                                       match_allowlist)

__all__ = ["AllowEntry", "AllowlistError", "apply_allowlist", "load_allowlist"]


def apply_allowlist(findings: Sequence[Finding], entries: Sequence[AllowEntry],
                    today: dt.date | None = None) -> tuple[list[Finding], list[StaleEntry]]:
    """Mark the findings an unexpired entry matches as accepted; list expired entries (each
    fails the gate) and unexpired ones that matched nothing (stale).

    Returns:
        (findings, stale-or-expired entries), findings in their order.
    """
    hits, listed = match_allowlist(findings, entries, today)
    out = [f if hit is None else msgspec.structs.replace(
               f, accepted=True, accepted_by=hit.where, reason=hit.reason, link=hit.link)
           for f, hit in zip(findings, hits)]
    return out, listed
