"""Check (d): no date and no commit id in a comment or docstring of the code.

Comments and docstrings say what the code does and why, in the present tense; dates, commit ids
and measured figures belong in CHANGELOG.md and the records under benchmarks/results/. Read:

* Python under :data:`PY_DIRS`: comments (``tokenize``) and docstrings, every string that
  stands alone as a statement (``ast``: module, class, function and attribute docstrings);
* Rust under :data:`RUST_DIRS`: ``//`` comments (``///`` and ``//!`` included).

A date is ``YYYY-MM-DD`` (a real month and day). A commit id is 7 to 40 hex digits that name a
commit of this repository (``git cat-file --batch-check``, so that a hex constant or a content
digest is not one); outside a git checkout no word is taken for a commit id.
"""

from __future__ import annotations

import ast
import io
import re
import subprocess
import tokenize
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

__all__ = ["PY_DIRS", "RUST_DIRS", "Dated", "dated_comments"]

PY_DIRS = ("harness", "fixtures", "suites", "tests", "benchmarks")
RUST_DIRS = ("targets/refprover/src",)

_DATE = re.compile(r"(?<!\d)(?:19|20)\d\d-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12]\d|3[01])(?!\d)")
_HEX = re.compile(r"(?<![0-9A-Za-z_])[0-9a-f]{7,40}(?![0-9A-Za-z_])")


@dataclass(frozen=True)
class Dated:
    """One offender: ``path`` (relative to the root), ``line``, what was found (``kind``
    ``date`` or ``commit``, and ``found``), where (``comment`` or ``docstring``), and the source
    line, stripped."""

    path: str
    line: int
    kind: str
    found: str
    where: str
    text: str


def _python_texts(source: str) -> Iterator[tuple[int, str, str]]:
    """``(line, text, where)`` of every comment and docstring line of a Python source."""
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT:
            yield tok.start[0], tok.string, "comment"
    lines = source.splitlines()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and \
                isinstance(node.value.value, str):
            for n in range(node.lineno, (node.end_lineno or node.lineno) + 1):
                yield n, lines[n - 1], "docstring"


def _rust_comment(line: str) -> str | None:
    """The ``//`` comment of one Rust line ('' when none), strings skipped."""
    in_str, i = False, 0
    while i < len(line):
        c = line[i]
        if in_str:
            if c == "\\":
                i += 1
            elif c == '"':
                in_str = False
        elif c == '"':
            in_str = True
        elif line.startswith("//", i):
            return line[i:]
        i += 1
    return None


def _rust_texts(source: str) -> Iterator[tuple[int, str, str]]:
    for n, line in enumerate(source.splitlines(), start=1):
        comment = _rust_comment(line)
        if comment:
            yield n, comment, "comment"


def _sources(root: Path) -> Iterator[tuple[Path, str]]:
    for d in PY_DIRS:
        yield from ((p, "py") for p in sorted((root / d).rglob("*.py"))
                    if "__pycache__" not in p.parts)
    for d in RUST_DIRS:
        yield from ((p, "rs") for p in sorted((root / d).rglob("*.rs")))


def _commits(root: Path, words: Iterable[str]) -> set[str]:
    """The ``words`` that name a commit of the repository at ``root`` (none outside git)."""
    todo = sorted(set(words))
    if not todo:
        return set()
    try:
        proc = subprocess.run(["git", "-C", str(root), "cat-file", "--batch-check"],
                              input="".join(f"{w}^{{commit}}\n" for w in todo),
                              capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return set()
    answers = proc.stdout.splitlines()
    if proc.returncode != 0 or len(answers) != len(todo):
        return set()
    return {w for w, a in zip(todo, answers) if a.split()[1:2] == ["commit"]}


def dated_comments(root: Path) -> list[Dated]:
    """Every date and commit id in a comment or docstring under ``root`` (module docstring),
    in file and line order."""
    found: list[tuple[Path, int, str, str, str, str]] = []
    for path, lang in _sources(root):
        source = path.read_text(encoding="utf-8")
        if not (_DATE.search(source) or _HEX.search(source)):
            continue  # nothing to find anywhere in it: no need to parse it
        try:
            texts = list(_python_texts(source) if lang == "py" else _rust_texts(source))
        except (SyntaxError, tokenize.TokenError):
            continue  # a file Python cannot read is the tests' and mypy's to report
        lines = source.splitlines()
        for n, text, where in dict.fromkeys(texts):
            found += [(path, n, "date", m.group(0), where, lines[n - 1].strip())
                      for m in _DATE.finditer(text)]
            found += [(path, n, "commit", m.group(0), where, lines[n - 1].strip())
                      for m in _HEX.finditer(_DATE.sub(" ", text))]
    commits = _commits(root, (f[3] for f in found if f[2] == "commit"))
    out = {Dated(p.relative_to(root).as_posix(), n, kind, word, where, text)
           for p, n, kind, word, where, text in found if kind == "date" or word in commits}
    return sorted(out, key=lambda d: (d.path, d.line, d.found))
