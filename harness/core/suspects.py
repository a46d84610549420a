"""Which config difference is to blame for a divergence: the one ranking, for every check.

Ranking of the delta items between the baseline and the failing profile, by evidence first:

1. items the failing record's evidence names (``OracleRecord.names``: a config key the daemon
   ignored, the param path it read, request ids shared by jobs in flight together), in the
   record's order;
2. then items whose subsystem the failing check exercises, in the order of the check's
   subsystems (:mod:`proofdiff.core.config_subsystems`: what each cuzk key controls, from
   cuzk's config docs);
3. then the rest, in delta order: settings that no source documents (an environment variable
   the daemon does not read) and subsystems the check does not exercise.

No rank exists because a self-test flips it: a real bug has no fault switch, so a test
double's switch (refprover's ``REFPROVER_FAULTS``) is an undocumented env var like any other.
Items the failing flow did not use are left out (:data:`UNUSED`): the isolation and timing
flows send their own request ids, so ``job_ids`` cannot explain their failures.
"""

from __future__ import annotations

from collections.abc import Sequence

from proofdiff.core.config_subsystems import SUBSYSTEMS, subsystems_for
from proofdiff.model.config_delta import ConfigDelta, DeltaItem
from proofdiff.model.oracle_records import OracleRecord, Suspect

__all__ = ["UNUSED", "rank"]

#: Delta paths (prefixes) a suite's flows do not use.
UNUSED: dict[str, tuple[str, ...]] = {
    "isolation": ("job_ids", "miner_id", "jobs"),
    "timing": ("job_ids", "miner_id", "jobs"),
    "preflight": ("concurrency", "job_ids", "miner_id", "jobs", "timeout_s"),
}


def _position(item: DeltaItem, prefixes: Sequence[str], *, either: bool = False) -> int | None:
    """Index of the first prefix the item lies under (``either``: or that lies under the item,
    as a named key ``config.pipline.enabled`` lies under a new table ``config.pipline``, or
    ``config.synthesis.partition_workers`` under a table only one side has)."""
    return next((i for i, p in enumerate(prefixes)
                 if item.under(p) or (either and p.startswith(item.path + "."))), None)


def _subsystem(item: DeltaItem, exercised: Sequence[str]) -> tuple[int, int, str] | None:
    """``(rank of the subsystem among the check's, rank of the prefix in it, its name)`` of
    the first exercised subsystem the item lies in; ``None`` when none does."""
    for i, name in enumerate(exercised):
        at = _position(item, SUBSYSTEMS[name][1], either=True)
        if at is not None:
            return i, at, name
    return None


def rank(delta: ConfigDelta, record: OracleRecord) -> tuple[Suspect, ...]:
    """The delta items ranked as causes of ``record``'s failure (module docstring)."""
    exercised = subsystems_for(record.check, record.suite)
    unused = UNUSED.get(record.suite, ())
    scored = []
    for i, item in enumerate(delta.items):
        if _position(item, unused) is not None:
            continue
        named = _position(item, record.names, either=True)
        sub = _subsystem(item, exercised)
        if named is not None:
            key, why = (0, named, 0), "named in the evidence"
        elif sub is not None:
            key, why = (1, sub[0], sub[1]), (f"{sub[2]}: {SUBSYSTEMS[sub[2]][0]}; "
                                             f"{record.check} exercises it")
        else:
            key, why = (2, i, 0), f"differs (no documented role in {record.check})"
        scored.append((key, i, Suspect(path=item.path, left=item.left, right=item.right, why=why)))
    return tuple(s for _, _, s in sorted(scored, key=lambda t: (t[0], t[1])))
