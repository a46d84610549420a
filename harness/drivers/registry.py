"""The driver a profile names (``driver = "grpc" | "bench-cli"``)."""

from __future__ import annotations

from harness.model.profile import Profile
from harness.target.containers import ContainerRunner
from harness.target.daemon import Daemon

from .base import Driver
from .bench_cli import BenchCliDriver
from .grpc import GrpcDriver

__all__ = ["driver_for"]


def driver_for(profile: Profile, daemon: Daemon, runner: ContainerRunner) -> Driver:
    """``grpc`` talks to the daemon's published address; ``bench-cli`` runs the image's bench
    tool in containers next to the daemon."""
    if profile.driver == "bench-cli":
        return BenchCliDriver(runner, profile, daemon.container)
    return GrpcDriver(daemon.address)
