"""``make rust-test``'s copy of the crate (proofdiff.artifacts.crate_tests): equal to the
clone's files, and a file whose bytes did not change keeps its mtime, so cargo, which
fingerprints a path crate by its path and mtimes, compiles only what changed."""

from __future__ import annotations

import os
from pathlib import Path

from proofdiff.artifacts.crate_tests import mirror


def _tree(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")


def test_the_copy_equals_the_crate_and_keeps_what_did_not_change(tmp_path: Path) -> None:
    src, dst = tmp_path / "clone" / "refprover", tmp_path / "cache" / "refprover"
    _tree(src, {"Cargo.toml": "[package]", "src/lib.rs": "fn a() {}", "target/x": "built"})
    assert mirror(src, dst) == ["Cargo.toml", "src/lib.rs"]  # target/ is cargo's, not copied
    os.utime(dst / "Cargo.toml", ns=(1, 1))
    # a fresh clone: the same bytes under new mtimes, one file changed, one gone, one new
    (src / "src" / "lib.rs").write_text("fn b() {}", encoding="utf-8")
    (src / "Cargo.toml").touch()
    _tree(dst, {"src/old.rs": "stale"})
    _tree(src, {"build.rs": "fn main() {}"})
    assert mirror(src, dst) == ["build.rs", "src/lib.rs", "src/old.rs"]
    assert (dst / "Cargo.toml").stat().st_mtime_ns == 1  # unchanged bytes: not rewritten
    assert {p.relative_to(dst).as_posix() for p in dst.rglob("*") if p.is_file()} == {
        "Cargo.toml", "build.rs", "src/lib.rs"}
    assert (dst / "src" / "lib.rs").read_text(encoding="utf-8") == "fn b() {}"
    assert mirror(src, dst) == []
