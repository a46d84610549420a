"""What a bisection established (its summary.json), and its exit codes."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec

from proofdiff.bisect.probe import Probe
from proofdiff.model.image import ImageInfo
from proofdiff.model.oracle_records import Suspect

__all__ = ["EXIT", "BisectResult", "ChangeItem", "proven_suspects"]

#: Exit codes: found, nothing to bisect, unresolved (or budget), could not run, interrupted.
EXIT = {"found": 0, "good-fails": 1, "bad-passes": 1, "unresolved": 2, "budget": 2,
        "error": 3, "interrupted": 130}


class ChangeItem(msgspec.Struct, frozen=True, kw_only=True):
    """One item of the minimal change: its delta ``path``, the good and bad values, and the
    ``unit`` it moved in (the coupled items' label)."""

    path: str
    good: Any
    bad: Any
    unit: str


def proven_suspects(change: Sequence[ChangeItem], why: str) -> tuple[Suspect, ...]:
    """A bisection's proven 1-minimal ``change`` as a divergence's suspects, in place of its
    ranking; ``why`` starts with ``bisected`` (the report's "Proven cause" reads it)."""
    return tuple(Suspect(path=c.path, left=c.good, right=c.bad, why=why) for c in change)


class BisectResult(msgspec.Struct, frozen=True, kw_only=True):
    """What a bisection established.

    Attributes:
        run_id, created_unix_s: as a differential. status: ``found`` | ``good-fails`` |
            ``bad-passes`` | ``unresolved`` | ``budget`` | ``error`` | ``interrupted``;
            exit_code: :data:`EXIT`'s. line: the one-line conclusion.
        good, bad: the profile names; workload; oracle ('' = any failure); image: the image
            probed, with its id.
        change: the minimal failure-inducing change from good (every item, good and bad
            value). difference: the unit labels dd isolated between the final passing and
            failing configurations (a subset of ``change``). broken_probes: the indices of the
            probes that broke and left the result unresolved (the difference's one-unit
            neighbours, or a confirmation probe). confirmed_probes: the confirmation's probes
            (the change, and the change without each unit, afresh; found only when the first
            fails and the others pass: 1-minimal).
        units: every unit label, most suspect first. probes: the probe table; n_probes its
            length. evidence: the bad profile's failing record (check and first line).
        steps: dd's decisions. reason: why it is not ``found``. profiles: good and bad as
            resolved. wall_s: seconds. machine: the host. started_unix_s: when it started
            (created_unix_s: when it ended).
    """

    run_id: str
    created_unix_s: float
    status: str
    exit_code: int
    line: str
    good: str
    bad: str
    workload: str = ""
    oracle: str = ""
    image: ImageInfo = msgspec.field(default_factory=lambda: ImageInfo(tag=""))
    change: tuple[ChangeItem, ...] = ()
    difference: tuple[str, ...] = ()
    broken_probes: tuple[int, ...] = ()
    confirmed_probes: int = 0
    units: tuple[str, ...] = ()
    probes: tuple[Probe, ...] = ()
    n_probes: int = 0
    evidence: dict[str, str] = msgspec.field(default_factory=dict)
    steps: tuple[str, ...] = ()
    reason: str = ""
    profiles: dict[str, dict[str, Any]] = msgspec.field(default_factory=dict)
    wall_s: float = 0.0
    machine: dict[str, Any] = msgspec.field(default_factory=dict)
    started_unix_s: float = 0.0


