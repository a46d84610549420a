"""Known differences accepted: a TOML allowlist, each entry with a reason and an expiry, read
the same way by ``proofdiff run``, ``gate`` and ``nightly`` (the run option ``--allowlist``).

    [[accept]]
    check = "validity/proofs"        # suite/oracle, timing/<metric> or divergence/suite/oracle
    profile = "prod"                 # or "*"
    match = "partition [0-9]+ invalid"   # a regular expression searched in the message
    reason = "cuzk#123: known race, fixed in 0.4"
    link = "https://github.com/filecoin-project/curio/issues/123"
    expires = YYYY-MM-DD             # a TOML date, unquoted

An entry matches a finding (the gate's :class:`~proofdiff.gate.gate_result.Finding`) or a
failing oracle record (a run's :class:`~proofdiff.model.oracle_records.OracleRecord`) by its
check, profile and message; a match turns it into an accepted difference, still shown in every
report with the entry's reason and link (:class:`Acceptance`), never hidden. An entry past its
expiry accepts nothing and is listed as ``expired`` (it fails a gate); an unexpired entry that
matches nothing is listed as ``stale``.

Only a FAIL is accepted (:func:`acceptable`): an allowlist names a known *difference*, a
property seen violated. An ERROR means nothing was judged (a verifier that crashed, a daemon
that never started, no proof verified), and its message is whatever the broken part wrote, so
an entry written for ``partition 1 invalid`` would otherwise accept a verifier crash that
mentions a partition. An entry whose ``match`` is empty, or matches the empty string (``.*``,
``x?``, ``^$``), is refused at load: ``re.search`` finds such a pattern in every message (or,
anchored, only in an empty one, which says nothing), so it would accept any failure of its
check rather than the known one.
"""

from __future__ import annotations

import datetime as dt
import re
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import msgspec

from proofdiff.model.errors import ProofdiffError

__all__ = ["Acceptance", "AllowEntry", "AllowlistError", "Matchable", "StaleEntry",
           "acceptable", "load_allowlist", "match_allowlist"]

_KEYS = {"check": "suite/oracle (e.g. 'validity/proofs', 'timing/latency')",
         "profile": "a profile name or '*'",
         "match": "a regular expression searched in the finding's message",
         "reason": "why the difference is accepted",
         "link": "where it is tracked (an issue URL)",
         "expires": "a TOML date (2027-01-31) after which the entry accepts nothing (and fails a "
                    "gate)"}


class AllowlistError(ProofdiffError):
    """The allowlist does not load: names the file, the entry and the fix."""


class Matchable(Protocol):
    """What an entry is matched against (a gate finding, an oracle record): its ``check``
    (``suite/oracle`` or ``timing/<metric>``), ``profile``, ``message`` and ``outcome``
    (``fail``, ``error``...: :class:`~proofdiff.model.status.Outcome`'s values; only ``fail``
    can be accepted)."""

    @property
    def check(self) -> str: ...

    @property
    def outcome(self) -> str: ...

    @property
    def profile(self) -> str: ...

    @property
    def message(self) -> str: ...


class StaleEntry(msgspec.Struct, frozen=True, kw_only=True):
    """An allowlist entry that matched nothing (``stale``) or is past its expiry
    (``expired``, which fails the gate): where it is, what it says, why it is listed."""

    entry: str
    check: str
    profile: str
    expires: str
    status: str
    message: str


class Acceptance(msgspec.Struct, frozen=True, kw_only=True):
    """A failing oracle record of a run that an allowlist entry accepts: the record's key
    (check ``suite/oracle``, profile, workload, image slot) and the entry (``FILE#N``), its
    reason, link and expiry (ISO date). The record itself stays as it is, FAIL or ERROR."""

    check: str
    profile: str
    workload: str
    image: str = ""
    entry: str
    reason: str
    link: str
    expires: str

    @property
    def key(self) -> tuple[str, str, str, str]:
        """``(check, profile, workload, image)``: what identifies the accepted record."""
        return (self.check, self.profile, self.workload, self.image)


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

    def matches(self, f: Matchable) -> bool:
        """The finding or record is a FAIL (:func:`acceptable`) of this entry's check and
        profile, and its message matches."""
        return (acceptable(f.outcome) and f.check == self.check
                and self.profile in ("*", f.profile) and self.match.search(f.message) is not None)


def acceptable(outcome: str) -> bool:
    """Whether an allowlist may accept a record or finding of ``outcome``: a FAIL only, never
    an ERROR (module docstring)."""
    return outcome == "fail"


def load_allowlist(path: str | Path) -> list[AllowEntry]:
    """Entries of an allowlist file, in file order.

    Raises:
        AllowlistError: the file is missing or not TOML, an entry lacks a key or has an unknown
            one, a text key is not a string, ``match`` is not a regular expression or matches
            the empty string (an empty ``match`` included: module docstring), or ``expires``
            is not a date.
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
                                 "harness/model/allowlist.py has one)")
    out = []
    for i, raw in enumerate(doc.get("accept", []), 1):
        where = f"{p}#{i}"
        if not isinstance(raw, dict):
            raise AllowlistError(f"allowlist entry {where}: {raw!r} is not a table",
                                 fix="write each entry as an [[accept]] table of "
                                     + ", ".join(_KEYS))
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
        texts = [k for k in _KEYS if k != "expires" and not isinstance(raw[k], str)]
        if texts:
            raise AllowlistError(f"allowlist entry {where}: "
                                 + ", ".join(f"{k} = {raw[k]!r}" for k in texts)
                                 + " is not a string",
                                 fix="quote it (" + "; ".join(f"{k}: {_KEYS[k]}" for k in texts)
                                     + ")")
        if not isinstance(raw["expires"], dt.date) or isinstance(raw["expires"], dt.datetime):
            raise AllowlistError(f"allowlist entry {where}: expires = {raw['expires']!r} is not "
                                 "a TOML date", fix="write it bare, e.g. expires = 2027-01-31")
        try:
            pattern = re.compile(raw["match"])
        except re.error as exc:
            raise AllowlistError(f"allowlist entry {where}: match {raw['match']!r} is not a "
                                 f"regular expression ({exc})",
                                 fix="correct the pattern (Python's re syntax; a TOML literal "
                                     "string '...' keeps its backslashes)") from None
        if pattern.search("") is not None:
            raise AllowlistError(
                f"allowlist entry {where}: match {raw['match']!r} "
                + ("is empty" if not raw["match"] else "matches the empty string")
                + f", so it would accept every failure of {raw['check']} on {raw['profile']}, "
                "not the known one",
                fix="write a pattern that only the known failure's message contains, e.g. "
                    "'partition [0-9]+ invalid' (copy it from the report's message)")
        out.append(AllowEntry(where=where, check=raw["check"], profile=raw["profile"],
                              match=pattern, reason=raw["reason"], link=raw["link"],
                              expires=raw["expires"]))
    return out


def match_allowlist(items: Sequence[Matchable], entries: Sequence[AllowEntry],
                    today: dt.date | None = None
                    ) -> tuple[list[AllowEntry | None], list[StaleEntry]]:
    """The first unexpired entry matching each item (``None``: none does; always for an item
    that is not a FAIL, :func:`acceptable`), and the entries to list: expired ones (they accept nothing) and unexpired ones that matched nothing (stale).

    Args:
        today: the date the expiries are read against (default: today's).

    Returns:
        (one entry or ``None`` per item, in the items' order; listed entries, in file order).
    """
    today = today or dt.date.today()
    used: set[str] = set()
    hits: list[AllowEntry | None] = []
    for f in items:
        hit = next((e for e in entries if e.expires >= today and e.matches(f)), None)
        if hit is not None:
            used.add(hit.where)
        hits.append(hit)
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
    return hits, listed
