"""What an SSHCluster of this run left running on its hosts, stopped before the run ends.

``SpecCluster.close`` ends each remote process by an SSH signal and closes the connection, but
does not wait for the host to agree: a Nanny busy shutting down on a loaded host (or one that
missed the signal) can outlive the caller, with its worker process beside it, and a host must
hold nothing of a run once the run has ended (README, "A fleet of hosts"). So after the close,
each host is asked over SSH for the Dask processes of this run's cluster, found by the
scheduler's port on their command line (a worker's ``dask_spec tcp://HOST:PORT``, the
scheduler's ``"port": PORT`` in its spec; one cluster per scheduler port at a time). Each is
given :data:`GRACE_S` to exit on its own, then its process group (the Nanny and the worker it
forked) gets SIGTERM, and SIGKILL a second later.
"""

from __future__ import annotations

import asyncio
import shlex
from collections.abc import Callable, Sequence

from proofdiff.fleet.hosts import Host
from proofdiff.fleet.ssh import ssh_run

__all__ = ["GRACE_S", "stop_leftovers"]

#: How long a host's processes of the run may take to exit on their own after the close, s.
GRACE_S = 10.0


def _script(port: int, grace_s: float) -> str:
    """The shell that waits for, then stops, the run's processes on one host; it prints how
    many it had to stop (0: all had exited)."""
    pattern = shlex.quote(f"distributed[.]cli[.]dask_spec.*[^0-9]{port}([^0-9]|$)")
    tries = max(1, int(grace_s / 0.2))
    return (f"p={pattern}; i=0; while [ $i -lt {tries} ] && pgrep -f \"$p\" >/dev/null; do "
            "sleep 0.2; i=$((i+1)); done; left=$(pgrep -f \"$p\"); [ -z \"$left\" ] && "
            "{ echo 0; exit 0; }; groups=$(for pid in $left; do ps -o pgid= -p $pid; done); "
            # the groups are read once: a leader gone at SIGTERM still leaves its children's
            # group to SIGKILL
            "for g in $groups; do kill -TERM -- -$g 2>/dev/null; done; sleep 1; "
            "for g in $groups; do kill -KILL -- -$g 2>/dev/null; done; echo $left | wc -w")


async def _one(host: Host, script: str, timeout_s: float) -> tuple[str, str]:
    try:
        return host.name, (await ssh_run(host, script, timeout_s)).strip()
    except Exception as exc:  # noqa: BLE001 - a host gone is reported, the others still done
        return host.name, f"not reached ({type(exc).__name__}: {exc})"


def stop_leftovers(hosts: Sequence[Host], scheduler_address: str, *,
                   grace_s: float = GRACE_S, timeout_s: float = 30.0,
                   log: Callable[[str], None] = lambda _l: None) -> dict[str, str]:
    """Wait up to ``grace_s`` on every host at once for the processes of the cluster whose
    scheduler is ``scheduler_address`` (``tcp://HOST:PORT``) to exit, and stop those still
    there (module docstring). Never raises: a host not reached is logged.

    Returns:
        host name -> how many processes had to be stopped there (``"0"``: none was
        left), or why the host was not reached.
    """
    port = int(scheduler_address.rsplit(":", 1)[-1])
    script = _script(port, grace_s)

    async def every() -> list[tuple[str, str]]:
        return list(await asyncio.gather(*(_one(h, script, grace_s + timeout_s)
                                           for h in hosts)))

    got = dict(asyncio.run(every()))
    for name, what in got.items():
        if what != "0":
            log(f"host {name}: " + (what if not what.isdigit() else
                                    f"{what} Dask process(es) of this run still ran {grace_s:.0f} "
                                    "s after the cluster closed: stopped"))
    return got
