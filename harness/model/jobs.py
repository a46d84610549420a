"""One job record and one flow record for every way proofdiff sends proofs.

A *flow* is a set of jobs sent to one daemon through the profile's driver: the workload run,
the isolation flows, one timing batch. Every flow gives a :class:`FlowRecord` of
:class:`JobRecord`; the validity, warmup, isolation and timing oracles all read these.
"""

from __future__ import annotations

import msgspec

from proofdiff.model.status import JobStatus

__all__ = ["NO_TIMINGS", "PRIORITIES", "DaemonTimings", "FlowRecord", "JobRecord", "JobSpec",
           "PollFailure", "ProofVerdict", "StatusSample", "UsageSample"]

#: cuzk's ``Priority`` enum (docs/design/cuzk-interface.md): name -> wire value; UNSPECIFIED
#: lets the daemon choose by kind (cuzk: WinningPoSt CRITICAL, WindowPoSt HIGH, PoRep/Snap
#: NORMAL).
PRIORITIES: dict[str, int] = {"UNSPECIFIED": 0, "LOW": 1, "NORMAL": 2, "HIGH": 3, "CRITICAL": 4}


class JobSpec(msgspec.Struct, frozen=True, kw_only=True):
    """One job a flow asks the driver for.

    Attributes:
        index: position in the flow (0-based submission order).
        job: the workload job whose public inputs are sent (``wpost-0``).
        request_id: the id to send; ``None`` lets the driver choose (a fresh UUID; the
            bench-cli driver always chooses).
        priority: cuzk ``Priority`` name; '' = the workload job's own (itself '' =
            UNSPECIFIED: the daemon's default for the kind).
        await_only: do not submit: ``AwaitProof`` the id once more after the flow's other jobs
            were answered (the isolation flows' "nothing is returned twice" probe).
    """

    index: int
    job: str
    request_id: str | None = None
    priority: str = ""
    await_only: bool = False


class ProofVerdict(msgspec.Struct, frozen=True, kw_only=True):
    """The independent verifier's verdict on one proof against its own job's public inputs.

    Attributes:
        valid: the length is ``partitions x 192`` bytes and every partition verifies.
        partitions: one bool per partition (empty when the length was wrong).
        error: the verifier's text, or ``None``.
        owners: in a cross-check (isolation), the workload jobs whose inputs this proof
            verifies against; empty when not cross-checked.
    """

    valid: bool
    partitions: tuple[bool, ...] = ()
    error: str | None = None
    owners: tuple[str, ...] = ()

    def bad_partitions(self) -> list[int]:
        """Indices of the partitions that did not verify."""
        return [i for i, ok in enumerate(self.partitions) if not ok]


class DaemonTimings(msgspec.Struct, frozen=True, kw_only=True):
    """How long the daemon says one job took, ms (``AwaitProofResponse`` fields 10-14,
    docs/design/cuzk-interface.md; 0 when not reported): waiting in its queue, loading the SRS,
    synthesis, GPU (or CPU) proving, and in all. A claim, to cross-check with the client's wall
    time."""

    queue_wait_ms: int
    srs_load_ms: int
    synthesis_ms: int
    gpu_compute_ms: int
    total_ms: int


#: A job the daemon reported no timings for.
NO_TIMINGS = DaemonTimings(queue_wait_ms=0, srs_load_ms=0, synthesis_ms=0, gpu_compute_ms=0,
                           total_ms=0)


class JobRecord(msgspec.Struct, frozen=True, kw_only=True):
    """One job's result.

    Attributes:
        index: the :class:`JobSpec` index. job: the workload job whose inputs were sent.
        request_id: the id sent ('' when the bench tool chose one it does not print).
        status: see :class:`~proofdiff.model.status.JobStatus`.
        job_id: the id the daemon answered with ('' when no answer).
        priority: the cuzk ``Priority`` name sent ('' = UNSPECIFIED).
        proof: proof bytes (``partitions x 192``), ``b''`` when none.
        error: the daemon's ``error_message``, the transport error, or why it is LOST/STUCK.
        timings: what the daemon reported (:class:`DaemonTimings`).
        wall_ms: client wall time from the call to its answer, ms.
        started_unix_s: wall clock when the job was sent, seconds since the epoch.
        unverifiable: why a COMPLETED job's proof bytes could not be obtained ('' = they were),
            e.g. a bench tool that does not save proofs.
        verdict: the independent verifier's verdict (``None`` until verified, or no proof).
        await_only: this record answers an await-only probe (see :class:`JobSpec`).
    """

    index: int
    job: str
    request_id: str
    status: JobStatus
    job_id: str = ""
    priority: str = ""
    proof: bytes = b""
    error: str = ""
    timings: DaemonTimings = NO_TIMINGS
    wall_ms: float = 0.0
    started_unix_s: float = 0.0
    unverifiable: str = ""
    verdict: ProofVerdict | None = None
    await_only: bool = False

    @property
    def completed(self) -> bool:
        """``status is COMPLETED``."""
        return self.status is JobStatus.COMPLETED

    def render(self) -> str:
        """``wpost-1 (id=wpost-1000-1, COMPLETED)``."""
        return f"{self.job} (id={self.request_id or '?'}, {self.status.value})"


class StatusSample(msgspec.Struct, frozen=True, array_like=True):
    """What the daemon said about itself at one moment of a flow (``GetStatus`` and
    ``GetMetrics``, polled by the hang guard): ``t_ms`` since the flow started (when the answer
    came), work items ``pending`` and ``in_progress`` (summed over proof kinds), the
    ``cuzk_running_jobs`` gauge (``None`` when the daemon does not export it), and
    ``latency_ms``: how long the ``GetStatus`` call took, from the call to its answer, as the
    client observed it (``None`` in records made before it was kept)."""

    t_ms: float
    pending: int
    in_progress: int
    running_jobs: int | None = None
    latency_ms: float | None = None


class PollFailure(msgspec.Struct, frozen=True, array_like=True):
    """One status poll of the hang guard that got no answer: ``t_ms`` since the flow started
    (when the call gave up), ``latency_ms`` from the call to its failure, the ``rpc``
    (``GetStatus``) and the gRPC ``code`` (``DEADLINE_EXCEEDED``, ``UNAVAILABLE``...)."""

    t_ms: float
    latency_ms: float
    rpc: str
    code: str


class UsageSample(msgspec.Struct, frozen=True, array_like=True):
    """What proofdiff observed of the daemon's process at one moment of a flow (the operating
    system's accounting, not the daemon's word): ``t_ms`` since the flow started, ``answered``
    (the flow's requests answered so far), resident memory (``rss_bytes``), open file
    descriptors (``fds``, ``None`` where they cannot be read: another user's process) and
    threads, and ``cpu_s``: the CPU time it has used since it started, user + system, seconds
    (its children included). Taken before the first request (``t_ms`` 0, the daemon idle since
    the flow before), every 0.25 s while it runs and after the last answer."""

    t_ms: float
    answered: int
    rss_bytes: int
    fds: int | None
    threads: int
    cpu_s: float


class FlowRecord(msgspec.Struct, frozen=True, kw_only=True):
    """The jobs of one flow on one daemon.

    Attributes:
        name: ``workload``, ``isolation``, ``timing`` ...
        label: which instance of the flow (a timing batch: ``bench:A1#2``); '' when one.
        concurrency: jobs the driver kept in flight at once.
        jobs: the records, in :class:`JobSpec` index order.
        wall_ms: the flow's wall time, ms.
        stall: why the hang guard stopped the flow ('' when it did not).
        errors: flow-level errors (the verifier failed, ...), as text.
        samples: the daemon's own queue figures while the flow ran (every ~0.25 s), each with
            its poll's latency.
        poll_failures: the status polls that got no answer (kept as evidence, never dropped).
        usage: its process as the operating system saw it: before the first request, at every
            poll and after the last answer (empty where the process cannot be observed: an
            attached daemon, a container whose process is not on this host).
        started_unix_s: wall clock when the flow started, seconds since the epoch (0.0 in
            records made before it was kept): the origin of ``t_ms``.
    """

    name: str
    jobs: tuple[JobRecord, ...]
    label: str = ""
    concurrency: int = 1
    wall_ms: float = 0.0
    stall: str = ""
    errors: tuple[str, ...] = ()
    samples: tuple[StatusSample, ...] = ()
    poll_failures: tuple[PollFailure, ...] = ()
    usage: tuple[UsageSample, ...] = ()
    started_unix_s: float = 0.0

    def completed(self) -> list[JobRecord]:
        """The COMPLETED jobs (await-only probes left out)."""
        return [j for j in self.jobs if j.completed and not j.await_only]

    def stuck(self) -> list[JobRecord]:
        """Jobs the hang guard gave up on (await-only probes left out)."""
        return [j for j in self.jobs if j.status is JobStatus.STUCK and not j.await_only]
