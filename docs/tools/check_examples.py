"""Check (b): every ``proofdiff`` command line in the Markdown pages parses with proofdiff's own
parser (``proofdiff.cli._parser()``, the object ``proofdiff`` itself parses with).

The convention (docs/tools/README.md):

* A line of a fenced ``sh``/``bash``/``console``/``shell`` block (or one without a language)
  is what a user copies: it is parsed whole, as ``proofdiff`` would parse it, required options
  included. ``\\`` continuations are joined; ``$ `` prompts, ``# comments``, ``VAR=value``
  prefixes and ``.venv/bin/`` or ``python -m`` before ``proofdiff`` are understood.
* A line with ``[`` or ``...`` is a usage synopsis: each option in it must be an option of
  that command, and each value given must be one the option accepts; ``|`` there separates
  alternatives. Inline code (`` `proofdiff gate --rounds N` ``) is a mention: checked the same
  way, option by option.
* A placeholder stands for a valid value (or, in place of the command, for any command:
  ``proofdiff COMMAND --help``): a word in capitals (``FILE``, ``NAME=PATH``, ``S``),
  ``<angle brackets>`` or a ``$VARIABLE``. It passes any option's type and choices; any other
  value must pass them (``--workload-file inputs.json`` fails: that flag takes ``NAME=PATH``).
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import io
import re
import shlex
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from markdown_scan import code_lines, prose_blocks

__all__ = ["Example", "check_example", "examples_in", "lenient_parser"]

SHELL_LANGS = {"", "sh", "bash", "shell", "console", "zsh"}
_SEPARATORS = {"&&", "||", ";", "|", "&"}
_PLACEHOLDER_WORD = re.compile(r"[A-Z][A-Z0-9_]*(?:[=.|/:,-]+[A-Z][A-Z0-9_]*)*")
_ANGLED = re.compile(r"<[^<>\n]+>")
_SPAN = re.compile(r"(`+)(.+?)(?<!`)\1(?!`)", re.S)


@dataclass(frozen=True)
class Example:
    """One ``proofdiff`` command line of a page: where (``path`` relative to the root, ``line``),
    the text as written, its arguments after ``proofdiff``, and how it is checked (``whole``:
    parsed whole; else option by option)."""

    path: str
    line: int
    text: str
    args: tuple[str, ...]
    whole: bool


def is_placeholder(value: str) -> bool:
    """Whether ``value`` stands for a value (module docstring) rather than being one."""
    return "PLACEHOLDER" in value or "$" in value or bool(_PLACEHOLDER_WORD.fullmatch(value))


def _tokens(text: str) -> list[str]:
    text = _ANGLED.sub("PLACEHOLDER", text)
    try:
        return shlex.split(text, comments=True)
    except ValueError:  # an unbalanced quote in prose-like text: words are enough
        return text.split()


def _invocations(text: str, synopsis: bool) -> Iterator[list[str]]:
    """The argument lists of each ``proofdiff`` in one shell line (its segments split at
    ``&&``, ``;``, ``|`` ...; in a synopsis ``|`` separates alternatives, not commands)."""
    text = re.sub(r"^\s*\$\s+", "", text)
    seps = _SEPARATORS - ({"|"} if synopsis else set())
    segment: list[str] = []
    for tok in [*_tokens(text), ";"]:
        if tok not in seps:
            segment.append(tok)
            continue
        while segment and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", segment[0]):
            segment.pop(0)
        if segment and (segment[0] == "proofdiff" or segment[0].endswith("/bin/proofdiff")):
            yield segment[1:]
        elif len(segment) > 2 and Path(segment[0]).name.startswith("python") and \
                segment[1:3] == ["-m", "proofdiff"]:
            yield segment[3:]
        segment = []


def _is_synopsis(text: str) -> bool:
    return "[" in text or "..." in text or "\u2026" in text


def examples_in(path: Path, root: Path) -> list[Example]:
    """Every ``proofdiff`` command line of the page at ``path`` (module docstring)."""
    text = path.read_text(encoding="utf-8")
    rel = path.relative_to(root).as_posix()
    out = []
    for cl in code_lines(text):
        if cl.lang not in SHELL_LANGS:
            continue
        synopsis = _is_synopsis(cl.text)
        out += [Example(rel, cl.line, cl.text.strip(), tuple(args), not synopsis)
                for args in _invocations(cl.text, synopsis)]
    for block in prose_blocks(text):
        for m in _SPAN.finditer(block.text):
            span = m.group(2).replace("\n", " ").replace("\\|", "|").strip()
            # `proofdiff` alone in prose names the program; a command line has a command
            out += [Example(rel, block.line_of(m.start()), span, tuple(args), False)
                    for args in _invocations(span, True) if args]
    return out


class _Choices(list[Any]):
    """An option's choices that also admit a placeholder."""

    def __contains__(self, value: object) -> bool:
        return (isinstance(value, str) and is_placeholder(value)) or super().__contains__(value)


def _lenient(parse: Callable[[str], Any]) -> Callable[[str], Any]:
    @functools.wraps(parse)
    def typed(text: str) -> Any:
        try:
            return parse(text)
        except (argparse.ArgumentTypeError, TypeError, ValueError):
            if is_placeholder(text):
                return text
            raise
    return typed


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def lenient_parser() -> argparse.ArgumentParser:
    """proofdiff's parser, its options' types and choices made to admit placeholders."""
    from proofdiff.cli import _parser

    parser = _parser()
    for p in (parser, *_subcommands(parser).values()):
        for action in p._actions:
            if callable(action.type):
                action.type = _lenient(action.type)
            if action.choices is not None and not isinstance(action, argparse._SubParsersAction):
                action.choices = _Choices(action.choices)
    return parser


def _parse_whole(parser: argparse.ArgumentParser, args: list[str]) -> str | None:
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        try:
            parser.parse_args(args)
        except SystemExit as exc:
            if exc.code not in (0, None):
                return err.getvalue().strip().splitlines()[-1]
    return None


def _strip(token: str) -> str:
    return token.lstrip("[(").rstrip(".]),\u2026")


def _parse_options(parser: argparse.ArgumentParser, args: list[str]) -> str | None:
    cmds = _subcommands(parser)
    words = [w for w in (_strip(a) for a in args) if w and w != "|"]
    prog = "proofdiff"
    flags = parser._option_string_actions
    if words and not words[0].startswith("-"):
        if is_placeholder(words[0]):  # `proofdiff COMMAND --help`: an option of any command
            flags = {f: a for p in reversed(cmds.values())
                     for f, a in p._option_string_actions.items()}
        elif words[0] not in cmds:
            return f"no command {words[0]!r} (commands: {', '.join(cmds)})"
        else:
            flags = cmds[words[0]]._option_string_actions
        prog, words = f"proofdiff {words[0]}", words[1:]
    i = 0
    while i < len(words):
        word = words[i]
        i += 1
        if not word.startswith("-") or word == "-":
            continue
        flag, eq, value = word.partition("=")
        action = flags.get(flag)
        if action is None:
            return f"{prog}: unknown option {flag}"
        if action.nargs == 0:
            continue
        if not eq and i < len(words) and _is_value(words[i]):
            value, i = words[i], i + 1
        if value:
            problem = _check_value(action, value)
            if problem:
                return f"{prog}: argument {flag}: {problem}"
    return None


def _is_value(word: str) -> bool:
    """Whether argparse reads ``word`` as an option's value: not an option (a word with a space
    after a dash is a value, as argparse decides)."""
    return not word.startswith("-") or " " in word


def _check_value(action: argparse.Action, value: str) -> str | None:
    try:
        got = action.type(value) if callable(action.type) else value
    except argparse.ArgumentTypeError as exc:
        return str(exc)
    except (TypeError, ValueError):
        return f"invalid {getattr(action.type, '__name__', 'value')} value: {value!r}"
    if action.choices is not None and got not in action.choices:
        return f"invalid choice: {value!r} (choose from {', '.join(map(str, action.choices))})"
    return None


def check_example(parser: argparse.ArgumentParser, ex: Example) -> str | None:
    """Why ``ex`` does not parse, in the parser's words; ``None`` when it does."""
    return (_parse_whole if ex.whole else _parse_options)(parser, list(ex.args))
