"""Reports: ``reports/<run-id>/summary.json`` (versioned schema) and a minimal ``index.html``.

:func:`build_summary` turns profiles, runs and errors into the summary dict (computing the
validity outcomes, the divergences against the first profile and the config deltas);
:func:`write_report` writes both files. Callers write a report even when the run failed
(``finally`` blocks, pytest's sessionfinish), so ``errors`` may be all there is.

Schema (``schema_version`` 1)::

    {schema_version, run_id, created_unix_s, verdict: "pass"|"diverged"|"invalid"|"error",
     verdict_line, image: {tag, digest}, profiles: {name: effective settings},
     runs: [RunResult without the raw inspect, plus inspect_view],
     outcomes: [ValidityOutcome], divergences: [Divergence],
     config_delta: [ConfigDelta first profile -> each other], start_to_ready_ms: {name: ms},
     errors: [str], pytest: {exitstatus, passed, failed, errors, skipped},
     oracles: [OracleRecord] (issue-3 suites), oracle_divergences: [...],
     catch_matrix: {...} (only in a `proofdiff catch-matrix` report)}
"""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import jinja2

from .config_delta import inspect_view, profile_delta, profile_view
from .oracle_records import OracleRecord, oracle_divergences
from .oracles import Divergence, ValidityOutcome, diverge, validity
from .profiles import Profile
from .records import JobStatus, RunResult

__all__ = ["SCHEMA_VERSION", "build_summary", "load_summary", "side_by_side", "write_report"]

SCHEMA_VERSION = 1
_TEMPLATES = Path(__file__).parent / "templates"


def _median(xs: Sequence[float]) -> float | None:
    return float(statistics.median(xs)) if xs else None


def side_by_side(summary: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One row per run for tables: profile, workload, outcome, proofs (completed), valid,
    failed (not completed), invalid, unverified (completed, proof not obtainable), median_ms
    (client wall of COMPLETED jobs, ms), start_to_ready_ms."""
    outcomes = {(o["profile"], o["workload"]): o for o in summary.get("outcomes", [])}
    rows = []
    for run in summary.get("runs", []):
        o = outcomes.get((run["profile"], run["workload"]), {})
        walls = [j["wall_ms"] for j in run["jobs"] if j["status"] == JobStatus.COMPLETED.value]
        rows.append({
            "profile": run["profile"], "workload": run["workload"],
            "outcome": o.get("outcome", "error"), "jobs": len(run["jobs"]),
            "proofs": o.get("completed", 0), "valid": o.get("valid", 0),
            "failed": o.get("failed", 0), "invalid": o.get("invalid", 0),
            "unverified": o.get("unverified", 0),
            "median_ms": _median(walls), "start_to_ready_ms": run.get("start_to_ready_ms"),
        })
    return rows


def _verdict(outcomes: Sequence[ValidityOutcome], divergences: Sequence[Divergence],
             errors: Sequence[str]) -> tuple[str, str]:
    if divergences:
        return "diverged", "; ".join(d.headline() for d in divergences)
    if errors or not outcomes or any(o.outcome == "error" for o in outcomes):
        first = errors[0] if errors else next(
            (e for o in outcomes for e in o.errors), "no run completed")
        return "error", f"ERROR: {first.splitlines()[0] if first else 'unknown'}"
    if any(not o.ok for o in outcomes):
        return "invalid", "no divergence, but " + "; ".join(
            f"{o.profile}={o.outcome}" for o in outcomes if not o.ok)
    n = sum(o.valid for o in outcomes)
    return "pass", f"SAME: every proof verified ({n} proofs, profiles " + ", ".join(
        sorted({o.profile for o in outcomes})) + " agree)"


def build_summary(*, run_id: str, profiles: Mapping[str, Profile], runs: Sequence[RunResult],
                  errors: Sequence[str] = (), image_tag: str = "", image_digest: str = "",
                  pytest_info: Mapping[str, Any] | None = None,
                  created_unix_s: float | None = None, oracles: Sequence[OracleRecord] = (),
                  catch_matrix: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The summary dict (see the module docstring). Divergences and deltas compare the first
    profile (the baseline, e.g. ``bench``) with each other profile, per workload. ``oracles``
    (records of the other suites) can turn a ``pass``/``invalid`` verdict into ``diverged``
    (an oracle fails on a profile but not on the baseline) or ``invalid`` (fails on both)."""
    outcomes = [validity(r) for r in runs]
    names = list(profiles)
    deltas = [profile_delta(profiles[names[0]], profiles[n]) for n in names[1:]]
    by_key = {(o.profile, o.workload): o for o in outcomes}
    divergences = []
    for wl in dict.fromkeys(o.workload for o in outcomes):
        base = by_key.get((names[0], wl)) if names else None
        for d in deltas:
            other = by_key.get((d.right, wl))
            if base is not None and other is not None:
                div = diverge(base, other, d)
                if div is not None:
                    divergences.append(div)
    verdict, line = _verdict(outcomes, divergences, errors)
    if not runs and oracles and not errors:  # no proving suite ran (e.g. --suite preflight)
        verdict, line = "pass", (f"SAME: every oracle passed ({len(oracles)} checks on "
                                 f"{', '.join(sorted({r.profile for r in oracles}))})")
    odivs = oracle_divergences(oracles, names[0], deltas) if names else []
    failed = [r for r in oracles if r.outcome == "fail"]
    if odivs and verdict in ("pass", "invalid", "diverged"):
        heads = "; ".join(d["headline"] for d in odivs)
        verdict, line = "diverged", (f"{line}; {heads}" if verdict == "diverged" else heads)
    elif failed and verdict == "pass":
        verdict, line = "invalid", "no divergence, but " + "; ".join(
            f"{r.suite}/{r.oracle} failed on {r.profile or 'all'}" for r in failed)
    run_docs = []
    for r in runs:
        doc = r.to_json()
        doc["inspect_view"] = inspect_view(doc.pop("inspect")) if r.inspect else {}
        run_docs.append(doc)
    return {
        "schema_version": SCHEMA_VERSION,
        "run_id": run_id,
        "created_unix_s": time.time() if created_unix_s is None else created_unix_s,
        "verdict": verdict,
        "verdict_line": line,
        "image": {"tag": image_tag, "digest": image_digest},
        "profiles": {n: {**profile_view(p), "source": p.source, "overrides": list(p.overrides)}
                     for n, p in profiles.items()},
        "runs": run_docs,
        "outcomes": [o.to_json() for o in outcomes],
        "divergences": [d.to_json() for d in divergences],
        "config_delta": [d.to_json() for d in deltas],
        "start_to_ready_ms": {r.profile: r.start_to_ready_ms for r in runs
                              if r.start_to_ready_ms is not None},
        "errors": list(errors),
        "pytest": dict(pytest_info or {}),
        "oracles": [r.to_json() for r in oracles],
        "oracle_divergences": odivs,
        **({"catch_matrix": dict(catch_matrix)} if catch_matrix else {}),
    }


def write_report(report_dir: str | Path, summary: Mapping[str, Any]) -> Path:
    """Write ``<report_dir>/<run_id>/summary.json`` and ``index.html``; returns the run dir."""
    out = Path(report_dir) / str(summary["run_id"])
    out.mkdir(parents=True, exist_ok=True)
    tmp = out / "summary.json.tmp"
    tmp.write_text(json.dumps(summary, indent=2, sort_keys=False, default=str) + "\n",
                   encoding="utf-8")
    tmp.replace(out / "summary.json")
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(_TEMPLATES),
                             autoescape=jinja2.select_autoescape(["html", "j2"]),
                             undefined=jinja2.StrictUndefined)
    html = env.get_template("index.html.j2").render(s=summary, rows=side_by_side(summary))
    (out / "index.html").write_text(html, encoding="utf-8")
    return out


def load_summary(path: str | Path) -> dict[str, Any]:
    """Read a ``summary.json`` (a file or its run dir).

    Raises:
        ValueError: not a summary of a schema version this code reads.
    """
    p = Path(path)
    if p.is_dir():
        p = p / "summary.json"
    doc: dict[str, Any] = json.loads(p.read_text(encoding="utf-8"))
    if doc.get("schema_version") != SCHEMA_VERSION:
        raise ValueError(f"{p}: schema_version {doc.get('schema_version')!r}, this proofdiff "
                         f"reads {SCHEMA_VERSION}")
    return doc
