"""Step ``binaries``: ``cargo build --release`` of targets/refprover into the cache's target dir."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from proofdiff.artifacts import build_steps
from proofdiff.artifacts.cache_dir import locked
from proofdiff.artifacts.build_errors import BuildError, StepReport
from proofdiff.artifacts.content_keys import file_digest

#: The binaries the image ships, all built from targets/refprover.
BINARIES: tuple[str, ...] = ("refprover", "paramgen", "seal", "verify", "bench")

#: Deadline of one cargo build in seconds (a cold release build takes tens of minutes on a
#: small machine).
CARGO_TIMEOUT_S = 3600.0


def _mtimes(paths: dict[str, Path]) -> dict[str, float]:
    return {n: p.stat().st_mtime if p.is_file() else 0.0 for n, p in paths.items()}


#: What cargo's own fingerprint reads from the environment besides the sources and the toolchain.
_CARGO_ENV = ("RUSTFLAGS", "CARGO_ENCODED_RUSTFLAGS", "CARGO_BUILD_RUSTFLAGS", "RUSTC_WRAPPER",
              "CC", "CFLAGS", "PROTOC")


def build_key(crate_dir: Path, argv: Sequence[str], cargo: str) -> str:
    """What a build's output depends on, as one SHA-256 hex: every file of the crate (bar
    ``target/``) with its bytes, the cargo arguments, ``rustc -vV`` of cargo's toolchain and
    the environment cargo reads (:data:`_CARGO_ENV`). Equal keys and untouched binaries mean
    cargo would do nothing: its no-op still takes seconds per call, which every run would pay."""
    h = hashlib.sha256()
    for path in sorted(crate_dir.rglob("*")):
        rel = path.relative_to(crate_dir)
        if path.is_file() and "target" not in rel.parts:
            h.update(f"{rel.as_posix()}\0{file_digest(path)}\n".encode())
    h.update("\0".join(argv[1:]).encode())
    rustc = Path(cargo).with_name("rustc")
    try:
        version = subprocess.run([str(rustc) if rustc.is_file() else "rustc", "-vV"],
                                 capture_output=True, timeout=60, check=False).stdout
    except (OSError, subprocess.TimeoutExpired):
        version = b"unknown"
    h.update(version)
    h.update(json.dumps({k: os.environ.get(k) for k in _CARGO_ENV}).encode())
    return h.hexdigest()


def _stat(bins: Mapping[str, Path]) -> dict[str, list[int]]:
    return {n: [p.stat().st_size, p.stat().st_mtime_ns] if p.is_file() else []
            for n, p in bins.items()}


def _stamp_matches(stamp: Path, key: str, bins: Mapping[str, Path]) -> bool:
    """Whether the last build recorded in ``stamp`` had ``key`` and left ``bins`` as they are."""
    try:
        doc = json.loads(stamp.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return bool(doc.get("key") == key and doc.get("binaries") == _stat(bins)
                and all(p.is_file() for p in bins.values()))


def build_binaries(
    crate_dir: Path,
    root: Path,
    *,
    log: build_steps.Log,
    timeout_s: float = CARGO_TIMEOUT_S,
    target_dir: Path | None = None,
    only: Sequence[str] = (),
    step: str = "binaries",
) -> tuple[dict[str, Path], StepReport]:
    """Build the refprover crate and return ``{binary name: path}`` and the step report.

    Runs ``cargo build --release --locked`` (without ``--locked`` when there is no Cargo.lock)
    with ``CARGO_TARGET_DIR=<root>/cargo-target`` (or ``target_dir``); cargo is incremental, so
    an unchanged crate takes about a second. A build whose :func:`build_key` and binaries equal
    the last one's (the stamp ``<target>/.proofdiff-<step>.json``) runs no cargo at all.
    ``only``: build just these binaries (``--bin``);
    default every one of BINARIES. Installs protoc (Debian protobuf-compiler, needed by
    build.rs) as root when missing. The full output goes to ``<root>/logs/cargo-<step>.log``.

    Raises:
        BuildError: cargo is missing, the build failed or ran past ``timeout_s`` seconds
            (default 3600), or a binary in BINARIES was not produced.
    """
    start = time.monotonic()
    cargo = build_steps.which("cargo")
    if cargo is None:
        raise BuildError(
            "binaries",
            "`cargo` not found on PATH or in ~/.cargo/bin",
            "install Rust: `curl --proto '=https' --tlsv1.2 -sSf https://sh.rustup.rs "
            "| sh -s -- -y`, then `. ~/.cargo/env`",
        )
    if not (crate_dir / "Cargo.toml").is_file():
        raise BuildError("binaries", f"no Cargo.toml in {crate_dir}", "run from a proofdiff clone")
    logs = root / "logs"
    target = target_dir or root / "cargo-target"
    names = tuple(only) or BINARIES
    bins = {name: target / "release" / name for name in names}
    argv = [cargo, "build", "--release"]
    if (crate_dir / "Cargo.lock").is_file():
        argv.append("--locked")
    for name in only:
        argv += ["--bin", name]
    log_name = "cargo-build.log" if step == "binaries" else f"cargo-{step}.log"
    env = {**os.environ, "CARGO_TARGET_DIR": str(target)}
    env["PATH"] = f"{Path(cargo).parent}{os.pathsep}{env.get('PATH', '')}"
    fix = (
        f"read {logs / log_name}; reproduce with "
        f"`cd {crate_dir} && CARGO_TARGET_DIR={target} cargo build --release`"
    )
    if build_steps.which("cc") is None:
        fix += "; no C compiler found: `sudo apt-get install -y build-essential`"
    stamp = target / f".proofdiff-{step}.json"
    key = build_key(crate_dir, argv, cargo)
    if _stamp_matches(stamp, key, bins):
        total = sum(p.stat().st_size for p in bins.values())
        return bins, StepReport(step, "reused", time.monotonic() - start,
                                f"{len(bins)} binaries, {total / 1e6:.1f} MB in "
                                f"{target / 'release'} (sources and toolchain unchanged)")
    before = _mtimes(bins)
    with locked(root, "cargo", step, timeout_s):
        if (crate_dir / "build.rs").is_file():  # tonic-build runs protoc
            build_steps.ensure_apt_tool(step, "protoc", "protobuf-compiler", log=log, log_dir=logs)
        log(f"  {step}: {' '.join(argv[1:])} (CARGO_TARGET_DIR={target})")
        build_steps.run(
            step,
            argv,
            timeout_s=timeout_s,
            log=log,
            fix=fix,
            log_path=logs / log_name,
            cwd=crate_dir,
            env=env,
            heartbeat_s=120.0,
        )
        missing = [name for name, path in bins.items() if not path.is_file()]
        if missing:
            raise BuildError(
                step,
                f"cargo build succeeded but did not produce {missing} in {target / 'release'}",
                f"add the binaries {list(BINARIES)} to {crate_dir} (src/bin/<name>.rs or "
                "[[bin]])",
            )
        # under the lock: another tree's build that follows must not find this key on its
        # binaries (a stamp written after the lock could name this key on that build's output)
        stamp.write_text(json.dumps({"key": key, "binaries": _stat(bins)}), encoding="utf-8")
    changed = _mtimes(bins) != before
    total = sum(p.stat().st_size for p in bins.values())
    return bins, StepReport(
        step,
        "built" if changed else "reused",
        time.monotonic() - start,
        f"{len(bins)} binaries, {total / 1e6:.1f} MB in {target / 'release'}",
    )
