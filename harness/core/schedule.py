"""How a session evaluates its whole plan: the order and overlap of its work.

Every profile's daemon starts at once, each on a thread of its own, with the program's or
image's identity (preflight's image check) and the param-file lists that
preflight reads made beside them (a daemon's start is mostly waiting for it to answer, and the
param-file list is a tool run: one after the other, these waits would be the run's fixed
cost). Then, per workload: where the host allows
(:mod:`proofdiff.core.side_by_side`), preflight first and then every profile's suites at the
same time, each profile on its own CPUs (:mod:`proofdiff.core.profiles_side_by_side`); else
each suite in order, one profile after the other.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

from proofdiff.core.profiles_side_by_side import PER_PROFILE_SUITES, evaluate_side_by_side
from proofdiff.core.side_by_side import place
from proofdiff.core.suite_result import SuiteResult
from proofdiff.model import progress
from proofdiff.model.errors import ProofdiffError
from proofdiff.model.workload import WorkloadError
from proofdiff.runtime.daemon import LaunchError

if TYPE_CHECKING:
    from proofdiff.core.session import Session

__all__ = ["evaluate", "start_daemons"]


def evaluate(session: Session) -> None:
    """Every planned suite of ``session`` on every planned workload (module docstring); the
    schedule chosen is kept in ``session.placement``. Raises what a suite raises."""
    session.placement = place(session.profiles, session.plan.suites,
                              sorted(os.sched_getaffinity(0)), session.plan.options.side_by_side)
    session.log(f"schedule: {session.placement.reason}")
    start_daemons(session)
    for workload in session.plan.workloads:
        if session.placement.side_by_side:
            _side_by_side(session, workload)
        for suite in session.plan.suites:
            session.suite(suite, workload)


def start_daemons(session: Session) -> None:
    """Every profile's daemon at once, and preflight's param-file lists beside them (module
    docstring). A daemon that cannot start is kept as its LaunchError, and a list that cannot
    be made as its ProofdiffError, which the suites report where they ask for them, as they
    would have on a start or a probe of their own."""
    session.runner  # noqa: B018 - start the runner and its watchdog once, before the threads

    def start(profile: str) -> None:
        try:
            session.daemon(profile)
        except LaunchError:
            pass  # cached by `daemon`: raised again, with its fix, to whoever needs it

    def identify(profile: str) -> None:
        session.identity(profile)  # preflight's image check: the program's sha256, cached

    def list_params(profile: str, workload: str) -> None:
        try:
            session.param_files(profile, workload)
        except ProofdiffError:
            pass  # cached by `param_files`: raised again where preflight asks for it

    lists = ([(p, w) for p in session.profiles for w in session.plan.workloads]
             if "preflight" in session.plan.suites else [])
    with ThreadPoolExecutor(max_workers=max(1, 2 * len(session.profiles) + len(lists)),
                            thread_name_prefix="proofdiff-start") as pool:
        futures = [pool.submit(progress.carried(start), p) for p in session.profiles]
        futures += [pool.submit(progress.carried(identify), p) for p in session.profiles]
        futures += [pool.submit(progress.carried(list_params), p, w) for p, w in lists]
        for f in futures:
            f.result()


def _side_by_side(session: Session, workload: str) -> None:
    """Preflight (always: it says which profiles are blocked), then the other planned suites of
    every profile at once; their results are kept as ``Session.suite`` keeps its own, so the
    loop after it finds them made."""
    try:
        session.workload(workload)
    except WorkloadError:
        return  # each run records it
    for p in session.profiles:
        session.blocked(p, workload)  # preflight's records, made once before the threads
    rest = [s for s in session.plan.suites if s != "preflight"]
    if not rest or not PER_PROFILE_SUITES.issuperset(rest):
        return  # placement never asks for this: timing keeps the profiles apart
    for result in evaluate_side_by_side(session, workload, rest, list(session.profiles)):
        session.store.get_or_compute(session.suite_key(result.suite, workload), SuiteResult,
                                     lambda: result, 0.0)  # called here, in this iteration
