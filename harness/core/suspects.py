"""Which config difference is to blame for a divergence: the one ranking, for every check.

Ranking of the delta items between the baseline and the failing profile:

1. items the failing record's evidence names (``OracleRecord.names``: a config key the daemon
   ignored, the param path it read), in the record's order;
2. then by what each class of failure usually comes from (:data:`ORDER`, per ``suite/oracle``,
   else per suite): an injected fault switch first (it is what a self-test flips), then the
   settings that change how a proof is put together, how jobs meet in the daemon, the paths;
3. then the rest, in delta order.

Items the failing flow did not use are left out (:data:`UNUSED`): the isolation and timing flows
send their own request ids, so ``job_ids`` cannot explain their failures.
"""

from __future__ import annotations

from collections.abc import Sequence

from proofdiff.model.config_delta import ConfigDelta, DeltaItem
from proofdiff.model.oracle_records import OracleRecord, Suspect

__all__ = ["ORDER", "UNUSED", "rank"]

_FAULT = "env.REFPROVER_FAULTS"
_PROOF_PATH = ("config.pipeline.enabled", "config.synthesis.partition_workers")
_PARAMS = ("config.srs.param_cache", "mounts.params", "env.FIL_PROOFS_PARAMETER_CACHE")

#: Delta paths (prefixes) most suspect first, per ``suite/oracle`` or per suite.
ORDER: dict[str, tuple[str, ...]] = {
    "validity": (_FAULT, *_PROOF_PATH, "concurrency", "job_ids", "config.pipeline",
                 "config.scheduler", *_PARAMS, "image", "command", "env", "config"),
    "preflight": (_FAULT, *_PARAMS, "config", "command", "image", "bench_args"),
    "preflight/config-keys": ("config", _FAULT, "command"),
    "preflight/bench-cli": ("bench_args", "bench_tool", "driver", "image"),
    "warmup": (_FAULT, *_PARAMS[:2], "mem_limit", "config.pipeline",
               "config.synthesis.partition_workers", "command", "env"),
    "warmup/liveness": ("mem_limit", _FAULT, "cpus", "command", "env", "config"),
    "isolation": (_FAULT, "concurrency", *_PROOF_PATH, "config.scheduler", "config.pipeline"),
    "timing": (_FAULT, *_PROOF_PATH, "concurrency", "config.scheduler", "config.pipeline",
               "cpus", "mem_limit"),
}
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


def rank(delta: ConfigDelta, record: OracleRecord) -> tuple[Suspect, ...]:
    """The delta items ranked as causes of ``record``'s failure (module docstring)."""
    order = ORDER.get(record.check) or ORDER.get(record.suite, (_FAULT,))
    unused = UNUSED.get(record.suite, ())
    scored = []
    for i, item in enumerate(delta.items):
        if _position(item, unused) is not None:
            continue
        named = _position(item, record.names, either=True)
        known = _position(item, order, either=True)
        if named is not None:
            key, why = (0, named), "named in the evidence"
        elif known is not None:
            key, why = (1, known), f"often behind {record.check} failures"
        else:
            key, why = (2, i), "differs"
        scored.append((key, i, Suspect(path=item.path, left=item.left, right=item.right, why=why)))
    return tuple(s for _, _, s in sorted(scored, key=lambda t: (t[0], t[1])))
