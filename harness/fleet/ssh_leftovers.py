"""What an SSHCluster of this run left running on its hosts, stopped before the run ends.

``SpecCluster.close`` ends each remote process by an SSH signal and closes the connection, but
does not wait for the host to agree: a Nanny busy shutting down on a loaded host (or one that
missed the signal) can outlive the caller, with its worker process beside it, and a host must
hold nothing of a run once the run has ended (docs/design/fleet.md). So after the close,
each host is asked over SSH for the Dask processes of this run's cluster, found by the
scheduler's whole address on their command line: a worker's ``dask_spec tcp://HOST:PORT``
(``tls://`` too), the scheduler's spec holding both ``"host": "HOST"`` and ``"port": PORT``.
Only one scheduler listens on HOST:PORT at a time, so these are this run's; another run's
processes for the same port on another scheduler host, or with the port elsewhere on their
command line, are left alone. Each is given :data:`GRACE_S` to exit on its own, then its
process group (the Nanny and the worker it forked) gets SIGTERM, and SIGKILL a second later.
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


def _ere(text: str) -> str:
    """``text`` as a POSIX extended regular expression that matches it literally; a dot is
    written ``[.]``, so the pattern never matches the shell that carries it."""
    return "".join("[.]" if c == "." else f"\\{c}" if c in "[]()*+?{}|^$\\" else c
                   for c in text)


def _script(host: str, port: int, grace_s: float) -> str:
    """The shell that waits for, then stops, the run's processes on one host (module
    docstring: the scheduler at ``host:port``); it prints how many it had to stop (0: all had
    exited)."""
    spec = "distributed[.]cli[.]dask_spec"
    worker = shlex.quote(f"{spec} (tcp|tls)://{_ere(host)}:{port}( |$)")
    sched = [shlex.quote(p) for p in (f"{spec} --spec", f'"port": {port}[,}}]',
                                      f'"host": "{_ere(host)}"')]
    tries = max(1, int(grace_s / 0.2))
    # one listing per look, read by both filters, whole command lines (-ww: ps cuts them to
    # the terminal's width, COLUMNS); the patterns never match this shell's own command line
    # (a dot is [.] there, a literal dot in a process's)
    return ("ours() { l=$(ps -ww -eo pid=,args=); { printf '%s\\n' \"$l\" | "
            f"grep -E -- {worker}; printf '%s\\n' \"$l\" | grep -E -- {sched[0]} | "
            f"grep -E -- {sched[1]} | grep -E -- {sched[2]}; }} | awk '{{print $1}}'; }}; "
            f"i=0; while [ $i -lt {tries} ] && [ -n \"$(ours)\" ]; do sleep 0.2; i=$((i+1)); "
            "done; left=$(ours); [ -z \"$left\" ] && { echo 0; exit 0; }; "
            "groups=$(for pid in $left; do ps -o pgid= -p $pid; done); "
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
    where, port = scheduler_address.split("://", 1)[-1].rsplit(":", 1)
    script = _script(where, int(port), grace_s)

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
