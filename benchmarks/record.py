"""The one way a benchmark keeps what it measured: a JSON record under benchmarks/results/.

    from record import write_record   # a script under benchmarks/ (its folder is on sys.path)
    write_record("params-check", "params integrity check of wpost-2k, cold and cached",
                 {"cold": (0.41, "s"), "cached": (0.0004, "s")})

The record says what was measured, by which command, when (UTC), on which machine (the CPU
model from /proc/cpuinfo, the cores this process may use as ``nproc`` counts them, MemTotal,
the OS from /etc/os-release, the GPUs NVML names where a driver answers) and at which commit
(``git rev-parse --short HEAD``; a tree with uncommitted changes to tracked files is said in
``notes``). Its shape is ``benchmarks/record.schema.json``; ``docs/measurements.md`` is rendered
from the records (``make docs``).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path

__all__ = ["RESULTS", "SCHEMA", "machine", "write_record"]

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "results"
SCHEMA = REPO / "benchmarks" / "record.schema.json"

Value = float | int | str | bool


def _field(path: str, key: str) -> str:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError:
        return ""
    m = re.search(rf"^{re.escape(key)}\s*[:=]\s*\"?(.*?)\"?\s*$", text, re.M)
    return m.group(1) if m else ""


def _gpus() -> str:
    """The GPUs' names through NVML ('' when no driver answers)."""
    try:
        import pynvml  # type: ignore[import-not-found, import-untyped, unused-ignore]
        pynvml.nvmlInit()
    except Exception:  # noqa: BLE001 - no library, no driver, no GPU: none to name
        return ""
    try:
        names = [pynvml.nvmlDeviceGetName(pynvml.nvmlDeviceGetHandleByIndex(i))
                 for i in range(pynvml.nvmlDeviceGetCount())]
    finally:
        pynvml.nvmlShutdown()
    return ", ".join(n.decode() if isinstance(n, bytes) else str(n) for n in names)


def machine() -> str:
    """This machine in one line: ``CPU model, N cores, M GiB, OS[, GPUs]``."""
    cpu = _field("/proc/cpuinfo", "model name") or "unknown CPU"
    kib = _field("/proc/meminfo", "MemTotal").split()
    mem = f"{int(kib[0]) / 2**20:.0f} GiB" if kib else "unknown memory"
    parts = [cpu, f"{len(os.sched_getaffinity(0))} cores", mem,
             _field("/etc/os-release", "PRETTY_NAME") or sys.platform]
    gpus = _gpus()
    return ", ".join(parts + ([gpus] if gpus else []))


def _git(*args: str) -> str:
    return subprocess.run(["git", "-C", str(REPO), *args], capture_output=True, text=True,
                          timeout=30, check=True).stdout.strip()


def _slug(text: str, limit: int = 40) -> str:
    words = re.sub(r"[^a-z0-9]+", " ", text.lower()).split()
    out = ""
    for w in words:
        if out and len(out) + 1 + len(w) > limit:
            break
        out = f"{out}-{w}" if out else w[:limit]
    return out or "record"


def write_record(topic: str, what: str, figures: Mapping[str, tuple[Value, str]], *,
                 benchmark: str | None = None, notes: str = "",
                 results_dir: Path | None = None) -> Path:
    """Write one record and return its path (``<topic>-<what, slugged>-<UTC time>.json``).

    Args:
        topic: lower-case words joined by ``-`` (``gate-power``); the page's group.
        what: one line: what was measured. figures: ``{name: (value, unit)}`` ('' = no unit).
        benchmark: the command that measured it. Default: this script and its arguments.
        notes: optional, short. results_dir: default ``benchmarks/results/``.

    Raises:
        subprocess.CalledProcessError: not a git checkout (a record needs its commit).
        jsonschema.ValidationError: the record does not match ``record.schema.json`` (a bad
            topic, an empty ``figures``, ...), checked where jsonschema is installed.
    """
    now = datetime.now(UTC)
    if _git("status", "--porcelain", "--untracked-files=no"):
        notes = "; ".join(n for n in (notes, "the tree had uncommitted changes") if n)
    script = Path(sys.argv[0]).resolve()
    shown = script.relative_to(REPO).as_posix() if script.is_relative_to(REPO) else script.name
    doc: dict[str, object] = {
        "schema": 1, "topic": topic, "what": what,
        "benchmark": benchmark or " ".join([shown, *map(shlex.quote, sys.argv[1:])]),
        "date": now.strftime("%Y-%m-%dT%H:%M:%SZ"), "machine": machine(),
        "commit": _git("rev-parse", "--short", "HEAD"),
        "figures": {name: {"value": value, "unit": unit}
                    for name, (value, unit) in figures.items()},
    }
    if notes:
        doc["notes"] = notes
    try:
        import jsonschema  # type: ignore[import-untyped]
    except ImportError:  # the dev extra's; docs-check validates the record later either way
        pass
    else:
        jsonschema.validate(doc, json.loads(SCHEMA.read_text(encoding="utf-8")))
    out_dir = results_dir or RESULTS
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{topic}-{_slug(what)}-{now.strftime('%Y%m%dT%H%M%SZ')}.json"
    path.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    print(f"record: {path.relative_to(REPO) if path.is_relative_to(REPO) else path}",
          file=sys.stderr)
    return path
