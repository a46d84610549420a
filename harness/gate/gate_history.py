"""``proofdiff gate --history``: a gate stored as one run of the history, whatever its end.

The stored run (command ``gate``, the gate's run id) is the candidate's own differential (its
oracle records and its runs, with every sample) plus the timing arm's runs: one cell per side
(profiles ``<profile>-baseline`` and ``<profile>-candidate``, each with its image and digest),
whose samples are the warm-up run's and every timing batch's job latencies and per-proof cost
(flow ``gate``, labelled by round). The run's verdict is the gate's decision (``pass`` ...
``interrupted``), its line and exit code the gate's; a gate that could not run (no
differential) or was interrupted is stored as such, with its errors and what it did.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import msgspec

from proofdiff.gate.gate_result import Decision, GateResult
from proofdiff.history.store import StoreOutcome, record_run
from proofdiff.model.result import DifferentialResult
from proofdiff.model.runs import RunRecord
from proofdiff.model.status import Verdict

__all__ = ["gate_run_record", "store_gate"]


def gate_run_record(result: GateResult, diff: DifferentialResult | None,
                    timing_runs: Sequence[RunRecord]) -> DifferentialResult:
    """The run the history stores for a gate (module docstring).

    Args:
        result: the gate's decision. diff: the candidate's differential (``None`` when the
            gate ended before it). timing_runs: the timing arm's runs, each with every flow
            sent to its daemon.
    """
    verdict = {Decision.ERROR: Verdict.ERROR, Decision.INTERRUPTED: Verdict.INTERRUPTED}.get(
        result.decision, diff.verdict if diff is not None else Verdict.ERROR)
    base = diff or DifferentialResult(run_id=result.run_id,
                                      created_unix_s=result.created_unix_s, verdict=verdict,
                                      verdict_line="", exit_code=verdict.exit_code,
                                      profiles=dict(result.profiles),
                                      workloads=result.workloads)
    images = {i.tag: i for i in (result.baseline, result.candidate, *base.images) if i.tag}
    return msgspec.structs.replace(
        base, run_id=result.run_id, created_unix_s=result.created_unix_s, verdict=verdict,
        verdict_line=result.decision_line, exit_code=result.exit_code,
        images=tuple(images.values()), runs=(*base.runs, *timing_runs),
        errors=tuple(dict.fromkeys((*result.errors, *base.errors))), wall_s=result.wall_s,
        machine=dict(result.machine), verifier=result.verifier or base.verifier)


def store_gate(history: str, report_root: Path, result: GateResult,
               diff: DifferentialResult | None,
               timing_runs: Sequence[RunRecord]) -> StoreOutcome:
    """Append the gate to the history that ``--history HISTORY`` names; never raises (a
    history that fails comes back not ok, with its error: the caller's exit status shows it).
    """
    return record_run(history, report_root, gate_run_record(result, diff, timing_runs),
                      command="gate", commit=result.commit, verdict=result.decision.value)
