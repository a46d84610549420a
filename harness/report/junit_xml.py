"""junit.xml from the oracle records (junitparser): one test case per record, one suite per
proofdiff suite, so CI systems show the same outcomes as the report."""

from __future__ import annotations

from pathlib import Path

from junitparser import Error, Failure, JUnitXml, Skipped, TestCase, TestSuite

from proofdiff.model.result import DifferentialResult
from proofdiff.model.status import Outcome

__all__ = ["write_junit"]


def write_junit(result: DifferentialResult, run_dir: Path) -> Path:
    """Write ``run_dir/junit.xml``: FAIL is a failure, ERROR an error, SKIPPED skipped,
    INCONCLUSIVE a pass whose system-out says so; run-level errors are one errored case."""
    xml = JUnitXml(name=f"proofdiff {result.run_id}")
    suites: dict[str, TestSuite] = {}
    for r in result.records:
        suite = suites.setdefault(r.suite, TestSuite(f"proofdiff.{r.suite}"))
        case = TestCase(f"{r.oracle}[{r.profile}-{r.workload}" + (f"-{r.image}]" if r.image
                                                                 else "]"),
                        classname=f"proofdiff.{r.suite}")
        first = r.message.splitlines()[0] if r.message else r.outcome.value
        if r.outcome is Outcome.FAIL:
            case.result = [Failure(first)]
        elif r.outcome is Outcome.ERROR:
            case.result = [Error(first)]
        elif r.outcome is Outcome.SKIPPED:
            case.result = [Skipped(first)]
        case.system_out = r.message
        suite.add_testcase(case)
    if result.errors:
        run = TestSuite("proofdiff.run")
        case = TestCase("run", classname="proofdiff.run")
        case.result = [Error(result.errors[0].splitlines()[0])]
        case.system_out = "\n\n".join(result.errors)
        run.add_testcase(case)
        suites["run"] = run
    for s in suites.values():
        s.update_statistics()  # type: ignore[no-untyped-call]
        xml.add_testsuite(s)
    path = run_dir / "junit.xml"
    xml.write(str(path), pretty=True)
    return path
