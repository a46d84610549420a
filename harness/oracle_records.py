"""Oracle records: one small JSON file per (suite, oracle, profile, workload) outcome.

Suites other than validity (preflight, warmup, isolation, timing) write an
:class:`OracleRecord` under ``<run dir>/oracles/`` before they assert, from whichever
pytest-xdist worker ran them; the report reads them all back into ``summary.json``
(``oracles``, ``oracle_divergences``) and the catch matrix is built from them.

Outcomes: ``pass``, ``fail``, ``inconclusive`` (a timing verdict that neither passes nor fails),
``skipped`` (with the reason, e.g. the profile's preflight failed).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["OUTCOMES", "SUSPECT_ORDER", "OracleRecord", "oracle_divergences", "read_records",
           "write_record"]

OUTCOMES = ("pass", "fail", "inconclusive", "skipped")
SUBDIR = "oracles"
_FAULT = "env.REFPROVER_FAULTS"
#: Config delta paths (prefixes) in suspect order per ``suite/oracle`` or, failing that, per
#: suite, most suspect first (the validity oracle's order lives in harness.config_delta): what
#: each class of failure usually comes from.
SUSPECT_ORDER: dict[str, tuple[str, ...]] = {
    "preflight/config-keys": ("config", _FAULT, "command"),
    "preflight/bench-cli": ("bench_args", "bench_tool", "driver", "image"),
    "warmup/liveness": ("mem_limit", _FAULT, "cpus", "command", "env", "config"),
    "preflight": (_FAULT, "config.srs.param_cache", "mounts.params",
                  "env.FIL_PROOFS_PARAMETER_CACHE", "config", "command", "image", "bench_args"),
    "warmup": (_FAULT, "config.srs.param_cache", "mounts.params", "mem_limit", "config.pipeline",
               "config.synthesis.partition_workers", "command", "env"),
    "isolation": (_FAULT, "job_ids", "concurrency", "config.pipeline.enabled",
                  "config.synthesis.partition_workers", "config.scheduler", "config.pipeline"),
    "timing": (_FAULT, "config.pipeline.enabled", "config.synthesis.partition_workers",
               "concurrency", "config.scheduler", "config.pipeline", "cpus", "mem_limit"),
}


@dataclass(frozen=True)
class OracleRecord:
    """One oracle outcome.

    Attributes:
        suite: the suite file's short name (``preflight``, ``warmup``, ``isolation``, ``timing``).
        oracle: the check within it (``params``, ``cross-talk``, ``hang``, ``scaling``, ...).
        profile: the profile judged ('' when the oracle compares profiles).
        workload: the workload name. outcome: one of :data:`OUTCOMES`.
        message: the explanation (what was seen, why it matters, the fix).
        data: machine-readable evidence (job ids, verdict numbers ...).
    """

    suite: str
    oracle: str
    profile: str
    workload: str
    outcome: str
    message: str = ""
    data: dict[str, Any] = field(default_factory=dict)

    @property
    def key(self) -> str:
        """``suite--oracle--profile--workload`` (the file stem)."""
        return "--".join("".join(c if c.isalnum() or c in "-_." else "_" for c in p)
                         for p in (self.suite, self.oracle, self.profile or "all", self.workload))

    def to_json(self) -> dict[str, Any]:
        """JSON-ready dict."""
        return {"suite": self.suite, "oracle": self.oracle, "profile": self.profile,
                "workload": self.workload, "outcome": self.outcome, "message": self.message,
                "data": self.data}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> OracleRecord:
        """Inverse of :meth:`to_json`."""
        return cls(d["suite"], d["oracle"], d.get("profile", ""), d.get("workload", ""),
                   d["outcome"], d.get("message", ""), dict(d.get("data") or {}))


def write_record(run_dir: Path, record: OracleRecord) -> Path:
    """Write ``record`` to ``<run_dir>/oracles/<key>.json`` (atomically; a later write of the
    same key replaces it).

    Raises:
        ValueError: an outcome not in :data:`OUTCOMES`.
    """
    if record.outcome not in OUTCOMES:
        raise ValueError(f"outcome {record.outcome!r} not one of {OUTCOMES}")
    d = Path(run_dir) / SUBDIR
    d.mkdir(parents=True, exist_ok=True)
    path = d / f"{record.key}.json"
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(record.to_json(), default=str), encoding="utf-8")
    tmp.replace(path)
    return path


def read_records(run_dir: Path) -> list[OracleRecord]:
    """Every record of a run dir, sorted by key (``[]`` when there are none)."""
    d = Path(run_dir) / SUBDIR
    if not d.is_dir():
        return []
    return [OracleRecord.from_json(json.loads(p.read_text(encoding="utf-8")))
            for p in sorted(d.glob("*.json"))]


def _suspects(delta: Any, suite: str, oracle: str, n: int = 5) -> list[dict[str, Any]]:
    order = SUSPECT_ORDER.get(f"{suite}/{oracle}") or SUSPECT_ORDER.get(suite, (_FAULT,))

    def rank(item: Any) -> int:
        for i, prefix in enumerate(order):
            if item.path == prefix or item.path.startswith(prefix + "."):
                return i
        return len(order)

    return [i.to_json() for i in sorted(delta.items, key=rank)[:n]]


def oracle_divergences(records: Sequence[OracleRecord], baseline: str,
                       deltas: Sequence[Any] = ()) -> list[dict[str, Any]]:
    """Oracles that fail on a profile but not on the ``baseline``: ``{suite, oracle, workload,
    left, right, left_outcome, right_outcome, headline, message, suspects}``. A record of a
    comparison oracle (timing scaling) exists for the other profile only; its failure is a
    divergence too. Both sides failing is not a divergence (it is a failure of both).
    ``deltas`` (:class:`~harness.config_delta.ConfigDelta` baseline -> other) rank the config
    differences most likely to blame, per suite (:data:`SUSPECT_ORDER`)."""
    by = {(r.suite, r.oracle, r.workload, r.profile): r for r in records}
    delta_of = {d.right: d for d in deltas}
    out = []
    for r in records:
        if not r.profile or r.profile == baseline or r.outcome != "fail":
            continue
        base = by.get((r.suite, r.oracle, r.workload, baseline))
        if base is not None and base.outcome == "fail":
            continue
        left = base.outcome if base is not None else "n/a"
        d = delta_of.get(r.profile)
        out.append({"suite": r.suite, "oracle": r.oracle, "workload": r.workload,
                    "left": baseline, "right": r.profile, "left_outcome": left,
                    "right_outcome": r.outcome,
                    "headline": f"{r.suite}/{r.oracle} diverged on {r.workload}: "
                                f"{baseline}={left}, {r.profile}=fail",
                    "message": r.message,
                    "suspects": _suspects(d, r.suite, r.oracle) if d is not None else []})
    return out
