"""The optional parts of the install (pyproject's extras ``fleet`` and ``postgres``): a command
that needs one that does not import says which extra to install, through the real CLI in a
fresh interpreter whose import of the extra's module fails (``sys.modules[name] = None``, as
where the package is not installed), and the report is still written."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path

from proofdiff.model.extras import EXTRAS

REPO = Path(__file__).resolve().parents[2]

_WITHOUT = """
import sys
for name in sys.argv[1].split(","):
    sys.modules[name] = None  # `import name` raises ImportError, as when it is not installed
sys.argv = ["proofdiff", *sys.argv[2:]]
from proofdiff.cli import entry
entry()
"""


def _proofdiff_without(modules: str, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", _WITHOUT, modules, *argv], capture_output=True,
                          text=True, timeout=120, check=False, env={"COLUMNS": "200",
                                                                   "PATH": "/usr/bin:/bin"})


def test_the_extras_are_the_pyproject_ones() -> None:
    extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]
    for name, modules in EXTRAS.items():
        dists = {re.split(r"[\[<>=!~ ]", d, maxsplit=1)[0] for d in extras[name]}
        assert dists == set(modules), name
    deps = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    assert not [d for d in deps for m in ("distributed", "dask", "asyncssh", "psycopg")
                if d.startswith(m)], "an extra's package is a plain dependency again"


def test_cluster_without_the_fleet_extra_names_it(tmp_path: Path) -> None:
    proc = _proofdiff_without("distributed,dask", "run", "--cluster", "tcp://127.0.0.1:1",
                              "--report-dir", str(tmp_path), "--run-id", "no-fleet")
    out = proc.stdout + proc.stderr
    assert proc.returncode == 3, out
    assert "--cluster/--hosts needs the fleet extra" in out, out
    assert "pip install 'proofdiff[fleet]'" in out, out
    summary = json.loads((tmp_path / "no-fleet" / "summary.json").read_text())
    assert summary["verdict"] == "ERROR" and "proofdiff[fleet]" in summary["errors"][0]


def test_postgres_history_without_the_postgres_extra_names_it(tmp_path: Path) -> None:
    proc = _proofdiff_without("psycopg", "history", "--history",
                              "postgresql://proofdiff@127.0.0.1:1/nights", "--report-dir",
                              str(tmp_path))
    out = proc.stdout + proc.stderr
    assert proc.returncode == 3, out
    assert "needs the postgres extra" in out and "pip install 'proofdiff[postgres]'" in out, out
