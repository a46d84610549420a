"""The attach runtime: a daemon that is already running, at a profile's ``address``.

proofdiff never starts, stops or signals it. Its state is whether it answers ``GetStatus``; it
has no log proofdiff can read; on a loopback address, commands (the preflight's param probes)
run on this host, where such a daemon reads its files; on another host they cannot run.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from typing import Any, Protocol
from urllib.parse import urlsplit

from proofdiff.model.choices import Runtime
from proofdiff.model.choices import Role
from proofdiff.runtime.spec import ContainerError

__all__ = ["AttachedHandle", "LOOPBACK"]

LOOPBACK = ("127.0.0.1", "localhost", "::1", "[::1]")


class _Probe(Protocol):
    def ask(self, timeout_s: float) -> str | None: ...

    def close(self) -> None: ...


class AttachedHandle:
    """A daemon at ``address`` (``HOST:PORT``), its ``GET /status`` at ``status_url`` ('' when
    it has none). The same surface as a container (:class:`proofdiff.runtime.spec.Handle`);
    ``probe(address)`` asks whether it answers (:class:`proofdiff.runtime.daemon.ReadyProbe`)."""

    runtime = Runtime.ATTACH

    def __init__(self, address: str, status_url: str = "", profile: str = "", *,
                 probe: Callable[[str], _Probe]) -> None:
        self.address, self.status_url, self.profile = address, status_url, profile
        self.probe = probe
        host, _, port = address.rpartition(":")
        self.host, self.port = host, int(port) if port.isdigit() else None

    @property
    def short_id(self) -> str:
        """``attached <address>``."""
        return f"attached {self.address}"

    @property
    def local(self) -> bool:
        """The daemon is on this host (a loopback address)."""
        return self.host in LOOPBACK

    def state(self) -> dict[str, Any]:
        """``running`` while it answers GetStatus (5 s deadline), else ``unreachable``;
        never an exit code or OOMKilled: proofdiff cannot see them."""
        probe = self.probe(self.address)
        try:
            said = probe.ask(5.0)
        finally:
            probe.close()
        return {"Status": "running"} if said is None else {"Status": "unreachable", "Error": said}

    def logs(self, tail: int | None = None) -> str:
        """'' (an attached daemon's log is not ours to read)."""
        return ""

    def host_port(self, name: str) -> int | None:
        """The gRPC port of ``address`` (``grpc``) or of ``status_url`` (``status``)."""
        if name == "grpc":
            return self.port
        if name == "status" and self.status_url:
            return urlsplit(self.status_url).port
        return None

    def ip(self) -> str:
        """The host part of ``address``."""
        return self.host

    def network(self) -> str:
        """'': an attached daemon is on no docker network of proofdiff's."""
        return ""

    def see(self, path: str) -> str:
        """``path``: the profile describes the attached daemon's own paths."""
        return path

    def exec(self, argv: list[str]) -> tuple[int, str]:
        """Run ``argv`` on this host, where a loopback daemon reads its files (60 s at most).

        Raises:
            ContainerError: the daemon is on another host.
        """
        if not self.local:
            raise ContainerError(f"profile {self.profile!r}: the attached daemon at "
                                 f"{self.address} is on another host; nothing can be run where "
                                 "it reads its files",
                                 fix="run proofdiff on the daemon's host to check what it reads",
                                 role=Role.DAEMON, profile=self.profile)
        try:
            res = subprocess.run(argv, capture_output=True, timeout=60)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return 126, str(exc)
        return res.returncode, (res.stdout + res.stderr).decode("utf-8", "replace")

    def view(self) -> dict[str, Any]:
        """``{runtime: attach, address, status_url}``: nothing else is known of it."""
        return {"runtime": "attach", "address": self.address, "status_url": self.status_url}

    def stop(self, grace_s: float = 10.0) -> None:
        """Nothing: proofdiff never stops a daemon it did not start."""

    def remove(self) -> None:
        """Nothing: proofdiff never removes a daemon it did not start."""
