"""Write the generated documentation: ``docs/reference/*.md`` from the code and
``docs/measurements.md`` from the records under ``benchmarks/results/``.

    python docs/tools/build_docs.py [--out DIR]   # `make docs`; DIR: another root to write to

Every page is a function of the checkout alone (sorted, no timestamps), so a page that is out
of date is found by writing them again and comparing (``docs_check.py``).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = Path("docs/reference")
MEASUREMENTS = Path("docs/measurements.md")


def pages(root: Path) -> dict[Path, Callable[[], str]]:
    """Each generated page (relative to the root) and the function that renders it."""
    from proofdiff.cli import _parser

    from measurements import render_measurements
    from ref_cli import render_commands, render_exit_codes
    from ref_options import render_profile_keys, render_run_options
    from ref_reports import render_reports

    return {REFERENCE / "commands.md": lambda: render_commands(_parser()),
            REFERENCE / "exit-codes.md": render_exit_codes,
            REFERENCE / "profile-keys.md": render_profile_keys,
            REFERENCE / "reports.md": lambda: render_reports(root),
            REFERENCE / "run-options.md": lambda: render_run_options(_parser()),
            MEASUREMENTS: lambda: render_measurements(root)}


def build(root: Path, out: Path) -> list[Path]:
    """Render every page of ``root`` into ``out`` (the same relative paths); returns them."""
    written = []
    for rel, render in pages(root).items():
        dest = out / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_text(render(), encoding="utf-8")
        written.append(dest)
    return written


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=ROOT, help="root to write under. Default: "
                    "this checkout")
    args = ap.parse_args(argv)
    for path in build(ROOT, args.out):
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
