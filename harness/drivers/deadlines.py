"""Every deadline of a flow, in one place (derived from the profile and the run's options).

The periods that are the same for every profile are constants here; what a profile or a run
sets is in :class:`Deadlines`.
"""

from __future__ import annotations

import msgspec

from proofdiff.model.profile import Profile

__all__ = ["POLL_S", "SLACK_S", "SLICE_S", "STATUS_DEADLINE_S", "SUBMIT_S", "Deadlines",
           "deadlines_for"]

#: The hang guard's ``GetStatus`` period, seconds: often enough to see how many work items a
#: daemon really has in progress (a 2 KiB partition takes about a second).
POLL_S = 0.25
#: One status poll (``GetStatus``, ``GetMetrics``), seconds: curio's own deadline for
#: ``GetStatus`` (``lib/cuzk/client.go``: ``context.WithTimeout(ctx, 5*time.Second)``), past which
#: its backpressure query (``HasCapacity``) fails and the scheduler takes no proving task.
STATUS_DEADLINE_S = 5.0
#: Server-side ``AwaitProof`` slice, so a wait notices the guard between slices, seconds.
SLICE_S = 2.0
#: One ``SubmitProof`` call, seconds.
SUBMIT_S = 30.0
#: Added to a flow's deadline for start-up and collection, seconds.
SLACK_S = 30.0


class Deadlines(msgspec.Struct, frozen=True, kw_only=True):
    """Deadlines of one profile's flows, seconds.

    Attributes:
        job_s: one job, from send to answer (the profile's ``timeout_s``, default 600).
        stall_s: the shortest stall: no daemon is given up on as stalled (no answer, no CPU,
            no ``GetStatus``: :mod:`proofdiff.drivers.stall_rule`) sooner (default 15).
        tool_s: a short-lived tool container: bench ``--help``, a dry parse, ``paramgen
            --print-cache-id`` (default 60).
        verify_s: one verifier container (default 300).
    """

    job_s: float = 600.0
    stall_s: float = 15.0
    tool_s: float = 60.0
    verify_s: float = 300.0

    def flow_s(self, jobs: int, concurrency: int) -> float:
        """The deadline of a flow of ``jobs`` jobs at ``concurrency``: one ``job_s`` per round
        of ``concurrency`` jobs, plus :data:`SLACK_S`."""
        rounds = -(-max(1, jobs) // max(1, concurrency))
        return rounds * self.job_s + SLACK_S


def deadlines_for(profile: Profile, *, verify_s: float = 300.0) -> Deadlines:
    """The deadlines of ``profile``'s flows (``job_s`` = its ``timeout_s``, ``stall_s`` its
    ``stall_s``)."""
    return Deadlines(job_s=profile.timeout_s, stall_s=profile.stall_s, verify_s=verify_s)
