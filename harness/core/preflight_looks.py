"""What preflight looks at around a session's daemons, so that the oracles only judge and never
launch (:mod:`proofdiff.core.probes` runs each look; the session caches the answers): a
mixin of :class:`proofdiff.core.session.Session`, the ``Evidence`` methods of preflight."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from proofdiff.core import probes
from proofdiff.core.artifact_probe import ArtifactLook, look_artifacts
from proofdiff.core.library_probe import LibraryLook, look_libraries
from proofdiff.core.suite_result import once
from proofdiff.drivers.bench_cli import BenchCliDriver
from proofdiff.model.choices import DriverKind, Runtime
from proofdiff.model.errors import ProofdiffError
from proofdiff.model.profile import DEFAULT_BINARY
from proofdiff.runtime.daemon_status import fetch_status
from proofdiff.runtime.spec import ContainerError

if TYPE_CHECKING:
    from proofdiff.core.plan import Plan
    from proofdiff.drivers.deadlines import Deadlines
    from proofdiff.drivers.protocol import Driver
    from proofdiff.model.image import ImageInfo
    from proofdiff.model.profile import Profile
    from proofdiff.model.workload import Workload
    from proofdiff.runtime.daemon import Daemon
    from proofdiff.runtime.runner import Runner

__all__ = ["PreflightLooks"]


class _Session(Protocol):
    """What the looks use of the session they are mixed into."""

    plan: Plan
    profiles: dict[str, Profile]
    param_cache: Path
    _param_files: dict[str, probes.ParamFiles | ProofdiffError]
    _bench_checks: dict[str, str | None]
    _library_looks: dict[str, LibraryLook | ProofdiffError]

    @property
    def runner(self) -> Runner: ...
    def deadlines(self, profile: str) -> Deadlines: ...
    def daemon(self, profile: str) -> Daemon: ...
    def driver(self, profile: str) -> Driver: ...
    def workload(self, name: str) -> Workload: ...
    def identity(self, profile: str) -> ImageInfo: ...


class PreflightLooks:
    """The looks, each cached in the session where it costs a tool run."""

    def param_files(self: _Session, profile: str, workload: str) -> probes.ParamFiles:
        """The ``.params``/``.vk`` files ``workload`` needs for ``profile``'s daemon, and how
        the list was made (:func:`proofdiff.core.probes.required_param_files`; cached).

        Raises:
            ProofdiffError: a circuit's files are not in the host param cache.
        """
        p = self.profiles[profile]
        return once(self._param_files, f"{profile}/{workload}",
                    lambda: probes.required_param_files(
                        self.runner, self.param_cache, program=p.program, runtime=p.runtime,
                        workload=workload, profile=profile,
                        timeout_s=self.deadlines(profile).tool_s), ProofdiffError)

    def unreadable(self: _Session, profile: str, directory: str,
                   files: Sequence[str]) -> list[str]:
        """The ``files`` the daemon cannot read in ``directory``, checked beside it as its user.

        Raises:
            ProofdiffError: nothing could be run beside it (with the fix).
        """
        try:
            return probes.unreadable(self.daemon(profile), directory, files)
        except ContainerError as exc:
            raise ProofdiffError(exc.headline, fix=exc.fix) from None

    def daemon_digests(self: _Session, profile: str, directory: str,
                       files: Sequence[str]) -> dict[str, str]:
        """Each file's parameters.json digest, hashed beside the daemon from its own copy.

        Raises:
            ProofdiffError: nothing could be run beside it.
        """
        try:
            return probes.daemon_digests(self.daemon(profile), directory, files)
        except ContainerError as exc:
            raise ProofdiffError(exc.headline, fix=exc.fix) from None

    def host_digests(self: _Session, files: Sequence[str]) -> tuple[dict[str, str], int, int]:
        """The digests of the host param cache's copies (what the verifier reads), cached under
        the cache root; with the counts cached and hashed.

        Raises:
            OSError: a file cannot be read.
        """
        return probes.host_digests(self.param_cache, files, self.plan.options.cache_root)

    def daemon_status(self: _Session, profile: str) -> dict[str, Any] | None:
        """The daemon's ``GET /status`` JSON (``None`` when it has no status listener)."""
        return fetch_status(self.daemon(profile).status_port)

    def daemon_log(self: _Session, profile: str, tail: int = 500) -> str:
        """The last ``tail`` lines of the daemon's log ('' for an attached daemon)."""
        return self.daemon(profile).logs(tail)

    def bench_command_problem(self: _Session, profile: str, workload: str) -> str | None:
        """Why the profile's bench tool rejects its command line (its usage line), or ``None``
        when it accepts it: the driver's one dry parse, cached."""
        key = f"{profile}/{workload}"
        if key not in self._bench_checks:
            driver = self.driver(profile)
            self._bench_checks[key] = (
                driver.check_command_line(self.workload(workload), self.deadlines(profile))
                if isinstance(driver, BenchCliDriver) else None)
        return self._bench_checks[key]

    def program_digest(self: _Session, profile: str) -> str:
        """The digest of what runs ``profile``'s daemon (:meth:`identity`)."""
        return self.identity(profile).digest

    def programs(self: _Session, profile: str) -> list[tuple[str, str]]:
        """``(role, program)`` for every program ``profile`` starts: the daemon (the image's
        entrypoint, or the process runtime's ``binary``) and, for the bench-cli driver, its
        bench tool; [] for an attached daemon.

        Raises:
            ContainerError: the image is not present.
        """
        p = self.profiles[profile]
        if p.runtime is Runtime.ATTACH:
            return []
        if p.runtime is Runtime.PROCESS:
            daemon = p.binary or DEFAULT_BINARY
        else:
            config = self.runner.image(p.image_tag).attrs.get("Config") or {}
            argv = config.get("Entrypoint") or config.get("Cmd") or []
            daemon = str(argv[0]) if argv else ""
        out = [("daemon", daemon)] if daemon else []
        if p.driver is DriverKind.BENCH_CLI:
            out.append(("bench tool", p.bench_tool))
        return out

    def libraries(self: _Session, profile: str) -> LibraryLook:
        """What the loader says of each program ``profile`` starts, where it runs, and where
        the CUDA driver library is for a GPU profile (:mod:`proofdiff.core.library_probe`;
        cached, errors too).

        Raises:
            ProofdiffError: the look could not run there (with the fix).
        """
        p = self.profiles[profile]

        def look() -> LibraryLook:
            try:
                programs = PreflightLooks.programs(self, profile)
            except ContainerError as exc:
                raise ProofdiffError(exc.headline, fix=exc.fix) from None
            return look_libraries(self.runner, programs=programs, image=p.program,
                                  runtime=p.runtime, gpus=p.gpus, profile=profile,
                                  timeout_s=self.deadlines(profile).tool_s)
        return once(self._library_looks, profile, look, ProofdiffError)

    def first_run_artifacts(self: _Session, profile: str, names: Sequence[str]) -> ArtifactLook:
        """The files matching each of ``names`` beside ``profile``'s daemon (relative names in
        the param cache it reads), with sizes and modification times, and its start time
        (:func:`proofdiff.core.artifact_probe.look_artifacts`).

        Raises:
            ProofdiffError: nothing could be run beside it.
        """
        d = self.daemon(profile)
        return look_artifacts(d, names, d.handle.see(d.profile.param_read_path()))
