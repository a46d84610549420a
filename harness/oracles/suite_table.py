"""The suites, stated once: their names, order, oracles and whether ``proofdiff run`` runs them
by default (``--suite all`` adds the rest). The pytest suites (``suites/test_<name>.py``), the
CLI and every workflow read this table."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from proofdiff.model.profile import Profile

from proofdiff.oracles import behaviour, isolation, preflight, timing, validity, warmup
from proofdiff.oracles.evidence import SuiteFn

__all__ = ["DEFAULT_SUITES", "SUITES", "Suite", "applies", "select_suites"]


@dataclass(frozen=True)
class Suite:
    """One suite: ``name``, its ``oracles`` (record names), ``evaluate`` (every profile on one
    workload), ``default`` (run without ``--suite``), and what it is for (``doc``)."""

    name: str
    oracles: tuple[str, ...]
    evaluate: SuiteFn
    default: bool
    doc: str


#: In run order: preflight before any proof, the cheap oracles before the expensive ones.
SUITES: dict[str, Suite] = {
    name: Suite(name, m.ORACLES, m.evaluate, m.DEFAULT, m.DOC) for name, m in (
        ("preflight", preflight), ("validity", validity), ("warmup", warmup),
        ("isolation", isolation), ("behaviour", behaviour), ("timing", timing))}
DEFAULT_SUITES = tuple(n for n, s in SUITES.items() if s.default)


def select_suites(names: Iterable[str]) -> tuple[str, ...]:
    """Suite names in run order: none = the defaults, ``all`` = every suite.

    Raises:
        ValueError: an unknown name (lists the known ones).
    """
    wanted = set(names)
    if not wanted:
        return DEFAULT_SUITES
    if "all" in wanted:
        return tuple(SUITES)
    unknown = sorted(wanted - set(SUITES))
    if unknown:
        raise ValueError(f"unknown suite {unknown[0]!r}; known: {', '.join(SUITES)}, or 'all'")
    return tuple(n for n in SUITES if n in wanted)


def applies(suite: str, oracle: str, *, profile: Profile, baseline: bool) -> bool:
    """Whether ``suite/oracle`` has a record on ``profile`` (``baseline``: it is the first
    one): the timing A/A arm exists on the baseline only, the scaling arms on the other
    profiles only, the bench command-line check on bench-cli profiles only, the resources check
    on profiles with ``mem_limit`` or ``cpus``."""
    driver = profile.driver
    if suite == "behaviour" and oracle == "resources":
        return profile.mem_limit is not None or profile.cpus is not None
    if suite == "timing" and oracle == "aa":
        return baseline
    if suite == "timing" and oracle in ("throughput", "concurrency"):
        return not baseline
    if suite == "preflight" and oracle == "bench-cli":
        return driver == "bench-cli"
    return True
