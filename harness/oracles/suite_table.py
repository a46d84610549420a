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
SUITES: dict[str, Suite] = {s.name: s for s in (
    Suite("preflight", preflight.ORACLES, preflight.evaluate, True,
          "image + digest, the workload file, params readable where the daemon reads, config "
          "keys the daemon knows, a bench command line the tool accepts"),
    Suite("validity", validity.ORACLES, validity.evaluate, True,
          "every COMPLETED proof verifies per partition against its own inputs; every job "
          "completes"),
    Suite("warmup", warmup.ORACLES, warmup.evaluate, True,
          "the first proof completes, verifies and took plausibly long; the daemon survives"),
    Suite("isolation", isolation.ORACLES, isolation.evaluate, True,
          "colliding ids, a reused id, K inputs together: own proofs only, nothing shared, "
          "lost, stuck or returned twice"),
    Suite("behaviour", behaviour.ORACLES, behaviour.evaluate, True,
          "what the daemon really does: priority first, the proving mode and workers asked "
          "for, the in-flight limit kept, memory and CPU under the container's limits"),
    Suite("timing", timing.ORACLES, timing.evaluate, False,
          "A/A, throughput and jobs really in progress at once, interleaved, three-valued"),
)}
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
