"""Gate an image push: candidate vs baseline, the candidate's own differential, a paired timing
verdict per profile and metric, an allowlist of known differences, evidence tied to both digests.

    from proofdiff.gate import run_gate
    result = run_gate("proofdiff/refprover:candidate", "proofdiff/refprover:baseline")
    result.decision, result.exit_code, result.findings
"""

from proofdiff.gate.gate_result import Decision, GateResult
from proofdiff.gate.gating import run_gate

__all__ = ["Decision", "GateResult", "run_gate"]
