"""The suites, stated once: their names, order, oracles, whether ``proofdiff run`` runs them
by default (``--suite all`` adds the rest) and what each checks. The pytest suites
(``suites/test_<name>.py``), the CLI and every workflow read this table.

The table is data: a suite's module (``proofdiff.oracles.<name>``, which pulls in scipy, the
docker SDK and grpc) is imported only when the suite is evaluated, so ``proofdiff --help`` and
a bad profile file answer without loading them.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from proofdiff.model.profile import Profile

if TYPE_CHECKING:
    from proofdiff.model.oracle_records import OracleRecord
    from proofdiff.oracles.evidence import Evidence, SuiteFn

__all__ = ["DEFAULT_SUITES", "SUITES", "Suite", "applies", "select_suites"]


@dataclass(frozen=True)
class Suite:
    """One suite: ``name`` (its module is ``proofdiff.oracles.<name>``), its ``oracles`` (record
    names), ``default`` (run without ``--suite``) and what it checks, in one line (``doc``)."""

    name: str
    oracles: tuple[str, ...]
    default: bool
    doc: str

    def evaluate(self, evidence: Evidence, workload: str) -> list[OracleRecord]:
        """Every profile judged on ``workload``: the module's ``evaluate``, imported here on
        first use. Raises what that function raises."""
        fn: SuiteFn = importlib.import_module(f"proofdiff.oracles.{self.name}").evaluate
        return fn(evidence, workload)


#: In run order: preflight before any proof, the cheap oracles before the expensive ones.
SUITES: dict[str, Suite] = {s.name: s for s in (
    Suite("preflight", ("image", "libraries", "workload", "params", "params-integrity",
                        "config-keys", "bench-cli"), True,
          "image + digest, the shared libraries of the programs it starts, the workload file, params readable where the daemon reads, config "
          "keys the daemon knows, a bench command line the tool accepts"),
    Suite("validity", ("proofs", "jobs"), True,
          "every COMPLETED proof verifies per partition against its own inputs; every job "
          "completes"),
    Suite("warmup", ("first-proof", "first-run-artifacts", "liveness"), True,
          "the first proof completes, verifies and took plausibly long; what a first run "
          "leaves (cuzk's PCE) is there; the daemon survives"),
    Suite("isolation", ("hang", "lost-or-twice", "colliding-ids", "reused-id",
                        "distinct-inputs"), True,
          "colliding ids, a reused id, K inputs together: own proofs only, nothing shared, "
          "lost, stuck or returned twice"),
    Suite("behaviour", ("priority", "mode", "in-flight", "lone-request", "parallel", "timings",
                        "control-plane", "growth", "resources"), True,
          "what the daemon really does: priority first, the proving mode and workers asked "
          "for, the in-flight limit kept under a flow that reaches it, a lone request not held "
          "back and its partitions side by side, timings that add up, status answered under "
          "load, idle memory and handles that do not grow with the jobs, memory and CPU under "
          "the container's limits"),
    Suite("timing", ("latency-throughput", "aa", "throughput", "concurrency", "lone-request"),
          False,
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
    on profiles with ``mem_limit`` or ``cpus``, the parallel check on profiles whose config
    promises work items side by side (the pipeline with more than one worker and a limit
    above one: :func:`proofdiff.oracles.lone_parallel.promised`)."""
    driver = profile.driver
    if suite == "behaviour" and oracle == "resources":
        return profile.mem_limit is not None or profile.cpus is not None
    if suite == "behaviour" and oracle == "parallel":
        from proofdiff.oracles.lone_parallel import promised

        return promised(profile) > 1
    if suite == "timing" and oracle == "aa":
        return baseline
    if suite == "timing" and oracle in ("throughput", "concurrency"):
        return not baseline
    if suite == "preflight" and oracle == "bench-cli":
        return driver == "bench-cli"
    return True
