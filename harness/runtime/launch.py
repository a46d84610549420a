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

import os
import resource
import sys
from collections.abc import Sequence

__all__ = ["main"]

_PR_SET_PDEATHSIG = 1
#: SIGKILL on Linux (not from the signal module, which imports enum at every start)
_SIGKILL = 9
#: Options without a value, and with one (``--name VALUE`` or ``--name=VALUE``). Parsed by
#: hand: this runs before every daemon and tool a process runtime starts, and argparse with
#: what it imports (re, enum, pathlib, shutil) would be most of its start time.
_FLAGS = ("--pdeathsig",)
_VALUED = ("--parent", "--cgroup", "--rlimit-as", "--cpuset", "--affinity-cores")
_USAGE = ("usage: python -m proofdiff.runtime.launch [--pdeathsig] [--parent PID] "
          "[--cgroup DIR] [--rlimit-as BYTES] [--cpuset CPU,CPU...] [--affinity-cores N] "
          "-- PROGRAM ARGS...")


def _parse(argv: Sequence[str]) -> tuple[dict[str, str], list[str]]:
    """``({option: value ('' for a flag)}, program argv)``.

    Raises:
        ValueError: an unknown option, or one without its value.
    """
    opts: dict[str, str] = {}
    rest = list(argv)
    while rest:
        arg = rest.pop(0)
        if arg == "--":
            return opts, rest
        if arg in _FLAGS:
            opts[arg] = ""
            continue
        name, eq, value = arg.partition("=")
        if name in _VALUED:
            if not eq:
                if not rest:
                    raise ValueError(f"{name} needs a value")
                value = rest.pop(0)
            opts[name] = value
            continue
        if arg.startswith("-"):
            raise ValueError(f"unknown option {arg}")
        return opts, [arg, *rest]
    return opts, []


def main(argv: Sequence[str] | None = None) -> int:
    """Apply the options and exec the program (returns only on failure)."""
    try:
        a, program = _parse(sys.argv[1:] if argv is None else argv)
        parent = int(a.get("--parent", "0"))
        rlimit_as = int(a["--rlimit-as"]) if "--rlimit-as" in a else None
        cores = int(a["--affinity-cores"]) if "--affinity-cores" in a else None
        cpuset = {int(c) for c in a["--cpuset"].split(",")} if a.get("--cpuset") else None
    except ValueError as exc:
        print(f"{_USAGE}\nlaunch: {exc}", file=sys.stderr)
        return 2
    if not program:
        print("launch: no program given", file=sys.stderr)
        return 2
    if "--pdeathsig" in a:
        import ctypes  # only here: no other option needs it

        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(_PR_SET_PDEATHSIG, _SIGKILL, 0, 0, 0) != 0:
            print(f"launch: prctl(PR_SET_PDEATHSIG) failed: errno {ctypes.get_errno()}",
                  file=sys.stderr)
        if parent and os.getppid() != parent:
            return 1  # the owner died before the tie was made
    if "--cgroup" in a:
        with open(os.path.join(a["--cgroup"], "cgroup.procs"), "w", encoding="ascii") as f:
            f.write("0")
    if rlimit_as is not None:
        resource.setrlimit(resource.RLIMIT_AS, (rlimit_as, rlimit_as))
    if cpuset:
        os.sched_setaffinity(0, cpuset)
    if cores is not None:
        allowed = sorted(os.sched_getaffinity(0))
        os.sched_setaffinity(0, allowed[: max(1, cores)])
    try:
        os.execv(program[0], program)
    except OSError as exc:
        print(f"launch: cannot execute {program[0]!r}: {exc.strerror}", file=sys.stderr)
    return 127


if __name__ == "__main__":
    sys.exit(main())
