"""proofdiff: differential regression testing of proof-generation daemons (cuzk first).

The public surface; everything else is internal and may move::

    from proofdiff import RunOptions, run_differential
    result = run_differential(RunOptions(overrides=("prod.env.REFPROVER_FAULTS=partition-race",)))
    print(result.verdict, result.exit_code, result.divergences[0].suspects[0].path)

Names are imported on first use (PEP 562), so ``import proofdiff`` and ``proofdiff --help``
load none of the heavy libraries (scipy, grpc, docker, matplotlib).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from proofdiff.core.differential import assemble, run_differential
    from proofdiff.core.plan import Plan, new_run_id, plan_runs
    from proofdiff.core.session import Session
    from proofdiff.model.errors import ProofdiffError
    from proofdiff.model.image import ImageInfo
    from proofdiff.model.jobs import FlowRecord, JobRecord, JobSpec, ProofVerdict
    from proofdiff.model.oracle_records import Divergence, OracleRecord, ProofCounts, Suspect
    from proofdiff.model.profile import Profile
    from proofdiff.model.profile_file import ProfileError, load_profiles, select_profiles
    from proofdiff.model.result import DifferentialResult
    from proofdiff.model.run_options import RunOptions
    from proofdiff.model.runs import DaemonFacts, RunRecord
    from proofdiff.model.status import Comparison, JobStatus, Outcome, Verdict
    from proofdiff.model.timing_verdict import TimingVerdict
    from proofdiff.oracles.suite_table import DEFAULT_SUITES, SUITES
    from proofdiff.report.summary_json import load_summary
    from proofdiff.report.writer import write_report

#: public name -> the module that defines it
_WHERE = {
    "assemble": "proofdiff.core.differential", "run_differential": "proofdiff.core.differential",
    "Plan": "proofdiff.core.plan", "new_run_id": "proofdiff.core.plan",
    "plan_runs": "proofdiff.core.plan", "Session": "proofdiff.core.session",
    "ProofdiffError": "proofdiff.model.errors", "ImageInfo": "proofdiff.model.image",
    "FlowRecord": "proofdiff.model.jobs", "JobRecord": "proofdiff.model.jobs",
    "JobSpec": "proofdiff.model.jobs", "ProofVerdict": "proofdiff.model.jobs",
    "Divergence": "proofdiff.model.oracle_records",
    "OracleRecord": "proofdiff.model.oracle_records",
    "ProofCounts": "proofdiff.model.oracle_records", "Suspect": "proofdiff.model.oracle_records",
    "Profile": "proofdiff.model.profile", "ProfileError": "proofdiff.model.profile_file",
    "load_profiles": "proofdiff.model.profile_file",
    "select_profiles": "proofdiff.model.profile_file",
    "DifferentialResult": "proofdiff.model.result", "RunOptions": "proofdiff.model.run_options",
    "DaemonFacts": "proofdiff.model.runs", "RunRecord": "proofdiff.model.runs",
    "Comparison": "proofdiff.model.status", "JobStatus": "proofdiff.model.status",
    "Outcome": "proofdiff.model.status", "Verdict": "proofdiff.model.status",
    "TimingVerdict": "proofdiff.model.timing_verdict",
    "DEFAULT_SUITES": "proofdiff.oracles.suite_table", "SUITES": "proofdiff.oracles.suite_table",
    "load_summary": "proofdiff.report.summary_json", "write_report": "proofdiff.report.writer",
}

__all__ = sorted(_WHERE)


def __getattr__(name: str) -> Any:
    """Import a public name from its module on first use."""
    try:
        module = _WHERE[name]
    except KeyError:
        raise AttributeError(f"module 'proofdiff' has no attribute {name!r}") from None
    return getattr(importlib.import_module(module), name)
