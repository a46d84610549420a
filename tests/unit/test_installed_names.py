"""What the distribution installs: names that collide with no other PyPI project.

``harness`` and ``fixtures`` are PyPI projects; the repository keeps its folders (``harness/``,
``fixtures/``, ``suites/``) but installs them as ``proofdiff``, ``proofdiff_pytest`` and
``proofdiff_suites`` (pyproject.toml ``package-dir``). Checked from a real wheel in a fresh venv
with PyPI's ``fixtures`` installed beside it: each import finds its own package, and pytest loads
proofdiff's plugin by its entry point. PyPI's ``fixtures`` comes from the package index (this
machine's and CI's); the dependencies come from the project's venv through a path entry (not
its editable finder), so the wheel, not the checkout, is what is imported.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PYPI_FIXTURES = "fixtures==4.3.2"
INSTALLED = {"proofdiff", "proofdiff_pytest", "proofdiff_suites"}

PROBE = """
import json, fixtures, proofdiff, proofdiff_pytest.plugin, proofdiff.cli
print(json.dumps({"fixtures": fixtures.__file__, "has_fixture": hasattr(fixtures, "Fixture"),
                  "proofdiff": proofdiff.__file__,
                  "plugin": proofdiff_pytest.plugin.__file__}))
"""


def _run(argv: list[str], cwd: Path, timeout_s: float = 180) -> str:
    proc = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=timeout_s)
    assert proc.returncode == 0, f"{argv} exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
          "-w", str(out), str(REPO)], cwd=out)
    (path,) = out.glob("proofdiff-*.whl")
    return path


def test_the_wheel_installs_only_proofdiff_names(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as z:
        tops = {n.split("/", 1)[0] for n in z.namelist() if not n.split("/", 1)[0].endswith(
            (".dist-info", ".data"))}
        entry = next(n for n in z.namelist() if n.endswith(".dist-info/entry_points.txt"))
        points = z.read(entry).decode()
    assert tops == INSTALLED, tops
    assert "proofdiff = proofdiff_pytest.plugin" in points and "proofdiff.cli:entry" in points


def test_pypi_fixtures_and_proofdiff_live_side_by_side(wheel: Path, tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", str(venv)], cwd=tmp_path)
    py = venv / "bin" / "python"
    site = Path(_run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                     cwd=tmp_path).strip())
    _run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(site),
          str(wheel), PYPI_FIXTURES], cwd=tmp_path)
    # the dependencies: the project venv's site-packages as a plain path entry, after the
    # fresh venv's own (a path line runs none of that folder's .pth files, so the checkout's
    # editable finder is not loaded)
    (site / "zz-deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    got = json.loads(_run([str(py), "-c", PROBE], cwd=tmp_path))
    assert got["fixtures"].startswith(str(site)) and got["has_fixture"], got
    for name in ("proofdiff", "plugin"):
        assert got[name].startswith(str(site)), (name, got)
    helptext = _run([str(py), "-m", "pytest", "--help"], cwd=tmp_path)
    assert "--proofdiff-profiles" in helptext and "--proofdiff-param-cache" in helptext
    # the history's migrations ship in the wheel: the installed package creates a database
    db = tmp_path / "h.sqlite"
    made = json.loads(_run([str(py), "-c", (
        "import json, proofdiff.history.migrations as m; "
        "from proofdiff.history.database import open_history; "
        f"h = open_history('sqlite:///{db}'); h.close(); print(json.dumps(m.__file__))")],
        cwd=tmp_path))
    assert made.startswith(str(site)), made
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT version_num FROM alembic_version").fetchone() == ("0001",)
