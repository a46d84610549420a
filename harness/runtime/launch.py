"""The first moments of a process runtime: settle its limits and its tie to the owner, then
``exec`` the program (so nothing runs in the parent between fork and exec, where threads make
``preexec_fn`` unsafe).

    python -m proofdiff.runtime.launch [--pdeathsig] [--cgroup DIR] [--rlimit-as BYTES]
                                    [--cpuset CPU,CPU...] [--affinity-cores N]
                                    -- PROGRAM ARGS...

* ``--pdeathsig``: ``prctl(PR_SET_PDEATHSIG, SIGKILL)``, so the program dies with the process
  that started it (Linux; it survives ``exec``). If that process is already gone, exit 1.
* ``--cgroup DIR``: join the cgroup v2 ``DIR`` (write 0 to its ``cgroup.procs``).
* ``--rlimit-as BYTES``: ``RLIMIT_AS``. ``--cpuset 0,1``: pin to these CPUs (a placement).
  ``--affinity-cores N``: then pin to the first N of the allowed CPUs (a ``cpus`` limit).

Exit 127 with the reason when the program cannot be executed.
"""

from __future__ import annotations

import argparse
import ctypes
import os
import resource
import signal
import sys
from collections.abc import Sequence
from pathlib import Path

__all__ = ["main"]

_PR_SET_PDEATHSIG = 1


def main(argv: Sequence[str] | None = None) -> int:
    """Apply the options and exec the program (returns only on failure)."""
    p = argparse.ArgumentParser(prog="python -m proofdiff.runtime.launch")
    p.add_argument("--pdeathsig", action="store_true")
    p.add_argument("--parent", type=int, default=0, help="the pid that must still be alive")
    p.add_argument("--cgroup", type=Path, default=None)
    p.add_argument("--rlimit-as", type=int, default=None)
    p.add_argument("--cpuset", default=None)
    p.add_argument("--affinity-cores", type=int, default=None)
    p.add_argument("program", nargs=argparse.REMAINDER)
    a = p.parse_args(argv)
    program = a.program[1:] if a.program[:1] == ["--"] else a.program
    if not program:
        print("launch: no program given", file=sys.stderr)
        return 2
    if a.pdeathsig:
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
            print(f"launch: prctl(PR_SET_PDEATHSIG) failed: errno {ctypes.get_errno()}",
                  file=sys.stderr)
        if a.parent and os.getppid() != a.parent:
            return 1  # the owner died before the tie was made
    if a.cgroup is not None:
        (a.cgroup / "cgroup.procs").write_text("0")
    if a.rlimit_as is not None:
        resource.setrlimit(resource.RLIMIT_AS, (a.rlimit_as, a.rlimit_as))
    if a.cpuset:
        os.sched_setaffinity(0, {int(c) for c in a.cpuset.split(",")})
    if a.affinity_cores is not None:
        allowed = sorted(os.sched_getaffinity(0))
        os.sched_setaffinity(0, allowed[: max(1, a.affinity_cores)])
    try:
        os.execv(program[0], program)
    except OSError as exc:
        print(f"launch: cannot execute {program[0]!r}: {exc.strerror}", file=sys.stderr)
    return 127


if __name__ == "__main__":
    sys.exit(main())
