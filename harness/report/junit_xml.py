"""junit.xml of a report view (junitparser): one test case per check, one test suite per
group, so CI systems show the same outcomes as the report."""

from __future__ import annotations

from junitparser import Error, Failure, JUnitXml, Skipped, TestCase, TestSuite

from proofdiff.report.view import CheckStatus, ReportView

__all__ = ["junit_of"]


def junit_of(view: ReportView) -> JUnitXml:
    """The document: FAILED is a failure, BROKEN an error, SKIPPED skipped, UNKNOWN (a timing
    verdict left INCONCLUSIVE) skipped as undecided: JUnit has no such outcome, and a pass it is
    not; every case's system-out holds its whole text."""
    xml = JUnitXml(name=f"proofdiff {view.kind} {view.run_id}")
    suites: dict[str, TestSuite] = {}
    for c in view.checks:
        suite = suites.setdefault(c.suite, TestSuite(f"proofdiff.{c.suite}"))
        where = "-".join(x for x in (c.profile, c.workload) if x)
        case = TestCase(c.name + (f"[{where}]" if where else ""), classname=f"proofdiff.{c.suite}")
        first = c.message or c.status.value
        if c.status is CheckStatus.FAILED:
            case.result = [Failure(first)]
        elif c.status is CheckStatus.BROKEN:
            case.result = [Error(first)]
        elif c.status is CheckStatus.SKIPPED:
            case.result = [Skipped(first)]
        elif c.status is CheckStatus.UNKNOWN:
            case.result = [Skipped(f"undecided, not a pass: {first}")]
        if c.stop_ms > c.start_ms:
            case.time = (c.stop_ms - c.start_ms) / 1000.0
        case.system_out = c.text or c.message
        suite.add_testcase(case)
    for s in suites.values():
        s.update_statistics()  # type: ignore[no-untyped-call]
        xml.add_testsuite(s)
    return xml
