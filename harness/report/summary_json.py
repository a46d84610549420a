"""summary.json read back: a differential's result from its report (the writer,
:mod:`proofdiff.report.writer`, writes it)."""

from __future__ import annotations

from pathlib import Path

from proofdiff.model import serde
from proofdiff.model.result import SCHEMA_VERSION, DifferentialResult

__all__ = ["load_summary"]


def load_summary(path: str | Path) -> DifferentialResult:
    """Read a summary.json (the file or its run dir) back into a DifferentialResult.

    Raises:
        proofdiff.model.serde.SerdeError: missing, not JSON, or another schema version.
    """
    p = Path(path)
    p = p / "summary.json" if p.is_dir() else p
    head = serde.decode(p.read_bytes() if p.exists() else b"{}", dict, where=str(p))
    if head.get("schema_version") != SCHEMA_VERSION:
        raise serde.SerdeError(f"{p}: schema_version {head.get('schema_version')!r}; this "
                               f"proofdiff reads {SCHEMA_VERSION}",
                               fix="pass a run dir (or its summary.json) written by this "
                                   "proofdiff version")
    return serde.read(p, DifferentialResult)
