"""The exit codes, stated once (proofdiff.cli.exit_codes): every command has its table, the
table names exactly the codes of the command's own vocabulary where it has one, and each
command's ``--help`` ends with that table."""

from __future__ import annotations

import subprocess
import sys

import pytest

from proofdiff.bisect.bisect_result import EXIT as BISECT_EXIT
from proofdiff.cli import _parser
from proofdiff.cli.exit_codes import COMMAND_EXITS, exit_help
from proofdiff.cli.history_append import EXIT_HISTORY
from proofdiff.gate.gate_result import Decision
from proofdiff.model.status import EXIT_CODES
from proofdiff.nightly.nightly_result import NightDecision


def _commands() -> list[str]:
    import argparse

    parser = _parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return list(sub.choices)


def test_every_command_has_its_table() -> None:
    assert list(COMMAND_EXITS) == _commands()
    for name, codes in COMMAND_EXITS.items():
        numbers = [c.code for c in codes]
        assert numbers == sorted(set(numbers)) and all(c.meaning for c in codes), name


@pytest.mark.parametrize(("command", "vocabulary"), [
    ("run", {*EXIT_CODES.values(), EXIT_HISTORY}),
    ("gate", {d.exit_code for d in Decision} | {EXIT_HISTORY}),
    ("bisect", set(BISECT_EXIT.values())),
    ("nightly", {d.exit_code for d in NightDecision}),
])
def test_the_table_names_the_vocabularys_codes(command: str, vocabulary: set[int]) -> None:
    assert {c.code for c in COMMAND_EXITS[command]} == vocabulary


def test_help_ends_with_the_table() -> None:
    out = subprocess.run([sys.executable, "-m", "proofdiff", "reap", "--help"],
                         capture_output=True, text=True, timeout=60, check=True).stdout
    assert out.rstrip().endswith(exit_help("reap").rstrip())
    assert "exit codes:\n  0    " in exit_help("gate")
    with pytest.raises(KeyError):
        exit_help("no-such-command")
