"""One bisection budget, two spellings: ``--bisect-budget`` (documented) and
``--bisect-budget-s`` (its alias) set the same option on every command that bisects, through
proofdiff's own parser: ``run``, ``bisect`` and ``repro`` (the run-option table's
``bisect_budget_s``) and ``nightly`` (the budget of the night's bisections, 0 allowed). Each
``--help`` lists the documented spelling as the option and names the alias in its text."""

from __future__ import annotations

import re

import pytest

from proofdiff.cli import _parser

#: Each command that takes the budget, with the other arguments it needs to parse.
COMMANDS = {
    "run": ["run"],
    "bisect": ["bisect", "--good", "bench", "--bad", "prod"],
    "repro": ["repro", "--id", "ID", "--title", "T", "--from-report", "reports/r"],
    "nightly": ["nightly"],
}


@pytest.mark.parametrize("command", sorted(COMMANDS))
@pytest.mark.parametrize("flag", ["--bisect-budget", "--bisect-budget-s"])
def test_both_spellings_set_the_same_budget(command: str, flag: str) -> None:
    args = _parser().parse_args([*COMMANDS[command], flag, "600"])
    assert args.bisect_budget_s == 600.0, (command, flag)


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_help_lists_the_documented_spelling_and_names_the_alias(
        command: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "400")  # no wrapping: argparse breaks lines at hyphens
    sub = next(a for a in _parser()._actions if a.dest == "cmd")
    text = sub.choices[command].format_help()  # type: ignore[attr-defined]
    assert re.search(r"^  --bisect-budget SECONDS\b", text, re.M), text  # an option line
    assert not re.search(r"^  --bisect-budget-s\b", text, re.M), text
    assert "--bisect-budget-s" not in text.split("\n\n")[0]  # nor in the usage
    assert "--bisect-budget-s is the same" in " ".join(text.split()), text


def test_only_the_nightly_takes_a_zero_budget(capsys: pytest.CaptureFixture[str]) -> None:
    args = _parser().parse_args(["nightly", "--bisect-budget-s", "0"])
    assert args.bisect_budget_s == 0.0
    with pytest.raises(SystemExit) as exc:  # one bisection with no time is a usage error
        _parser().parse_args(["run", "--bisect", "--bisect-budget", "0"])
    assert exc.value.code == 2
    assert "--bisect-budget" in capsys.readouterr().err
