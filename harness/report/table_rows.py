"""Shapes of a result that tables show (the console and index.html read the same rows)."""

from __future__ import annotations

import statistics
from typing import Any

from proofdiff.model.oracle_records import ProofCounts

#: A run validity did not judge.
NO_COUNTS = ProofCounts(total=0, completed=0, valid=0, invalid=0, failed=0, unverified=0)
from proofdiff.model.result import DifferentialResult

__all__ = ["side_by_side"]


def side_by_side(result: DifferentialResult) -> list[dict[str, Any]]:
    """One row per run: profile, workload, image, validity outcome (of ``validity/proofs``,
    '-' when not judged), jobs, completed, valid, invalid, failed, unverified, median client
    wall of COMPLETED jobs (ms), start-to-ready (ms)."""
    rows = []
    for run in result.runs:
        proofs = next((r for r in result.records if r.suite == "validity" and r.oracle == "proofs"
                       and r.profile == run.profile and r.workload == run.workload), None)
        counts = proofs.counts if proofs and proofs.counts else NO_COUNTS
        flow = run.workload_flow
        walls = [j.wall_ms for j in flow.completed()] if flow else []
        rows.append({
            "profile": run.profile, "workload": run.workload, "image": run.image.tag,
            "outcome": proofs.outcome.value if proofs else "-",
            "jobs": len(flow.jobs) if flow else 0, "completed": len(walls),
            "valid": counts.valid, "invalid": counts.invalid, "failed": counts.failed,
            "unverified": counts.unverified,
            "median_ms": statistics.median(walls) if walls else None,
            "start_to_ready_ms": run.daemon.start_to_ready_ms if run.daemon else None})
    return rows
