"""The driver a profile names (``driver = "grpc" | "bench-cli"``)."""

from __future__ import annotations

from harness.model.profile import Profile
from harness.target.daemon import Daemon
from harness.target.runner import Runner

from .base import Driver
from .bench_cli import BenchCliDriver
from .grpc import GrpcDriver

__all__ = ["driver_for"]


def driver_for(profile: Profile, daemon: Daemon, runner: Runner) -> Driver:
    """``grpc`` talks to the daemon's published address; ``bench-cli`` runs the image's bench
    tool in containers next to the daemon (processes for a process or attach target). A cuzk
    daemon gets WindowPoSt one partition per request (it proves no more in one)."""
    if profile.driver == "bench-cli":
        return BenchCliDriver(runner, profile, daemon.handle)
    return GrpcDriver(daemon.address, per_partition=profile.daemon == "cuzk")
