"""Gate an image push: candidate vs baseline, the candidate's own differential, a paired timing
verdict per profile and metric, an allowlist of known differences, evidence tied to both digests.

    from harness.gate import run_gate
    result = run_gate("proofdiff/refprover:candidate", "proofdiff/refprover:baseline")
    result.decision, result.exit_code, result.findings
"""

from .model import Decision, GateResult
from .run import run_gate

__all__ = ["Decision", "GateResult", "run_gate"]
