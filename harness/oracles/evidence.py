"""What an oracle may ask of a running differential, and how it writes its records.

Oracles never start containers, run tools or talk to a daemon themselves: they ask an
:class:`Evidence` (the differential session, :mod:`proofdiff.core.session`) for runs, flows
and what preflight looks at (the param files, what the daemon can read and their digests, its
status and log), and return :class:`~proofdiff.model.oracle_records.OracleRecord` objects. Every oracle states a property that any
correct prover has; a record is never ``pass`` on empty input (``error`` says what is missing).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

from proofdiff.core.artifact_probe import ArtifactLook
from proofdiff.core.library_probe import LibraryLook
from proofdiff.drivers.protocol import Driver, Mode
from proofdiff.drivers.deadlines import Deadlines
from proofdiff.model.image import ImageInfo
from proofdiff.model.jobs import FlowRecord, JobSpec
from proofdiff.model.oracle_records import OracleRecord, ProofCounts
from proofdiff.model.timing_verdict import TimingVerdict
from proofdiff.model.profile import Profile
from proofdiff.model.runs import DaemonFacts, RunRecord
from proofdiff.model.status import Outcome
from proofdiff.model.workload import Workload
from proofdiff.runtime.daemon import Daemon
from proofdiff.runtime.process_probe import Reading

__all__ = ["Evidence", "Recorder", "SuiteFn"]


class Evidence(Protocol):
    """The session as oracles see it (implemented by :class:`proofdiff.core.session.Session`).

    Attributes:
        profiles: the selected profiles, resolved (the first is the baseline).
        image_slot: '' when each profile runs its own image, else the image tag compared.
        param_cache: the host param cache (``.params``/``.vk``).
    """

    @property
    def profiles(self) -> Mapping[str, Profile]:
        """The selected profiles."""
        ...

    @property
    def image_slot(self) -> str:
        """The image slot."""
        ...

    @property
    def param_cache(self) -> Path:
        """The host param cache."""
        ...

    @property
    def params_manifest(self) -> Path | None:
        """The params manifest (parameters.json) to check files against; ``None`` = the one in
        the param cache."""
        ...

    def log(self, line: str) -> None:
        """One line of progress."""
        ...

    def workload(self, name: str) -> Workload:
        """The loaded workload (raises ``WorkloadError``)."""
        ...

    def daemon(self, profile: str) -> Daemon:
        """The profile's ready daemon, started on first use (raises ``LaunchError``): read its
        facts (``what``, ``handle.see``), never run anything through it."""
        ...

    def image(self, profile: str) -> ImageInfo:
        """What runs the profile's daemon, with its digest (raises ``ContainerError``)."""
        ...

    def param_files(self, profile: str, workload: str) -> tuple[list[str], str]:
        """The param files the workload needs, and how the list was made (raises
        ``ProofdiffError``)."""
        ...

    def unreadable(self, profile: str, directory: str, files: Sequence[str]) -> list[str]:
        """The files the daemon cannot read in ``directory`` (raises ``ProofdiffError``)."""
        ...

    def daemon_digests(self, profile: str, directory: str, files: Sequence[str]) -> dict[str, str]:
        """The digests of the daemon's own copies (raises ``ProofdiffError``)."""
        ...

    def host_digests(self, files: Sequence[str]) -> tuple[dict[str, str], int, int]:
        """The digests of the verifier's copies, with the counts cached and hashed."""
        ...

    def libraries(self, profile: str) -> LibraryLook:
        """What the loader says of each program the profile starts, where it runs (raises
        ``ProofdiffError``)."""
        ...

    def first_run_artifacts(self, profile: str, names: Sequence[str]) -> ArtifactLook:
        """The files matching each name beside the daemon, and its start time (raises
        ``ProofdiffError``)."""
        ...

    def daemon_status(self, profile: str) -> dict[str, Any] | None:
        """The daemon's ``GET /status`` JSON, or ``None``."""
        ...

    def daemon_log(self, profile: str, tail: int = 500) -> str:
        """The last lines of the daemon's log."""
        ...

    def bench_command_problem(self, profile: str, workload: str) -> str | None:
        """Why the bench tool rejects the profile's command line, or ``None``."""
        ...

    def driver(self, profile: str) -> Driver:
        """The profile's driver (raises ``LaunchError`` when its daemon did not start)."""
        ...

    def deadlines(self, profile: str) -> Deadlines:
        """The profile's deadlines."""
        ...

    def run(self, profile: str, workload: str) -> RunRecord:
        """The workload run, verified; run once; never raises (errors are in the record)."""
        ...

    def flows(self, profile: str, workload: str) -> list[FlowRecord]:
        """Every flow sent to the profile's daemon for ``workload`` so far, the workload flow
        first (none when the run could not send jobs)."""
        ...

    def facts(self, profile: str) -> DaemonFacts | None:
        """What the profile's daemon shows now (``None`` when it never started)."""
        ...

    def look(self, profile: str) -> Reading | None:
        """The profile's daemon process now, as the operating system counts it (memory,
        handles, CPU time); ``None`` when it cannot be read (attached, not on this host, gone,
        never started)."""
        ...

    def send(self, profile: str, workload: str, specs: Sequence[JobSpec], *, name: str,
             label: str = "", concurrency: int, mode: Mode = Mode.PROVE,
             cross: bool = False) -> FlowRecord:
        """Another flow on the same daemon, after the workload run, verified (``cross``: each
        proof against every input sent), and added to the run record."""
        ...

    def blocked(self, profile: str, workload: str) -> str | None:
        """Why proving checks should skip ``profile`` (a failed blocking preflight check, a
        daemon that died or never started), or ``None``."""
        ...


class Recorder:
    """Makes one suite's records for one workload (the image slot filled in).

    ``rec(oracle, profile, outcome, message, evidence=..., names=...)``.
    """

    def __init__(self, ev: Evidence, suite: str, workload: str) -> None:
        self.ev, self.suite, self.workload = ev, suite, workload
        self.records: list[OracleRecord] = []
        self._since = time.time()  # a check is judged from the previous record to its own

    def __call__(self, oracle: str, profile: str, outcome: Outcome, message: str, *,
                 evidence: Mapping[str, Any] | None = None, names: Sequence[str] = (),
                 counts: ProofCounts | None = None,
                 timing: TimingVerdict | None = None) -> OracleRecord:
        now = time.time()
        r = OracleRecord(suite=self.suite, oracle=oracle, profile=profile, workload=self.workload,
                         outcome=outcome, message=message, image=self.ev.image_slot,
                         evidence=dict(evidence or {}), names=tuple(names), counts=counts,
                         timing=timing, started_unix_s=self._since, stopped_unix_s=now)
        self._since = now
        self.records.append(r)
        return r

    def skip_attached(self, oracle: str, profile: str, address: str, what: str) -> None:
        """Record ``oracle`` on an attached ``profile`` as skipped: proofdiff did not start the
        daemon at ``address``, so ``what`` (e.g. "its programs") is not known here."""
        self(oracle, profile, Outcome.SKIPPED, f"attached daemon at {address}: proofdiff did "
             f"not start it, so {what} is not known here")

    def skip_all(self, oracles: Sequence[str], profile: str, why: str) -> None:
        """Record every oracle of ``oracles`` on ``profile`` as skipped, with the reason."""
        for o in oracles:
            self(o, profile, Outcome.SKIPPED, why)


#: A suite: ``evaluate(evidence, workload) -> records`` over every selected profile.
SuiteFn = Callable[[Evidence, str], list[OracleRecord]]
