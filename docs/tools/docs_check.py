"""``make docs-check``: the documentation checked against the code.

    python docs/tools/docs_check.py [--root DIR] [--baseline FILE] [--list-dated FILE]
                                    [--prune-baseline]

Fails (exit 1), naming the file, the line and the fix, when:

* (a) a generated page (``docs/reference/*.md``, ``docs/measurements.md``) is not what
  ``build_docs.py`` writes now, or a record under ``benchmarks/results/`` does not validate;
* (b) a ``proofdiff`` command line of a Markdown page does not parse with proofdiff's own
  parser (:mod:`check_examples` states the convention for synopses and placeholders);
* (c) a link inside the repository does not reach its file or heading (:mod:`check_links`);
* (d) a comment or docstring of the code holds a date or a commit id (:mod:`check_dated`).

A finding listed in the baseline file (``docs/tools/docs-check.baseline``: the offenders known
when the check was written) is printed as a warning and does not fail; an entry that no longer
occurs is reported so that it can be removed (``--prune-baseline``, which never adds one).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BASELINE = Path("docs/tools/docs-check.baseline")

FIX_PAGE = "run `make docs` and commit the pages (never edit a generated page by hand)"
FIX_EXAMPLE = ("write a command line that `proofdiff COMMAND --help` accepts; placeholders in "
               "CAPITALS or <angle brackets>, optional parts of a synopsis in [brackets] "
               "(docs/tools/README.md)")
FIX_LINK = "point the link at an existing file, and an anchor at an existing heading"
FIX_DATED = ("say what the code does and why, in the present tense; a date, commit or figure "
             "goes into CHANGELOG.md or a record under benchmarks/results/")


@dataclass(frozen=True)
class Finding:
    """One thing wrong: the ``check`` (``page``, ``record``, ``example``, ``link``, ``dated``),
    where (``path``, ``line``), what, the fix, and its baseline ``key`` ('' = it can never be
    baselined)."""

    check: str
    path: str
    line: int
    message: str
    fix: str
    key: str = ""

    def show(self) -> str:
        return f"{self.path}:{self.line}: [{self.check}] {self.message}"


def check_pages(root: Path) -> list[Finding]:
    """(a): every generated page against what the generator writes now."""
    from build_docs import REFERENCE, build
    from measurements import RecordError

    with tempfile.TemporaryDirectory(prefix="proofdiff-docs-") as tmp:
        try:
            fresh = {p.relative_to(tmp) for p in build(root, Path(tmp))}
        except RecordError as exc:
            return [Finding("record", exc.file, 1, exc.cause, exc.fix)]
        out = []
        on_disk = {p.relative_to(root) for p in (root / REFERENCE).glob("*.md")}
        for rel in sorted(on_disk - fresh):
            out.append(Finding("page", rel.as_posix(), 1, "not written by build_docs.py: "
                               "docs/reference/ holds generated pages only",
                               "move it to docs/guide/ or docs/design/, or remove it"))
        for rel in sorted(fresh):
            want = (Path(tmp) / rel).read_text(encoding="utf-8").splitlines()
            if not (root / rel).is_file():
                out.append(Finding("page", rel.as_posix(), 1, "missing", FIX_PAGE))
                continue
            have = (root / rel).read_text(encoding="utf-8").splitlines()
            if have != want:
                n = next((i for i, (a, b) in enumerate(zip(have, want)) if a != b),
                         min(len(have), len(want)))
                got = have[n] if n < len(have) else "(end of file)"
                new = want[n] if n < len(want) else "(end of file)"
                out.append(Finding("page", rel.as_posix(), n + 1, f"out of date: the "
                                   f"generator writes {new[:80]!r} here, the page has "
                                   f"{got[:80]!r}", FIX_PAGE))
        return sorted(out, key=lambda f: (f.path, f.line))


def check_examples(root: Path) -> list[Finding]:
    """(b): every proofdiff command line of every page."""
    from check_examples import check_example, examples_in, lenient_parser
    from markdown_scan import markdown_files

    parser = lenient_parser()
    out = []
    for page in markdown_files(root):
        for ex in examples_in(page, root):
            why = check_example(parser, ex)
            if why:
                text = " ".join(ex.text.split())
                out.append(Finding("example", ex.path, ex.line, f"`{text[:120]}` does not "
                                   f"parse: {why}", FIX_EXAMPLE,
                                   f"example\t{ex.path}\t{text}"))
    return out


def check_links(root: Path) -> list[Finding]:
    """(c): every link inside the repository."""
    from check_links import broken_links
    from markdown_scan import markdown_files

    cache: dict[Path, set[str]] = {}
    return [Finding("link", b.path, b.line, f"link {b.target!r}: {b.why}", FIX_LINK,
                    f"link\t{b.path}\t{b.target}")
            for page in markdown_files(root) for b in broken_links(page, root, cache)]


def check_dated(root: Path) -> list[Finding]:
    """(d): dates and commit ids in comments and docstrings."""
    from check_dated import dated_comments

    return [Finding("dated", d.path, d.line, f"{d.kind} {d.found} in a {d.where}", FIX_DATED,
                    f"dated\t{d.path}\t{d.found}\t{d.text}")
            for d in dated_comments(root)]


CHECKS = {"pages": check_pages, "examples": check_examples, "links": check_links,
          "dated": check_dated}


def read_baseline(path: Path) -> Counter[str]:
    """The baseline's entries (tab-separated keys, one a line; ``#`` lines are comments)."""
    if not path.is_file():
        return Counter()
    return Counter(line for line in path.read_text(encoding="utf-8").splitlines()
                   if line.strip() and not line.startswith("#"))


def split_known(findings: list[Finding], baseline: Counter[str],
                ) -> tuple[list[Finding], list[Finding], Counter[str]]:
    """``(failures, known, unused)``: the findings the baseline does not list, those it does,
    and its entries that matched nothing."""
    left = Counter(baseline)
    failures, known = [], []
    for f in findings:
        if f.key and left[f.key] > 0:
            left[f.key] -= 1
            known.append(f)
        else:
            failures.append(f)
    return failures, known, +left


def prune(path: Path, unused: Counter[str]) -> None:
    """Remove ``unused`` entries (with their multiplicity) from the baseline at ``path``."""
    left = Counter(unused)
    kept = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if left[line] > 0:
            left[line] -= 1
            continue
        kept.append(line)
    path.write_text("\n".join(kept) + "\n", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", type=Path, default=ROOT, help="the checkout. Default: this one")
    ap.add_argument("--baseline", type=Path, default=None,
                    help=f"known offenders. Default: ROOT/{BASELINE}")
    ap.add_argument("--list-dated", type=Path, metavar="FILE",
                    help="also write every dated comment (baselined or not) to FILE")
    ap.add_argument("--prune-baseline", action="store_true",
                    help="remove the baseline's entries that no longer occur (adds none)")
    args = ap.parse_args(argv)
    root = args.root.resolve()
    baseline_path = args.baseline or root / BASELINE
    findings = {name: check(root) for name, check in CHECKS.items()}
    flat = [f for fs in findings.values() for f in fs]
    failures, known, unused = split_known(flat, read_baseline(baseline_path))
    if args.list_dated:
        args.list_dated.write_text("".join(f"{f.show()}: {f.key.split(chr(9))[-1]}\n"
                                           for f in findings["dated"]), encoding="utf-8")
    for f in known:
        print(f"warning (known, {BASELINE.name}): {f.show()}")
    for f in failures:
        print(f"{f.show()}\n    fix: {f.fix}")
    if unused:
        print(f"note: {sum(unused.values())} baseline entries no longer occur: remove them "
              "(python docs/tools/docs_check.py --prune-baseline)")
        if args.prune_baseline:
            prune(baseline_path, unused)
    counts = ", ".join(f"{name} {len(fs)}" for name, fs in findings.items())
    print(f"docs-check: {len(failures)} failure(s), {len(known)} known (baseline); findings "
          f"by check: {counts}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
