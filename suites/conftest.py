"""Shared by the suites: run them in the registry's order (preflight before any proof, the cheap
oracles before the expensive ones; correctness does not depend on it), and exit non-zero when
every regression replay was skipped (nothing judged is no pass)."""

from __future__ import annotations

from pathlib import Path

import pytest

from proofdiff.oracles.suite_table import SUITES
from proofdiff.regressions.replay_all import ALL_SKIPPED_EXIT

_ORDER = list(SUITES)


def _rank(item: pytest.Item) -> int:
    stem = Path(item.path).stem.removeprefix("test_")
    return _ORDER.index(stem) if stem in _ORDER else len(_ORDER)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    items.sort(key=_rank)  # stable: keeps pytest's grouping within a suite


#: The folder of this file, in a checkout and installed.
SUITE_DIRS = ("suites", "proofdiff_suites")


class ReplayTally:
    """The outcome of each regression replay test of the session (under pytest-xdist the
    controller sees every worker's reports), and the exit status when all were skipped."""

    def __init__(self) -> None:
        self.outcomes: dict[str, str] = {}

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        where = Path(report.nodeid.split("::")[0])
        if where.name != "test_regressions.py" or where.parent.name not in SUITE_DIRS:
            return
        if report.nodeid.endswith("[no-cases]"):  # no case folder at all: nothing to replay
            return
        if report.when == "call" or report.outcome != "passed":
            xfail = hasattr(report, "wasxfail")
            self.outcomes[report.nodeid] = "xfail" if xfail else report.outcome

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        if hasattr(session.config, "workerinput") or exitstatus != 0 or not self.outcomes:
            return
        if all(o == "skipped" for o in self.outcomes.values()):
            session.exitstatus = ALL_SKIPPED_EXIT
            reporter = session.config.pluginmanager.get_plugin("terminalreporter")
            if reporter is not None:
                reporter.write_line(f"proofdiff: every regression replay ({len(self.outcomes)}) "
                                    f"was skipped: nothing was judged; exit {ALL_SKIPPED_EXIT}")


def pytest_configure(config: pytest.Config) -> None:
    config.pluginmanager.register(ReplayTally(), "proofdiff-replay-tally")
