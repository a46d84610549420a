"""``--history``: how a command appends its run and what a history failure does to its exit
code (the same for ``run``, the nightly and the replay of regression cases)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from proofdiff.model.result import DifferentialResult
from proofdiff.model.run_options import RunOptions

if TYPE_CHECKING:  # rich is imported when a command runs, not for --help
    from rich.console import Console

__all__ = ["EXIT_HISTORY", "append_history", "exit_with_history"]

#: The exit code of a run whose history could not be written (the run's own "could not be
#: carried out" code), unless its verdict's code is already as bad or an interrupt's.
EXIT_HISTORY = 3


def append_history(opts: RunOptions, result: DifferentialResult, console: Console, *,
                   command: str) -> bool:
    """Store ``result`` in ``opts.history`` (nothing when '') and print what happened: the
    stored run, or the history's error with its fix (in red). Returns false when it failed."""
    if not opts.history:
        return True
    from rich.text import Text

    from proofdiff.history.store import record_run

    got = record_run(opts.history, opts.report_root, result, command=command)
    console.print(Text(got.line, style="" if got.ok else "bold red"), soft_wrap=True)
    return got.ok


def exit_with_history(code: int, stored: bool) -> int:
    """The exit code of a run with its history outcome: ``code`` when stored (or interrupted,
    130), else at least :data:`EXIT_HISTORY`."""
    return code if stored or code == 130 else max(code, EXIT_HISTORY)
