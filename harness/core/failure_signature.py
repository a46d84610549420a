"""A failure's signature: what makes two failing records the same failure.

Used by the regression cases (``[expect] match``: an open case holds only its own bug) and by
bisect (a probe is FAIL only when it fails the way the bad profile fails: the same oracle and
this signature; any other failure is Zeller's "?").
"""

from __future__ import annotations

import re
from typing import Any

from proofdiff.model.oracle_records import OracleRecord

__all__ = ["matches", "signature"]


def signature(record: OracleRecord) -> dict[str, Any]:
    """The bug's signature in a failing record, for ``[expect] match``: the delta paths its
    evidence names, and a regex of its first line (up to 16 words, and up to the first
    parenthesis or list: details that vary) with every word that holds a number or an id wild.
    The end of a short line says what failed (``...: INVALID``), so it is kept. A suite that
    heads its message with a summary (isolation: ``isolation on profile 'prod' (...): 1
    problem(s)``) lists each problem as ``<oracle>: ...`` below it: the first such line, what
    this oracle saw, is the signature, not the header every failure of the suite shares."""
    lines = record.message.splitlines()
    tag = f"{record.oracle}:"
    line = next((x.strip()[len(tag):].strip() for x in lines[1:] if x.strip().startswith(tag)),
                lines[0] if lines else "")
    words = re.split(r"\s[(\[]", line)[0].split()[:16]

    def pat(w: str) -> str:
        if re.search(r"\d", w) or re.fullmatch(r"[0-9a-f-]{8,}", w):
            return r"\S+"
        return re.escape(w)
    out: dict[str, Any] = {}
    if words:
        out["message"] = r"\s+".join(pat(w) for w in words)
    if record.names:
        out["names"] = list(record.names)
    return out


def matches(record: OracleRecord, match: dict[str, Any]) -> bool:
    """Whether ``record`` carries the case's signature: ``message`` (a regex searched in its
    message), ``evidence`` (each value equal to the record's), ``names`` (each among its
    names). An empty match is any failure of the oracle."""
    if "message" in match and not re.search(str(match["message"]), record.message):
        return False
    ev = match.get("evidence", {})
    if any(record.evidence.get(k) != v for k, v in ev.items()):
        return False
    return all(n in record.names for n in match.get("names", ()))
