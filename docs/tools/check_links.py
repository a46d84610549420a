"""Check (c): every link inside the repository, from a Markdown page, reaches its target.

A link is ``[text](target)``, ``![alt](target)``, a reference definition ``[name]: target`` or
``<a href="target">``, outside code blocks and inline code. Links with a scheme
(``https:``, ``mailto:``) are left alone. A target is a path relative to the page (``/path``:
relative to the repository root) that must exist, file or folder; ``page.md#anchor`` also
needs a heading whose GitHub anchor is ``anchor`` (``#anchor`` alone: on the same page).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote

from markdown_scan import anchors, prose_blocks

__all__ = ["BrokenLink", "broken_links"]

_LINK = re.compile(r"\]\(\s*<?([^()<>\s]+(?:\([^()\s]*\))?[^()<>\s]*)>?(?:\s+\"[^\"]*\")?\s*\)")
_REFDEF = re.compile(r"^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+\"[^\"]*\")?\s*$", re.M)
_HREF = re.compile(r"<a\s[^>]*href=\"([^\"]+)\"")
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
_SPAN = re.compile(r"(`+).+?(?<!`)\1(?!`)", re.S)


@dataclass(frozen=True)
class BrokenLink:
    """A link that does not reach its target: where (``path`` relative to the root, ``line``),
    the target as written, and why."""

    path: str
    line: int
    target: str
    why: str


def _targets(text: str) -> list[tuple[int, str]]:
    """``(line, target)`` of every link in the page's prose, in the page's order."""
    out = []
    for block in prose_blocks(text):
        bare = _SPAN.sub(lambda m: " " * len(m.group(0)), block.text)  # offsets kept
        found = sorted((m.start(1), m.group(1)) for rx in (_LINK, _REFDEF, _HREF)
                       for m in rx.finditer(bare))
        out += [(block.line_of(start), target) for start, target in found]
    return out


def broken_links(page: Path, root: Path, _anchor_cache: dict[Path, set[str]] | None = None,
                 ) -> list[BrokenLink]:
    """The links of ``page`` that do not reach their target (module docstring)."""
    cache = {} if _anchor_cache is None else _anchor_cache
    rel = page.relative_to(root).as_posix()
    out = []
    for line, target in _targets(page.read_text(encoding="utf-8")):
        if _SCHEME.match(target):
            continue
        path_part, _, anchor = target.partition("#")
        path_part = unquote(path_part)
        base = root if path_part.startswith("/") else page.parent
        dest = Path(os.path.normpath(base / path_part.lstrip("/"))) if path_part else page
        if not dest.is_relative_to(root):
            out.append(BrokenLink(rel, line, target, "points outside the repository"))
            continue
        shown = dest.relative_to(root).as_posix()
        if not dest.exists():
            out.append(BrokenLink(rel, line, target, f"no file or folder {shown}"))
            continue
        if anchor and dest.suffix == ".md" and dest.is_file():
            if dest not in cache:
                cache[dest] = anchors(dest.read_text(encoding="utf-8"))
            if unquote(anchor).lower() not in cache[dest]:
                out.append(BrokenLink(rel, line, target, f"no heading #{anchor} in {shown}"))
    return out
