"""Loopback ports for daemons this host starts as processes (and for tests' own servers): free
now, and never one the kernel would hand out itself."""

from __future__ import annotations

import random
import socket
from pathlib import Path

__all__ = ["free_port"]


def _ephemeral_range() -> tuple[int, int]:
    """The kernel's range for ports it picks itself (``bind`` to 0, a ``connect``'s own end)."""
    try:
        lo, hi = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()
        return int(lo), int(hi)
    except (OSError, ValueError):
        return 32768, 60999  # Linux's default


def free_port() -> int:
    """A TCP port free on 127.0.0.1 now, below the kernel's ephemeral range.

    A port the kernel picks (``bind`` to 0) comes from the range it also gives every outgoing
    connection its own end from; between this check and the daemon's ``bind`` a gRPC or Dask
    connection of this host can take it, and the daemon dies at start with "address in use".
    A port below that range is never handed out by the kernel; only
    another explicit binder can take it, and a random pick among thousands makes that rare
    (and a daemon that finds its port taken at start is started again on new ones:
    :data:`proofdiff.runtime.daemon.PORT_TAKEN`).
    (A range that starts under 2048, an odd host's setting, leaves no room below it: then any
    port from its start up is tried.)

    Raises:
        OSError: no port of the range could be bound (a host that uses them all).
    """
    lo, _hi = _ephemeral_range()
    first = max(1024, lo - 12000) if lo > 2048 else lo
    last = lo - 1 if lo > 2048 else 65535
    rng = random.Random()
    for _ in range(200):
        port = rng.randint(first, last)
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise OSError(f"no free TCP port on 127.0.0.1 in {first}-{last} after 200 tries")
