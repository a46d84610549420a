"""``proofdiff``: the command line.

    proofdiff run [--profiles SET|FILE] [--profile NAME]... [--workload NAME]... [--suite NAME]...
                  [--image TAG]... [--set PROFILE.KEY=VALUE]... [--report-dir DIR] [--full]
                  [--allowlist FILE] [--notify URL] [--bisect [--bisect-budget S]]
    proofdiff build [--workload NAME]... [--crate DIR]
    proofdiff reap [--run-id ID]
    proofdiff catch-matrix [--fault NAME]... [--repeat-clean N] [--targeted] [--clean-only]
    proofdiff gate --candidate IMAGE --baseline IMAGE [--profile NAME]... [--budget-s S]
                   [--allowlist FILE] [--notify URL]
    proofdiff bisect [--profiles SET|FILE] --good bench --bad prod [--workload W]
                     [--oracle SUITE/ORACLE] [--bisect-budget S]
    proofdiff repro --from-report DIR | --config FILE [--env-file F] ... [--bisect]
    proofdiff nightly [run options] [--history URL|FILE] [--allowlist FILE] [--notify URL]
    proofdiff history [--history URL|FILE] [--metric NAME] [--profile P] [--workload W]
                      [--machine FP|HOST] [--last N] [--html FILE]

Every command's exit codes are stated once, in :mod:`proofdiff.cli.exit_codes`: its ``--help``
epilog and ``docs/reference/exit-codes.md`` are rendered from there.

``--help`` and a usage error load only the options table and argparse: every command imports
what it runs (the core, scipy, the docker SDK, grpc, rich) when it runs
(``tests/unit/test_cli_imports.py`` checks it).
"""

from __future__ import annotations

import argparse
import atexit
import os
import sys
import threading
from collections.abc import Sequence
from typing import Any, NoReturn

from proofdiff.cli import (cmd_bisect, cmd_catch_matrix, cmd_gate, cmd_history, cmd_maintenance,
                           cmd_nightly, cmd_repro, cmd_run)
from proofdiff.cli.exit_codes import exit_help

__all__ = ["EXIT_INTERRUPTED", "EXIT_UNEXPECTED", "entry", "finish", "main"]


class _Parser(argparse.ArgumentParser):
    """A command's parser: no abbreviated options (``allow_abbrev=False``)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="proofdiff", description="Differential regression testing "
                                "of proof-generation daemons: bench vs prod on one image.",
                                epilog=cmd_run.EXIT_HELP, formatter_class=argparse.RawDescriptionHelpFormatter,
                                allow_abbrev=False)
    # no abbreviations: `--no-tim` or `--bisect` must not silently stand for another option
    sub = p.add_subparsers(dest="cmd", required=True, parser_class=_Parser)
    cmd_run.add_arguments(sub.add_parser("run", help="run the suites on every profile, print the "
                                     "verdict", epilog=cmd_run.EXIT_HELP,
                                     formatter_class=argparse.RawDescriptionHelpFormatter))
    cmd_maintenance.add_build(sub.add_parser("build", help="build or reuse the refprover image, "
                                         "params and workloads (cached by content)",
                                         epilog=exit_help("build"),
                                         formatter_class=argparse.RawDescriptionHelpFormatter))
    cmd_maintenance.add_reap(sub.add_parser("reap", help="remove containers left by crashed runs",
                                        epilog=exit_help("reap"),
                                        formatter_class=argparse.RawDescriptionHelpFormatter))
    cmd_catch_matrix.add_arguments(sub.add_parser("catch-matrix", help="the fault catalog self-test: "
                                              "clean + every fault x every suite",
                                              epilog=exit_help("catch-matrix"),
                                              formatter_class=argparse.RawDescriptionHelpFormatter))
    cmd_gate.add_arguments(sub.add_parser("gate", help="candidate vs baseline image: block a push "
                                      "when the candidate is broken or slower",
                                      epilog=cmd_gate.EXIT_HELP,
                                      formatter_class=argparse.RawDescriptionHelpFormatter))
    cmd_bisect.add_arguments(sub.add_parser("bisect", help="the minimal config change from a "
                                        "passing profile to a failing one (delta debugging)",
                                        epilog=cmd_bisect.EXIT_HELP,
                                        formatter_class=argparse.RawDescriptionHelpFormatter))
    cmd_repro.add_arguments(sub.add_parser("repro", help="a regression case from a failing run or "
                                       "from production artifacts", epilog=cmd_repro.EXIT_HELP,
                                       formatter_class=argparse.RawDescriptionHelpFormatter))
    cmd_history.add_arguments(sub.add_parser("history", help="a metric over the stored runs "
                                         "per machine, profile and workload, with change "
                                         "points", epilog=cmd_history.EXIT_HELP,
                                         formatter_class=argparse.RawDescriptionHelpFormatter))
    cmd_nightly.add_arguments(sub.add_parser("nightly", help="tonight's differential with "
                                         "timing, stored in the history and compared with the "
                                         "nights before it", epilog=cmd_nightly.EXIT_HELP,
                                         formatter_class=argparse.RawDescriptionHelpFormatter))
    return p


#: The exit code of a command that met an unexpected exception (ERROR): never 1, which means
#: DIVERGED, FAIL or NEW to the CI that reads it.
EXIT_UNEXPECTED = 3
#: The exit code of a command that a Ctrl-C or SIGTERM reached, at whatever moment.
EXIT_INTERRUPTED = 130


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``proofdiff``; returns the exit code. An exception no command turned into
    its result (a bug of proofdiff's) is printed with its traceback and exits
    :data:`EXIT_UNEXPECTED`; the workflows that write reports (run, gate, nightly) have
    written theirs with it by then. A Ctrl-C or SIGTERM at any moment of the command ends it
    with :data:`EXIT_INTERRUPTED` (:mod:`proofdiff.model.interrupt`: every thread of the run
    sees it, and the report is written first)."""
    args = _parser().parse_args(argv)
    from rich.console import Console  # after parsing: --help and usage errors need no rich

    console = Console(width=max(100, Console().width), highlight=False)
    handler = {"run": cmd_run.run, "build": cmd_maintenance.build, "reap": cmd_maintenance.reap,
               "catch-matrix": cmd_catch_matrix.run_matrix, "gate": cmd_gate.gate,
               "bisect": cmd_bisect.bisect, "repro": cmd_repro.repro,
               "history": cmd_history.history, "nightly": cmd_nightly.nightly}[args.cmd]
    from proofdiff.report.progress import progress_display

    from proofdiff.model import interrupt

    with interrupt.installed():
        try:
            with progress_display(console):
                code = handler(args, console)
        except KeyboardInterrupt:  # one that no workflow turned into its result
            console.print(f"proofdiff {args.cmd}: interrupted", markup=False, highlight=False)
            return EXIT_INTERRUPTED
        except Exception as exc:  # noqa: BLE001 - the last line: exit 3 with the traceback
            from proofdiff.model.errors import unexpected

            console.print(f"proofdiff: ERROR: {unexpected(exc, f'proofdiff {args.cmd}')}",
                          markup=False, highlight=False, soft_wrap=True)
            return EXIT_UNEXPECTED
        # a Ctrl-C or SIGTERM that came while the command ran ends it with 130, whatever
        # result it went on to give: an interrupt is never a normal result
        return EXIT_INTERRUPTED if interrupt.received() else code


def finish(code: int) -> NoReturn:
    """Exit with ``code`` without the interpreter's teardown of every module (grpc, the docker
    SDK, rich: a large part of a short command's wall time): the ``atexit`` handlers run and the streams are flushed first. Where a non-daemon thread is
    still alive, the ordinary exit waits for it."""
    if any(t is not threading.main_thread() and t.is_alive() and not t.daemon
           for t in threading.enumerate()):
        sys.exit(code)
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe: nothing more can be said there
            pass
    os._exit(code)


def entry() -> NoReturn:
    """The ``proofdiff`` program (console script and ``python -m proofdiff``): :func:`main`,
    then :func:`finish`."""
    finish(main())


if __name__ == "__main__":
    entry()
