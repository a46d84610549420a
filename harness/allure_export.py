"""Allure extras for a run's ``allure-results/`` (DESIGN.md §6): ``environment.properties``
(image tag and digest, run id, profiles) and ``categories.json`` (failures grouped by divergence
kind), written beside the results allure-pytest writes. Attachments per test are added by the
suites themselves (``allure.attach``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

__all__ = ["CATEGORIES", "write_allure_extras"]

#: Allure categories: each matches failed tests by the message the oracles write.
CATEGORIES: list[dict[str, Any]] = [
    {"name": "Validity divergence (bench valid, prod not)", "matchedStatuses": ["failed"],
     "messageRegex": ".*validity diverged.*"},
    {"name": "Invalid proofs (independent verifier rejected a partition)",
     "matchedStatuses": ["failed"], "messageRegex": ".*(invalid|did not verify).*"},
    {"name": "Daemon could not run (start, readiness, params)",
     "matchedStatuses": ["failed", "broken"],
     "messageRegex": ".*(did not answer GetStatus|exited with code|params are mounted|not found).*"},
    {"name": "Lost jobs (deadline passed)", "matchedStatuses": ["failed"],
     "messageRegex": ".*(LOST|DEADLINE_EXCEEDED).*"},
]


def write_allure_extras(run_dir: Path, summary: dict[str, Any]) -> Path | None:
    """Write ``environment.properties`` and ``categories.json`` into ``run_dir/allure-results``.

    Returns the directory, or None when allure-pytest wrote no results there (nothing to add).
    """
    results = Path(run_dir) / "allure-results"
    if not results.is_dir():
        return None
    image = summary.get("image", {})
    env = {
        "proofdiff.run_id": summary.get("run_id", ""),
        "image.tag": image.get("tag", ""),
        "image.digest": image.get("digest", ""),
        "profiles": ",".join(summary.get("profiles", {})),
        "verdict": summary.get("verdict", ""),
    }
    lines = [f"{k}={str(v).replace(chr(10), ' ')}" for k, v in env.items()]
    (results / "environment.properties").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (results / "categories.json").write_text(json.dumps(CATEGORIES, indent=2), encoding="utf-8")
    return results
