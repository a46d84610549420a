"""The driver protocol and the job plans every flow is made of.

A driver sends :class:`~proofdiff.model.jobs.JobSpec` jobs to one daemon and returns one
:class:`~proofdiff.model.jobs.JobRecord` per spec, never raising for a job's failure (a failed
job is a record, not an exception). Drivers: ``grpc`` (:mod:`proofdiff.drivers.grpc_driver`, the cuzk
API) and ``bench-cli`` (:mod:`proofdiff.drivers.bench_cli`, the image's cuzk-bench-style client).
The flow around a driver (deadline, hang guard) is :func:`proofdiff.drivers.flow.prove_many`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from enum import StrEnum
from typing import Protocol

from proofdiff.model.jobs import JobRecord, JobSpec
from proofdiff.model.profile import Profile
from proofdiff.model.workload import Workload, select_jobs, sector_ids

from proofdiff.drivers.deadlines import Deadlines
from proofdiff.drivers.hang_guard import Guard
from proofdiff.drivers.job_ids import make_job_id

__all__ = ["Driver", "Log", "Mode", "plan_workload"]

Log = Callable[[str], None]


class Mode(StrEnum):
    """How a flow's jobs are sent.

    * ``PROVE``: one ``Prove`` (submit + await on one call) per job, ``concurrency`` at once.
    * ``SUBMIT_AWAIT``: ``SubmitProof`` every job, in index order a few milliseconds apart (so
      the last is submitted last), then ``AwaitProof`` each; jobs that share an id are awaited
      one after another (cuzk hands out one unclaimed job per call); await-only specs are
      awaited once more at the end. Needs a driver that chooses ids.
    """

    PROVE = "prove"
    SUBMIT_AWAIT = "submit-await"


class Driver(Protocol):
    """Sends jobs to one daemon.

    Attributes:
        name: ``grpc`` | ``bench-cli``.
        chooses_ids: the driver sends the specs' request ids (``grpc``); ``False`` when the
            tool picks its own (cuzk-bench: a fresh UUID per proof), so checks that need
            chosen ids (colliding ids, a reused id) cannot be expressed through it.
        modes: the :class:`Mode` values it supports.
    """

    name: str
    chooses_ids: bool
    modes: frozenset[Mode]

    def send(self, specs: Sequence[JobSpec], *, workload: Workload, concurrency: int, mode: Mode,
             guard: Guard, deadlines: Deadlines, log: Log) -> list[JobRecord]:
        """Send ``specs``; one record per spec, in spec order. Each answer of the daemon is
        shown to ``guard.answered(record)`` as it comes; each answered (or given-up) job calls
        ``guard.done()``; waits poll ``guard.expired()`` and give up when it turns true."""
        ...


def plan_workload(profile: Profile, workload: Workload) -> list[JobSpec]:
    """The workload flow's jobs: ``profile.jobs`` jobs (default all; more cycles through the
    workload) with request ids under the profile's scheme. Curio ids use ``profile.miner_id``
    when set, else the job's; the request's own ``miner_id`` field always stays the job's (it is
    part of the public inputs).

    Raises:
        proofdiff.drivers.job_ids.JobIdError: a curio id for a job without sectors.
    """
    return [JobSpec(index=i, job=job.name, request_id=make_job_id(
        profile.job_ids, proof_kind=workload.proof_kind,
        miner_id=profile.miner_id if profile.miner_id is not None else job.miner_id,
        sector_ids=sector_ids(job), randomness=job.randomness))
        for i, job in enumerate(select_jobs(workload, profile.jobs))]
