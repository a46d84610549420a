"""docs/design/architecture.md names every module of the three packages, and nothing else.

The page has one `## <folder>/` section per package folder (harness/, fixtures/, suites/); each
module row starts with the module's path relative to that folder in backticks. A module added,
moved or removed without its row fails here, naming the row to write or delete.
"""
from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "design" / "architecture.md"
PACKAGES = ("harness", "fixtures", "suites")
ROW = re.compile(r"^\|\s*`([^`]+\.py)`\s*\|")


def _modules_on_page(text: str) -> dict[str, set[str]]:
    """{folder: {module path relative to it}} from the page's module rows."""
    named: dict[str, set[str]] = {p: set() for p in PACKAGES}
    folder = None
    for line in text.splitlines():
        heading = re.match(r"^## (\w+)/\s*$", line)
        if heading:
            folder = heading.group(1) if heading.group(1) in PACKAGES else None
            continue
        row = ROW.match(line)
        if folder and row:
            named[folder].add(row.group(1))
    return named


def _modules_in_tree() -> dict[str, set[str]]:
    return {p: {str(f.relative_to(ROOT / p)) for f in (ROOT / p).rglob("*.py")
                if "proto" not in f.relative_to(ROOT / p).parts
                and "__pycache__" not in f.parts}
            for p in PACKAGES}


def test_the_architecture_page_names_every_module_and_only_those() -> None:
    on_page = _modules_on_page(PAGE.read_text())
    in_tree = _modules_in_tree()
    missing = sorted(f"{p}/{m}" for p in PACKAGES for m in in_tree[p] - on_page[p])
    stale = sorted(f"{p}/{m}" for p in PACKAGES for m in on_page[p] - in_tree[p])
    assert not missing, (f"{len(missing)} module(s) have no row in {PAGE.relative_to(ROOT)}: "
                         f"{missing}; add a row `| `path` | what it does |` under its layer")
    assert not stale, (f"{PAGE.relative_to(ROOT)} names module(s) that do not exist: {stale}; "
                       "delete or rename their rows")


def test_the_page_check_sees_a_module_left_out(tmp_path: Path) -> None:
    text = PAGE.read_text()
    dropped = "\n".join(line for line in text.splitlines()
                        if not line.startswith("| `core/session.py`"))
    assert "core/session.py" in _modules_on_page(text)["harness"]
    assert "core/session.py" not in _modules_on_page(dropped)["harness"]
