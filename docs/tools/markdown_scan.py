"""The parts of a Markdown file that the docs checks read: the pages to check, fenced code
blocks (with their info string), the prose outside them (for inline code spans and links) and
the headings' anchors as GitHub makes them.

Line numbers are 1-based, as an editor shows them.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

__all__ = ["CodeLine", "Prose", "anchors", "code_lines", "markdown_files", "prose_blocks",
           "slug"]

#: Folders never scanned: tools' and builds' output, the runs' report folders under reports/,
#: and the tests' data.
SKIP_DIRS = {".git", ".venv", ".typecheck", "node_modules", "target", "__pycache__",
             ".pytest_cache", ".mypy_cache"}
SKIP_PREFIXES = ("tests/data/", "reports/")


def _skipped(rel_dir: str) -> bool:
    """Whether the folder at ``rel_dir`` (relative, ``/``-separated) is left out; reports/
    itself is read (its README), the runs' folders in it are not."""
    rel = f"{rel_dir}/"
    return rel != "reports/" and rel.startswith(SKIP_PREFIXES)

_FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})\s*([^`\s]*)")


@dataclass(frozen=True)
class CodeLine:
    """One logical line of a fenced code block: ``text`` with ``\\`` continuations joined,
    ``line`` where it starts, ``lang`` the block's info string ('' when none)."""

    text: str
    line: int
    lang: str


@dataclass(frozen=True)
class Prose:
    """A paragraph outside code blocks: its lines joined with newlines, and the line of its
    first line (an offset's line is ``line + text.count('\\n', 0, offset)``)."""

    text: str
    line: int

    def line_of(self, offset: int) -> int:
        """The file line of character ``offset`` of :attr:`text`."""
        return self.line + self.text.count("\n", 0, offset)


def markdown_files(root: Path) -> list[Path]:
    """Every ``*.md`` under ``root`` that the checks read, sorted (module constants say which
    are left out)."""
    out: list[Path] = []
    for folder, dirs, files in os.walk(root):
        here = Path(folder)
        dirs[:] = [d for d in dirs if d not in SKIP_DIRS and
                   not _skipped((here / d).relative_to(root).as_posix())]
        out.extend(here / name for name in files if name.endswith(".md"))
    return sorted(out)


def _blocks(lines: list[str]) -> Iterator[tuple[str, int, str | None]]:
    """``(line text, line number, lang)``: lang is the enclosing fence's info string, or
    ``None`` outside fences; fence lines themselves are not yielded."""
    fence: str | None = None
    lang = ""
    for i, raw in enumerate(lines, start=1):
        m = _FENCE.match(raw)
        if fence is None and m:
            fence, lang = m.group(2), m.group(3).lower()
            continue
        if fence is not None and m and m.group(2)[0] == fence[0] and \
                len(m.group(2)) >= len(fence) and not m.group(3):
            fence = None
            continue
        yield raw, i, (lang if fence is not None else None)


def code_lines(text: str) -> list[CodeLine]:
    """The logical lines of every fenced code block in ``text``."""
    out: list[CodeLine] = []
    pending: tuple[str, int, str] | None = None
    for raw, i, lang in _blocks(text.splitlines()):
        if lang is None:
            pending = None
            continue
        if pending is not None:
            joined, start, _ = pending
            raw, i = joined + " " + raw.strip(), start
        if raw.rstrip().endswith("\\"):
            pending = (raw.rstrip()[:-1].rstrip(), i, lang)
            continue
        pending = None
        out.append(CodeLine(raw, i, lang))
    return out


def prose_blocks(text: str) -> list[Prose]:
    """The paragraphs outside fenced code blocks (a blank line ends one)."""
    out: list[Prose] = []
    cur: list[str] = []
    start = 0
    for raw, i, lang in _blocks(text.splitlines()):
        if lang is not None or not raw.strip():
            if cur:
                out.append(Prose("\n".join(cur), start))
            cur = []
            continue
        if not cur:
            start = i
        cur.append(raw)
    if cur:
        out.append(Prose("\n".join(cur), start))
    return out


_INLINE_LINK = re.compile(r"\[([^\]]*)\]\([^)]*\)")


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: its text without Markdown markup, lower case, every
    character but letters, digits, ``-``, ``_`` and spaces dropped, spaces made ``-``."""
    text = _INLINE_LINK.sub(r"\1", heading)
    text = re.sub(r"<[^>]+>", "", text).replace("`", "").replace("*", "")
    text = re.sub(r"(?<!\w)_+|_+(?!\w)", "", text)  # _emphasis_, not snake_case
    return re.sub(r"[^\w\- ]", "", text.strip().lower()).replace(" ", "-")


_ATX = re.compile(r"^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
_SETEXT = re.compile(r"^ {0,3}(=+|-+)\s*$")
_HTML_ANCHOR = re.compile(r"<a\s+(?:name|id)=\"([^\"]+)\"")


def anchors(text: str) -> set[str]:
    """Every anchor a link may name in ``text``: each heading's :func:`slug` (a repeated one
    also as ``slug-1``, ``slug-2``, ..., as GitHub numbers them) and ``<a name|id="...">``."""
    seen: dict[str, int] = {}
    out: set[str] = set()
    prev: str | None = None
    for raw, _i, lang in _blocks(text.splitlines()):
        if lang is not None:
            prev = None
            continue
        out.update(_HTML_ANCHOR.findall(raw))
        heading = None
        m = _ATX.match(raw)
        if m:
            heading = m.group(2)
        elif prev and prev.strip() and _SETEXT.match(raw) and not prev.lstrip().startswith("|"):
            heading = prev.strip()
        prev = raw
        if heading is None:
            continue
        base = slug(heading)
        n = seen.get(base, 0)
        seen[base] = n + 1
        out.add(base if n == 0 else f"{base}-{n}")
    return out
