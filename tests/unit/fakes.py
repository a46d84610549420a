"""A small typed stand-in for the differential session (``proofdiff.oracles.evidence.Evidence``), for
oracle tests in the unit tier where no daemon can run: canned runs, flows and daemon facts."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from msgspec.structs import replace

from proofdiff.core.artifact_probe import ArtifactLook
from proofdiff.drivers.protocol import Mode
from proofdiff.model.errors import ProofdiffError
from proofdiff.drivers.deadlines import Deadlines
from proofdiff.model.jobs import FlowRecord, JobSpec
from proofdiff.model.profile import Profile
from proofdiff.model.profile_file import load_profiles
from proofdiff.model.runs import DaemonFacts, RunRecord
from proofdiff.model.workload import Workload, load_workload
from proofdiff.runtime.process_probe import Reading


@dataclass
class FakeDriver:
    name: str = "grpc"
    chooses_ids: bool = True
    modes: frozenset[Mode] = frozenset({Mode.PROVE, Mode.SUBMIT_AWAIT})


@dataclass
class FakeEvidence:
    """``runs[profile]``: the workload run; ``sent[name]``: the flow ``send`` returns for a flow
    of that name (recorded in ``calls``); ``status[profile]``: the daemon's /status JSON;
    ``reading[profile]``: what ``look`` reads of its process now;
    ``artifacts[profile]``: what ``first_run_artifacts`` sees beside it (absent: nothing could be
    run there); ``host_digest`` / ``daemon_digest``: param digests of the verifier's copies and of the
    daemon's own (a file absent from ``daemon_digest`` was not hashed there)."""

    profiles: Mapping[str, Profile]
    workload_file: Path
    runs: dict[str, RunRecord] = field(default_factory=dict)
    sent: dict[str, FlowRecord] = field(default_factory=dict)
    status: dict[str, dict[str, Any]] = field(default_factory=dict)
    drivers: dict[str, FakeDriver] = field(default_factory=dict)
    calls: list[tuple[str, list[JobSpec]]] = field(default_factory=list)
    image_slot: str = ""
    param_cache: Path = Path("/nonexistent")
    params_manifest: Path | None = None
    runner: Any = None
    host_digest: dict[str, str] = field(default_factory=dict)
    daemon_digest: dict[str, str] = field(default_factory=dict)
    reading: dict[str, Reading] = field(default_factory=dict)
    artifacts: dict[str, ArtifactLook] = field(default_factory=dict)

    def log(self, line: str) -> None:
        pass

    def workload(self, name: str) -> Workload:
        return load_workload(self.workload_file)

    def daemon(self, profile: str) -> Any:
        raise NotImplementedError

    def driver(self, profile: str) -> FakeDriver:
        return self.drivers.get(profile, FakeDriver())

    def deadlines(self, profile: str) -> Deadlines:
        return Deadlines()

    def run(self, profile: str, workload: str) -> RunRecord:
        return self.runs[profile]

    def flows(self, profile: str, workload: str) -> list[FlowRecord]:
        return [*self.runs[profile].flows, *(f for n, f in self.sent.items()
                                             if any(c[0] == n for c in self.calls))]

    def facts(self, profile: str) -> DaemonFacts | None:
        d = self.runs[profile].daemon
        return replace(d, status=self.status.get(profile, d.status)) if d else None

    def send(self, profile: str, workload: str, specs: Sequence[JobSpec], *, name: str,
             label: str = "", concurrency: int, mode: Mode = Mode.PROVE,
             cross: bool = False) -> FlowRecord:
        self.calls.append((name, list(specs)))
        return self.sent[name]

    def blocked(self, profile: str, workload: str) -> str | None:
        return None

    def look(self, profile: str) -> Reading | None:
        return self.reading.get(profile)

    def daemon_log(self, profile: str, tail: int = 500) -> str:
        d = self.runs[profile].daemon if profile in self.runs else None
        return "\n".join((d.log_tail if d else "").splitlines()[-tail:])

    def host_digests(self, files: Sequence[str]) -> tuple[dict[str, str], int, int]:
        return {n: self.host_digest[n] for n in files}, 0, len(files)

    def daemon_digests(self, profile: str, directory: str, files: Sequence[str]) -> dict[str, str]:
        return {n: self.daemon_digest[n] for n in files if n in self.daemon_digest}

    def first_run_artifacts(self, profile: str, names: Sequence[str]) -> ArtifactLook:
        if profile not in self.artifacts:
            raise ProofdiffError("this fake has no daemon to look beside")
        return self.artifacts[profile]


def refprover_profiles(*overrides: str) -> dict[str, Profile]:
    """The shipped refprover profiles with ``--set`` overrides."""
    return load_profiles("refprover", overrides)
