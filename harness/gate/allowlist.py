"""Known divergences a gate accepts: a TOML allowlist, each entry with a reason and an expiry.

    [[accept]]
    check = "validity/proofs"        # suite/oracle, timing/<metric> or divergence/suite/oracle
    profile = "prod"                 # or "*"
    match = "partition [0-9]+ invalid"   # a regular expression searched in the message
    reason = "cuzk#123: known race, fixed in 0.4"
    link = "https://github.com/filecoin-project/curio/issues/123"
    expires = 2027-01-31             # a TOML date

An entry that matches a finding turns it into an accepted difference (reported with its reason
and link). An entry past its expiry fails the gate and names itself, whether or not it matches;
an entry that matches nothing is reported as stale.
"""

from __future__ import annotations

import datetime as dt
import re
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import msgspec

from proofdiff.model.errors import ProofdiffError
from proofdiff.gate.gate_result import Finding, StaleEntry

__all__ = ["AllowEntry", "AllowlistError", "apply_allowlist", "load_allowlist"]

_KEYS = {"check": "suite/oracle (e.g. 'validity/proofs', 'timing/latency')",
         "profile": "a profile name or '*'",
         "match": "a regular expression searched in the finding's message",
         "reason": "why the difference is accepted",
         "link": "where it is tracked (an issue URL)",
         "expires": "a TOML date (2027-01-31) after which the entry fails the gate"}


class AllowlistError(ProofdiffError):
    """The allowlist does not load: names the file, the entry and the fix."""


@dataclass(frozen=True)
class AllowEntry:
    """One ``[[accept]]`` entry (module docstring); ``where`` = ``FILE#N`` (1-based)."""

    where: str
    check: str
    profile: str
    match: re.Pattern[str]
    reason: str
    link: str
    expires: dt.date

    def matches(self, f: Finding) -> bool:
        """The finding is this entry's check and profile, and its message matches."""
        return (f.check == self.check and self.profile in ("*", f.profile)
                and self.match.search(f.message) is not None)


def load_allowlist(path: str | Path) -> list[AllowEntry]:
    """Entries of an allowlist file, in file order.

    Raises:
        AllowlistError: the file is missing or not TOML, an entry lacks a key or has an unknown
            one, ``match`` is not a regular expression, or ``expires`` is not a date.
    """
    p = Path(path)
    try:
        doc = tomllib.loads(p.read_text(encoding="utf-8"))
    except OSError as exc:
        raise AllowlistError(f"allowlist {p}: cannot be read ({exc.strerror})",
                             fix="pass an existing allowlist file with --allowlist") from None
    except tomllib.TOMLDecodeError as exc:
        raise AllowlistError(f"allowlist {p}: not TOML: {exc}",
                             fix="fix the file and rerun") from None
    unknown = set(doc) - {"accept"}
    if unknown or not isinstance(doc.get("accept", []), list):
        raise AllowlistError(f"allowlist {p}: found {sorted(unknown) or 'accept as a table'}",
                             fix="only [[accept]] entries belong here: write each entry as an "
                                 "[[accept]] table (the module docstring of "
                                 "harness/gate/allowlist.py has one)")
    out = []
    for i, raw in enumerate(doc.get("accept", []), 1):
        where = f"{p}#{i}"
        missing = [k for k in _KEYS if k not in raw]
        extra = sorted(set(raw) - set(_KEYS))
        if missing or extra:
            need = "; ".join(f"{k}: {_KEYS[k]}" for k in missing)
            raise AllowlistError(
                f"allowlist entry {where}: "
                + "; ".join(([f"missing {', '.join(missing)}"] if missing else [])
                            + ([f"unknown key(s) {', '.join(extra)}"] if extra else [])),
                fix="; ".join(([f"add them ({need})"] if missing else [])
                              + ([f"remove them; known: {', '.join(_KEYS)}"] if extra else [])))
        if not isinstance(raw["expires"], dt.date) or isinstance(raw["expires"], dt.datetime):
            raise AllowlistError(f"allowlist entry {where}: expires = {raw['expires']!r} is not "
                                 "a TOML date", fix="write it bare, e.g. expires = 2027-01-31")
        try:
            pattern = re.compile(str(raw["match"]))
        except re.error as exc:
            raise AllowlistError(f"allowlist entry {where}: match {raw['match']!r} is not a "
                                 f"regular expression ({exc})",
                                 fix="correct the pattern (Python's re syntax; a TOML literal "
                                     "string '...' keeps its backslashes)") from None
        out.append(AllowEntry(where=where, check=str(raw["check"]), profile=str(raw["profile"]),
                              match=pattern, reason=str(raw["reason"]), link=str(raw["link"]),
                              expires=raw["expires"]))
    return out


def apply_allowlist(findings: Sequence[Finding], entries: Sequence[AllowEntry],
                    today: dt.date | None = None) -> tuple[list[Finding], list[StaleEntry]]:
    """Mark the findings an unexpired entry matches as accepted; list expired entries (each
    fails the gate) and unexpired ones that matched nothing (stale).

    Returns:
        (findings, stale-or-expired entries), findings in their order.
    """
    today = today or dt.date.today()
    used: set[str] = set()
    out = []
    for f in findings:
        hit = next((e for e in entries if e.expires >= today and e.matches(f)), None)
        if hit is not None:
            used.add(hit.where)
            f = msgspec.structs.replace(f, accepted=True, accepted_by=hit.where,
                                        reason=hit.reason, link=hit.link)
        out.append(f)
    listed = []
    for e in entries:
        if e.expires < today:
            listed.append(StaleEntry(entry=e.where, check=e.check, profile=e.profile,
                                     expires=e.expires.isoformat(), status="expired",
                                     message=f"allowlist entry {e.where} ({e.check} on "
                                     f"{e.profile}: {e.reason}) expired on {e.expires}: renew "
                                     "it with a new date or remove it"))
        elif e.where not in used:
            listed.append(StaleEntry(entry=e.where, check=e.check, profile=e.profile,
                                     expires=e.expires.isoformat(), status="stale",
                                     message=f"allowlist entry {e.where} ({e.check} on "
                                     f"{e.profile}) matched nothing: the difference is gone; "
                                     "remove the entry"))
    return out, listed
