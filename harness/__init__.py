"""proofdiff: differential regression testing of proof-generation daemons (cuzk first).

The public surface; everything else is internal and may move::

    from proofdiff import run_differential
    result = run_differential("refprover", overrides=["prod.env.REFPROVER_FAULTS=partition-race"])
    print(result.verdict, result.exit_code, result.divergences[0].suspects[0].path)
"""

from proofdiff.core.differential import assemble, run_differential
from proofdiff.core.plan import Plan, new_run_id, plan_runs
from proofdiff.core.session import Session
from proofdiff.model.jobs import FlowRecord, JobRecord, JobSpec, ProofVerdict
from proofdiff.model.oracle_records import Divergence, OracleRecord, Suspect
from proofdiff.model.profile import Profile
from proofdiff.model.profile_file import ProfileError, load_profiles, select_profiles
from proofdiff.model.result import DifferentialResult, ImageInfo
from proofdiff.model.runs import DaemonFacts, RunRecord
from proofdiff.model.status import JobStatus, Outcome, Verdict
from proofdiff.oracles.suite_table import DEFAULT_SUITES, SUITES
from proofdiff.report.summary_json import load_summary
from proofdiff.report.writer import write_report

__all__ = [
    "DEFAULT_SUITES", "SUITES", "DaemonFacts", "DifferentialResult", "Divergence", "FlowRecord",
    "ImageInfo", "JobRecord", "JobSpec", "JobStatus", "OracleRecord", "Outcome", "Plan",
    "Profile", "ProfileError", "ProofVerdict", "RunRecord", "Session", "Suspect", "Verdict",
    "assemble", "load_profiles", "load_summary", "new_run_id", "plan_runs", "run_differential",
    "select_profiles", "write_report",
]
