"""The exit codes of every ``proofdiff`` command, stated once: each command's ``--help`` epilog
(:func:`exit_help`) and the reference page ``docs/reference/exit-codes.md`` are both rendered
from :data:`COMMAND_EXITS`.

Where a command's codes come from a vocabulary of its own (the run's
:data:`proofdiff.model.status.EXIT_CODES`, the gate's ``Decision``, the nightly's
``NightDecision``, the bisection's ``EXIT``), the table says what each code means to a caller,
and ``tests/unit/test_exit_codes.py`` checks that it names exactly that vocabulary's codes.
A command line that argparse rejects exits 2 with its usage message before anything runs.

This module imports nothing heavy: ``--help`` reads it.
"""

from __future__ import annotations

import textwrap
from typing import NamedTuple

__all__ = ["COMMAND_EXITS", "ExitCode", "exit_help"]


class ExitCode(NamedTuple):
    """One exit code of a command: ``code`` and what it means to the caller (one sentence)."""

    code: int
    meaning: str


_INTERRUPTED = ExitCode(130, "interrupted (containers removed, the report kept)")

#: Each command's exit codes, in ascending order, by command name (as on the command line).
COMMAND_EXITS: dict[str, tuple[ExitCode, ...]] = {
    "run": (
        ExitCode(0, "SAME: every selected check passed on every profile; with --suite "
                    "regressions: every case as expected (none skipped, unless --allow-skipped)"),
        ExitCode(1, "DIVERGED: an oracle fails on a profile but not on the baseline (the "
                    "first profile); with --suite regressions: a case FAILed or XPASSed"),
        ExitCode(2, "FAILED or INCOMPLETE: failures on every profile alike, or checks skipped "
                    "or left undecided (timing INCONCLUSIVE), no divergence; with --suite "
                    "regressions: a case skipped (unless --allow-skipped), each named"),
        ExitCode(3, "ERROR: the run could not be carried out (profile file, build, Docker, "
                    "daemon start), or --history could not store it (locked, corrupt, newer "
                    "schema, unreachable: the verdict and the history's error are printed, the "
                    "report is written); with --suite regressions: a case ERROR, or no case"),
        ExitCode(130, "interrupted (the run's containers are removed, the report is kept)"),
    ),
    "build": (
        ExitCode(0, "built or reused everything (each step and what it did is printed); with "
                    "--pin-verifier: the verifier is pinned in verifier.lock"),
        ExitCode(3, "the build failed, or no refprover crate was found (the step, the cause "
                    "and the fix are printed)"),
        ExitCode(130, "interrupted (partial results are discarded: nothing half-written is "
                      "reused)"),
    ),
    "reap": (
        ExitCode(0, "the labelled containers are removed (their names printed; none is fine)"),
        ExitCode(3, "no Docker engine answered"),
    ),
    "catch-matrix": (
        ExitCode(0, "every row is ok: each fault caught by the suite meant for it with the "
                    "baseline clean, and every clean row judged and passed"),
        ExitCode(1, "a row is not ok: a fault missed, a false alarm, the baseline failing "
                    "too, or a clean row with a check that judged nothing (each row's verdict "
                    "is printed)"),
    ),
    "gate": (
        ExitCode(0, "pass: the candidate is clean on every profile and shown less than "
                    "--max-slowdown slower than the baseline on every timing metric (WITHIN; "
                    "faster included)"),
        ExitCode(1, "fail: a check fails on the candidate, bench and prod diverge on it, it is "
                    "shown slower than the practical margin on a timing metric (WORSE), or an "
                    "allowlist entry has expired"),
        ExitCode(2, "inconclusive: something was not judged: a check skipped on the candidate, "
                    "a profile without records, a timing metric undecided within --budget-s or "
                    "its round cap, or one whose noise cannot decide --max-slowdown (each "
                    "reason is reported)"),
        ExitCode(3, "the gate could not run (the reason is named: a missing image, a bad "
                    "allowlist or profile, no Docker, the baseline's own verifier disagrees "
                    "with the pinned one, or the pinned verifier accepts a proof with a byte "
                    "flipped), or --history could not store it (the report is still written)"),
        _INTERRUPTED,
    ),
    "bisect": (
        ExitCode(0, "found: the minimal failure-inducing change is printed, each item with "
                    "both values"),
        ExitCode(1, "nothing to bisect: the good profile already fails, or the bad one passes "
                    "(which, and the evidence, are printed)"),
        ExitCode(2, "unresolved: a flaky oracle, probes that broke (named), a change not "
                    "confirmed 1-minimal, or --bisect-budget ran out (the probes so far are "
                    "kept)"),
        ExitCode(3, "the bisection could not run (the reason is named: a profile, an oracle, "
                    "an image)"),
        _INTERRUPTED,
    ),
    "repro": (
        ExitCode(0, "the case reproduced and was written (regressions/<id>/case.toml)"),
        ExitCode(1, "it did not reproduce: every check passed; no case written"),
        ExitCode(3, "bad input (a config, env file or workload that does not read, a missing "
                    "vk or image): the cause and the fix are named"),
        ExitCode(130, "interrupted"),
    ),
    "history": (
        ExitCode(0, "shown; no regression among the change points (or none), every series long "
                    "enough to judge"),
        ExitCode(1, "a change point in the worse direction (a regression) was flagged"),
        ExitCode(2, "undecided: a series is too short to judge (a change point needs 2 runs on "
                    "each side) and no regression was flagged; or nothing to show: the history "
                    "holds no runs, or none recorded the metric"),
        ExitCode(3, "the history could not be read (locked, corrupt, newer schema, "
                    "unreachable), or an unknown metric"),
    ),
    "nightly": (
        ExitCode(0, "nothing new since the earlier nights on this machine (still failing, "
                    "flaky and fixed checks are reported, not new)"),
        ExitCode(1, "a new failure (a check that passed the last night that ran it) or a new "
                    "slowdown (a change point in latency, throughput or start-to-ready time)"),
        ExitCode(2, "nothing new, but tonight a check was skipped, undecided or without an "
                    "outcome, a check of the last night has no record tonight (missing), or no "
                    "check passed"),
        ExitCode(3, "the night could not run (a profile file, the build, Docker, a host of the "
                    "hosts file that did not answer), not be compared (the history locked, "
                    "corrupt, of a newer schema or unreachable), or a check could not be "
                    "judged tonight (an ERROR record: a daemon that did not start, a broken "
                    "verifier); the report is still written"),
        _INTERRUPTED,
    ),
}


def exit_help(command: str, width: int = 94) -> str:
    """The ``exit codes:`` epilog of ``proofdiff COMMAND --help``: one code per paragraph, its
    meaning wrapped at ``width`` columns.

    Raises:
        KeyError: ``command`` is not a proofdiff command.
    """
    lines = ["exit codes:"]
    for code, meaning in COMMAND_EXITS[command]:
        lines.append(textwrap.fill(meaning, width=width, initial_indent=f"  {code:<5}",
                                   subsequent_indent=" " * 7))
    return "\n".join(lines)
