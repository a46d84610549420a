"""The driver a profile names (``driver = "grpc" | "bench-cli"``)."""

from __future__ import annotations

from proofdiff.model.profile import Profile
from proofdiff.runtime.daemon import Daemon
from proofdiff.runtime.runner import Runner

from proofdiff.drivers.protocol import Driver
from proofdiff.drivers.bench_cli import BenchCliDriver

__all__ = ["driver_for"]


def driver_for(profile: Profile, daemon: Daemon, runner: Runner) -> Driver:
    """``grpc`` talks to the daemon's published address; ``bench-cli`` runs the image's bench
    tool in containers next to the daemon (processes for a process or attach runtime). A cuzk
    daemon gets WindowPoSt one partition per request (it proves no more in one)."""
    if profile.driver == "bench-cli":
        return BenchCliDriver(runner, profile, daemon.handle)
    # gRPC's stack is imported when a driver needs it, not with every session
    from proofdiff.drivers.grpc_driver import GrpcDriver

    return GrpcDriver(daemon.address, per_partition=profile.daemon == "cuzk")
