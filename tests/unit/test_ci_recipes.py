"""The CI recipes under ci/ (docs/guide/ci-recipes.md), as a user copies them: valid against the
published schemas that check-jsonschema ships (offline, ``--builtin-schema vendor.*``), clean
under actionlint, and every ``proofdiff`` command line in them, as its shell script expands it,
accepted by proofdiff's own parser. Each validator is also shown to reject a broken copy, so a
pass is a check that ran."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

REPO = Path(__file__).resolve().parents[2]
CI = REPO / "ci"
WORKFLOWS = sorted((CI / "github").glob("*.yml"))
GITLAB = CI / "gitlab" / "proofdiff.gitlab-ci.yml"
BIN = Path(sys.executable).parent


def _tool(name: str) -> str:
    path = shutil.which(name, path=str(BIN)) or shutil.which(name)
    assert path, f"{name} is not installed: `make setup` installs it (requirements.lock)"
    return path


def _run(*argv: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(a) for a in argv], capture_output=True, text=True, timeout=120,
                          check=False)


def test_the_recipes_are_there() -> None:
    assert [p.name for p in WORKFLOWS] == ["proofdiff-gate.yml", "proofdiff-nightly.yml"]
    assert GITLAB.is_file()


@pytest.mark.parametrize("schema", ["vendor.github-workflows",
                                    "custom.github-workflows-require-timeout"])
def test_github_workflows_match_the_published_schema(schema: str, tmp_path: Path) -> None:
    ok = _run(_tool("check-jsonschema"), "--builtin-schema", schema, *WORKFLOWS)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    broken = tmp_path / "broken.yml"
    text = WORKFLOWS[0].read_text(encoding="utf-8")
    broken.write_text(text.replace("timeout-minutes:", "timeout-minute:")
                      if "timeout" in schema else text.replace("runs-on:", "run-on:"),
                      encoding="utf-8")
    bad = _run(_tool("check-jsonschema"), "--builtin-schema", schema, broken)
    assert bad.returncode == 1, bad.stdout + bad.stderr


def test_the_gitlab_file_matches_the_published_schema(tmp_path: Path) -> None:
    ok = _run(_tool("check-jsonschema"), "--builtin-schema", "vendor.gitlab-ci", GITLAB)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    broken = tmp_path / "broken.gitlab-ci.yml"
    broken.write_text(GITLAB.read_text(encoding="utf-8").replace("  rules:", "  rulez:"),
                      encoding="utf-8")
    bad = _run(_tool("check-jsonschema"), "--builtin-schema", "vendor.gitlab-ci", broken)
    assert bad.returncode == 1, bad.stdout + bad.stderr


def test_actionlint_finds_nothing() -> None:
    ok = _run(_tool("actionlint"), "-config-file", CI / "actionlint.yaml", *WORKFLOWS)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    # without the config, the recipes' runner label is unknown to it: it does read them
    bare = _run(_tool("actionlint"), "-config-file", os.devnull, WORKFLOWS[0])
    assert bare.returncode == 1 and 'label "gpu" is unknown' in bare.stdout, bare.stdout


# -- every proofdiff command line, as the shell expands it ----------------------------------

_EXPR = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")
_FAKE = """#!{python}
import json, os, sys
from proofdiff.cli import _parser
_parser().parse_args(sys.argv[1:])  # argparse exits 2, naming the flag, on anything it rejects
with open(os.environ["ARGV_LOG"], "a", encoding="utf-8") as out:
    out.write(json.dumps(sys.argv[1:]) + "\\n")
"""


def _sample(expr: str, inputs: dict[str, Any]) -> str:
    """A value for a GitHub expression: its ``|| 'default'``, an input's default, else a
    non-empty sample (so that every optional flag of the script is exercised)."""
    literal = re.search(r"\|\|\s*'([^']*)'", expr)
    if literal:
        return literal.group(1)
    name = expr.split(".", 1)[-1]
    if expr.startswith("inputs.") and inputs.get(name, {}).get("default"):
        return str(inputs[name]["default"])
    return f"sample-{name}"


def _github_scripts() -> list[Any]:
    out = []
    for wf in WORKFLOWS:
        doc = YAML(typ="safe").load(wf.read_text(encoding="utf-8"))
        inputs = doc["on"].get("workflow_call", {}).get("inputs", {})
        for job_name, job in doc["jobs"].items():
            for step in job["steps"]:
                script = step.get("run", "")
                if re.search(r"^\s*proofdiff\s", script, re.M):
                    env = {**doc.get("env", {}), **job.get("env", {}), **step.get("env", {})}
                    env = {k: _EXPR.sub(lambda m: _sample(m.group(1), inputs), str(v))
                           for k, v in env.items()}
                    out.append(pytest.param(script, env, id=f"{wf.stem}:{job_name}"))
    return out


def _gitlab_scripts() -> list[Any]:
    doc = YAML(typ="safe").load(GITLAB.read_text(encoding="utf-8"))
    out = []
    for name, job in doc.items():
        if not isinstance(job, dict) or "script" not in job:
            continue
        for item in job["script"]:
            if re.search(r"^\s*proofdiff\s", item, re.M):
                env = {k: str(v) for k, v in {**doc["variables"], **job.get("variables", {})}
                       .items()}
                out.append(pytest.param(item, env, id=f"gitlab:{name}"))
    return out


@pytest.mark.parametrize(("script", "env"), _github_scripts() + _gitlab_scripts())
def test_the_proofdiff_command_lines_parse(script: str, env: dict[str, str],
                                           tmp_path: Path) -> None:
    command = re.search(r"^\s*proofdiff\s+(\S+)", script, re.M).group(1)  # type: ignore[union-attr]
    fake = tmp_path / "bin" / "proofdiff"
    fake.parent.mkdir()
    fake.write_text(_FAKE.format(python=sys.executable), encoding="utf-8")
    fake.chmod(0o755)
    log = tmp_path / "argv.jsonl"
    shell_env = {"PATH": f"{fake.parent}{os.pathsep}{os.environ['PATH']}", "ARGV_LOG": str(log),
                 "HOME": str(tmp_path), "PYTHONPATH": os.pathsep.join(sys.path),
                 "CI_PROJECT_DIR": str(tmp_path), **{k: v for k, v in env.items()
                                                     if k != "PATH"}}
    for name in ("PROOFDIFF_CANDIDATE", "PROOFDIFF_BASELINE", "PROOFDIFF_IMAGE",
                 "PROOFDIFF_PARAM_CACHE", "PROOFDIFF_ALLOWLIST", "PROOFDIFF_WEBHOOK"):
        shell_env.setdefault(name, f"sample-{name}")  # GitLab's CI/CD variables
    proc = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", script], env=shell_env,
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    (argv,) = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    assert argv[0] == command
    for flag in ("--profiles", "--report-dir", "--run-id", "--param-cache", "--allowlist",
                 "--notify"):
        assert flag in argv, f"{flag} missing from {argv}"
    assert not [a for a in argv if a.startswith("sample-") and a.endswith("RUN_ID")]
    if command == "nightly":  # the previous night's Allure history (docs/guide/ci-recipes.md)
        assert argv[argv.index("--allure-history") + 1] in (
            str(tmp_path / ".local/share/proofdiff/allure-history"),  # the default
            "sample-PROOFDIFF_ALLURE_HISTORY"), argv
