"""proofdiff: differential regression testing of proof-generation daemons (cuzk first).

The public surface; everything else is internal and may move::

    from harness import run_differential
    result = run_differential("refprover", overrides=["prod.env.REFPROVER_FAULTS=partition-race"])
    print(result.verdict, result.exit_code, result.divergences[0].suspects[0].path)
"""

from harness.core.differential import assemble, run_differential
from harness.core.plan import Plan, new_run_id, plan_runs
from harness.core.session import Session
from harness.model.jobs import FlowRecord, JobRecord, JobSpec, ProofVerdict
from harness.model.oracles import Divergence, OracleRecord, Suspect
from harness.model.profile import Profile
from harness.model.profile_file import ProfileError, load_profiles, select_profiles
from harness.model.result import DifferentialResult, ImageInfo
from harness.model.runs import DaemonFacts, RunRecord
from harness.model.status import JobStatus, Outcome, Verdict
from harness.oracles.registry import DEFAULT_SUITES, SUITES
from harness.report.summary import load_summary
from harness.report.writer import write_report

__all__ = [
    "DEFAULT_SUITES", "SUITES", "DaemonFacts", "DifferentialResult", "Divergence", "FlowRecord",
    "ImageInfo", "JobRecord", "JobSpec", "JobStatus", "OracleRecord", "Outcome", "Plan",
    "Profile", "ProfileError", "ProofVerdict", "RunRecord", "Session", "Suspect", "Verdict",
    "assemble", "load_profiles", "load_summary", "new_run_id", "plan_runs", "run_differential",
    "select_profiles", "write_report",
]
