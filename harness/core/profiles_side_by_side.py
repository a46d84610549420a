"""Every suite of a workload proving for each profile at the same time, each profile on a thread
of its own: the run's wall falls toward that of the slower profile.

The daemons are pinned to their share of the cores, so every flow of a profile, not its
workload run alone, goes side by side: a suite taken one profile at a time on half the cores
would make a side-by-side run slower than one after the other. Each profile's thread runs its
workload run and then every suite on a
:class:`ProfileView` that shows the suite that profile alone: the suites other than timing
judge each profile on its own evidence (their ``evaluate`` loops over ``ev.profiles``), so the
records are the ones a run one profile after the other makes, in the same order. Timing
compares the profiles' speed and never runs side by side (:mod:`proofdiff.core.side_by_side`).

Thread safety: a thread touches only its own profile's caches in the session (daemon, driver,
verifier, flows, runs); what is shared (the workload, preflight, the runner) is made before the
threads start.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from proofdiff.core.suite_result import SuiteResult
from proofdiff.model import progress
from proofdiff.model.jobs import FlowRecord
from proofdiff.model.oracle_records import OracleRecord
from proofdiff.model.profile import Profile
from proofdiff.oracles.suite_table import SUITES

if TYPE_CHECKING:
    from proofdiff.core.session import Session

__all__ = ["ProfileView", "PER_PROFILE_SUITES", "evaluate_side_by_side"]

#: Suites whose records of one profile depend on that profile's evidence alone.
PER_PROFILE_SUITES = frozenset({"preflight", "validity", "warmup", "isolation", "behaviour"})


class ProfileView:
    """The session as one profile's suites see it: ``profiles`` holds that profile only;
    everything else is the session's (:class:`proofdiff.oracles.evidence.Evidence`)."""

    def __init__(self, session: Session, profile: str) -> None:
        self._session, self._profile = session, profile

    @property
    def profiles(self) -> Mapping[str, Profile]:
        """The one profile this view shows."""
        return {self._profile: self._session.profiles[self._profile]}

    def __getattr__(self, name: str) -> Any:
        return getattr(self._session, name)


def _profile_suites(session: Session, profile: str, workload: str, suites: Sequence[str]
                    ) -> dict[str, tuple[list[OracleRecord], list[FlowRecord]]]:
    """Each suite of ``suites`` on ``profile``'s view, in order (the first that proves starts
    its workload run): suite -> (its records, the flows it sent)."""
    view = ProfileView(session, profile)
    out: dict[str, tuple[list[OracleRecord], list[FlowRecord]]] = {}
    for suite in suites:
        before = len(session.sent_flows(profile, workload))
        records = SUITES[suite].evaluate(view, workload)
        out[suite] = (records, session.sent_flows(profile, workload)[before:])
    return out


def evaluate_side_by_side(session: Session, workload: str, suites: Sequence[str],
                          profiles: Sequence[str]) -> list[SuiteResult]:
    """Each of ``suites`` (all in :data:`PER_PROFILE_SUITES`) on ``workload`` for every one of
    ``profiles`` at once, a thread per profile: one result per suite, its records in profile
    order (the order a run one profile after the other gives) and the flows it sent by profile.
    Raises what a suite raises."""
    with ThreadPoolExecutor(max_workers=max(1, len(profiles)),
                            thread_name_prefix="proofdiff-profile") as pool:
        futures = {p: pool.submit(progress.carried(_profile_suites), session, p, workload,
                                  suites) for p in profiles}
        made = {p: f.result() for p, f in futures.items()}
    return [SuiteResult(suite=suite, workload=workload,
                        records=tuple(r for p in profiles for r in made[p][suite][0]),
                        flows={p: tuple(made[p][suite][1]) for p in profiles
                               if made[p][suite][1]})
            for suite in suites]
