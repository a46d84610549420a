"""A warm build runs no cargo (its no-op would still cost seconds of every run): the
binaries step compares a key over the crate's files, the arguments and the toolchain with the
last build's stamp, and calls cargo only when they differ or a binary was touched.

Real cargo on a one-file crate in tmp_path (about a second per build; no dependencies).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from proofdiff.artifacts import build_steps
from proofdiff.artifacts.binaries import build_binaries

pytestmark = pytest.mark.skipif(build_steps.which("cargo") is None,
                                reason="no cargo on PATH or in ~/.cargo/bin: install Rust")


def _crate(tmp_path: Path, text: str) -> Path:
    crate = tmp_path / "crate"
    (crate / "src" / "bin").mkdir(parents=True, exist_ok=True)
    (crate / "Cargo.toml").write_text('[package]\nname = "stamped"\nversion = "0.1.0"\n'
                                      'edition = "2021"\n', encoding="utf-8")
    (crate / "src" / "bin" / "verify.rs").write_text(text, encoding="utf-8")
    return crate


def test_a_warm_build_runs_no_cargo_and_a_changed_source_builds_again(tmp_path: Path) -> None:
    crate = _crate(tmp_path, 'fn main() { println!("one"); }\n')
    root = tmp_path / "cache"

    def build() -> tuple[Path, str, str]:
        bins, report = build_binaries(crate, root, log=lambda _l: None, only=("verify",),
                                      step="stamp-test")
        return bins["verify"], report.action, report.detail

    binary, action, _ = build()
    assert action == "built" and binary.is_file()
    build()  # cargo wrote Cargo.lock: the crate changed, so this build runs cargo (--locked)
    log = root / "logs" / "cargo-stamp-test.log"
    cargo_ran = log.stat().st_mtime_ns
    first = binary.stat().st_mtime_ns

    _, action, detail = build()
    assert action == "reused" and "sources and toolchain unchanged" in detail, detail
    assert log.stat().st_mtime_ns == cargo_ran, "cargo ran on a warm build"
    assert binary.stat().st_mtime_ns == first

    _crate(tmp_path, 'fn main() { println!("two"); }\n')
    _, action, detail = build()
    assert action == "built" and "unchanged" not in detail, detail
    assert log.stat().st_mtime_ns != cargo_ran

    os.utime(binary, ns=(first, first))  # a binary touched since the stamp: cargo decides
    _, action, detail = build()
    assert "unchanged" not in detail, detail
