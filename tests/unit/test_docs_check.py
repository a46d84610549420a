"""``make docs-check`` (docs/tools/docs_check.py): each check passes on a good copy and fails on
a broken one, naming the file, the line and the fix: a stale generated page and a record that
does not validate (a), a command line proofdiff's parser rejects (b), a broken link (c), a
dated comment (d); and the baseline of known offenders. Real files in tmp_path copies, the real
parser, real git."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "docs" / "tools"))

import docs_check  # noqa: E402
from check_dated import dated_comments  # noqa: E402
from measurements import RecordError, load_records  # noqa: E402

#: A `repro` example that does not parse: `--workload-file` takes NAME=PATH, not a file.
REPRO_EXAMPLE = """\
```sh
.venv/bin/proofdiff repro --id ID --title T --from-report reports/<run> [--bisect]
.venv/bin/proofdiff repro --id ID --title T --config cuzk.toml --env-file prod.env \\
    --command '-c /data/zk/cuzk.toml' [--mount params=/var/tmp/filecoin-proof-parameters] \\
    --workload-file inputs.json [--like prod] [--good bench] [--fix PROFILE.KEY=V] [--bisect]
```
"""


def _write(root: Path, rel: str, text: str) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def _shown(findings: list[docs_check.Finding]) -> list[str]:
    return [f"{f.path}:{f.line} {f.check}" for f in findings]


@pytest.fixture(scope="module")
def docs_copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of what the generator reads and writes: docs/, benchmarks/, harness/."""
    root = tmp_path_factory.mktemp("checkout")
    ignore = shutil.ignore_patterns("__pycache__")
    for folder in ("docs", "benchmarks", "harness"):
        shutil.copytree(REPO / folder, root / folder, ignore=ignore)
    return root


def test_generated_pages_up_to_date_then_stale(docs_copy: Path) -> None:
    assert docs_check.check_pages(docs_copy) == []
    page = docs_copy / "docs/reference/commands.md"
    lines = page.read_text(encoding="utf-8").splitlines()
    n = next(i for i, line in enumerate(lines) if "`--full`" in line)
    lines[n] = lines[n].replace("every workload", "every workload, edited by hand")
    page.write_text("\n".join(lines) + "\n", encoding="utf-8")
    _write(docs_copy, "docs/reference/hand-written.md", "# Notes\n")
    (docs_copy / "docs/reference/profile-keys.md").unlink()
    got = docs_check.check_pages(docs_copy)
    assert _shown(got) == [f"docs/reference/commands.md:{n + 1} page",
                           "docs/reference/hand-written.md:1 page",
                           "docs/reference/profile-keys.md:1 page"], got
    assert "edited by hand" in got[0].message and "make docs" in got[0].fix
    assert "missing" in got[2].message


def test_the_command_exits_1_naming_file_line_and_fix(docs_copy: Path, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    _write(docs_copy, "README.md", "# x\n\n" + REPRO_EXAMPLE)
    none = _write(tmp_path, "no-known-offenders", "")  # the shipped baseline lists this one
    assert docs_check.main(["--root", str(docs_copy), "--baseline", str(none)]) == 1
    out = capsys.readouterr().out
    assert "README.md:5: [example]" in out and "--workload-file: 'inputs.json'" in out, out
    assert "    fix: write a command line that `proofdiff COMMAND --help` accepts" in out


def test_a_record_that_does_not_validate_names_file_and_field(tmp_path: Path) -> None:
    shutil.copy(REPO / "benchmarks/record.schema.json", _write(tmp_path, "benchmarks/x", "").parent)
    good = {"schema": 1, "topic": "params-check", "what": "one line", "benchmark": "by hand",
            "date": "2026-01-02T03:04:05Z", "machine": "2 cores", "commit": "abcdef1",
            "figures": {"cold": {"value": 0.5, "unit": "s"}}}
    _write(tmp_path, "benchmarks/results/a.json", json.dumps(good))
    assert [r for r, _ in load_records(tmp_path)] == ["benchmarks/results/a.json"]
    bad = {**good, "figures": {"cold": {"value": 0.5}}}
    _write(tmp_path, "benchmarks/results/b.json", json.dumps(bad))
    with pytest.raises(RecordError) as err:
        load_records(tmp_path)
    assert (err.value.file, err.value.field) == ("benchmarks/results/b.json", "figures.cold")
    assert "'unit' is a required property" in str(err.value) and "record.py" in err.value.fix
    _write(tmp_path, "benchmarks/results/b.json", json.dumps({**good, "commit": "HEAD"}))
    with pytest.raises(RecordError, match="field 'commit'"):
        load_records(tmp_path)


def test_command_lines_parse_with_proofdiffs_parser(tmp_path: Path) -> None:
    _write(tmp_path, "README.md", "# proofdiff\n\n" + REPRO_EXAMPLE + """
```sh
$ .venv/bin/proofdiff run --set prod.env.REFPROVER_FAULTS=partition-race   # a comment
proofdiff gate --candidate IMAGE --baseline IMAGE --rounds 6 | tee gate.log
python -m proofdiff history --metric latency --last N
proofdiff run --suite validty
```

Inline: `proofdiff bisect --hosts`, `proofdiff gate --budget-s S` and `proofdiff COMMAND --help`;
`proofdiff gate --rounds two` and `proofdiff run --no-such-flag`.
""")
    _write(tmp_path, "docs/guide/gate.md", "```bash\nproofdiff gate --budget-s -5\n```\n")
    _write(tmp_path, "tests/data/fragment.md", "`proofdiff run --not-checked-here`\n")
    got = docs_check.check_examples(tmp_path)
    assert _shown(got) == ["README.md:5 example", "README.md:14 example",
                           "README.md:18 example", "README.md:18 example",
                           "docs/guide/gate.md:2 example"], got
    assert "--workload-file: 'inputs.json': expected NAME=PATH" in got[0].message
    assert "invalid choice: 'validty'" in got[1].message
    assert "argument --rounds" in got[2].message and "--no-such-flag" in got[3].message
    assert "'-5': expected a positive number of seconds" in got[4].message
    assert got[0].key.startswith("example\tREADME.md\t.venv/bin/proofdiff repro --id ID")


def test_links_reach_their_file_and_heading(tmp_path: Path) -> None:
    _write(tmp_path, "docs/design/fleet.md", "# The fleet\n\n## `--hosts` and SSH\n\nSee "
           "[the gate](../guide/gate.md#exit-codes), [here](#the-fleet), [ssh](#--hosts-and-"
           "ssh), [the code](../../harness/), [web](https://example.org/x.md#y).\n\n"
           "```sh\n[not a link](nowhere.md)\n```\n")
    _write(tmp_path, "docs/guide/gate.md", "# Gate\n\n## Exit codes\n\nBack to "
           "[fleet](/docs/design/fleet.md#the-fleet).\n")
    (tmp_path / "harness").mkdir()
    assert docs_check.check_links(tmp_path) == []
    _write(tmp_path, "docs/guide/gate.md", "# Gate\n\n## Exit codes\n\nBroken: [a](../design/"
           "fleet.md#nope),\n[b](missing.md), `[in code](missing.md)`, [c](#exit-code).\n\n"
           "[d]: ../nothing/\n")
    got = docs_check.check_links(tmp_path)
    assert _shown(got) == ["docs/guide/gate.md:5 link", "docs/guide/gate.md:6 link",
                           "docs/guide/gate.md:6 link", "docs/guide/gate.md:8 link"], got
    assert "no heading #nope in docs/design/fleet.md" in got[0].message
    assert "no file or folder docs/guide/missing.md" in got[1].message
    assert "no heading #exit-code in docs/guide/gate.md" in got[2].message
    assert "no file or folder docs/nothing" in got[3].message and "existing file" in got[3].fix


def _git(root: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True,
                          check=True, timeout=60, env={"PATH": "/usr/bin:/bin", "GIT_AUTHOR_NAME": "t",
                          "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
                          "GIT_COMMITTER_EMAIL": "t@t", "HOME": str(root)}).stdout.strip()


def test_dates_and_commit_ids_in_comments_and_docstrings(tmp_path: Path) -> None:
    _git(tmp_path, "init", "-q")
    _write(tmp_path, "harness/clean.py", '"""Reads the digest (``deadbeef12``) of each file."""\n'
           'RELEASED = "2026-12-07"  # a string, not a comment: data may hold dates\n'
           "# width of a digest: abcdef0 is a hex constant, not a commit here\n")
    _write(tmp_path, "targets/refprover/src/lib.rs", 'let url = "http://x/2026-12-07"; // ok\n')
    _git(tmp_path, "add", "-A")
    _git(tmp_path, "commit", "-q", "-m", "first")
    commit = _git(tmp_path, "rev-parse", "--short", "HEAD")
    assert docs_check.check_dated(tmp_path) == []
    _write(tmp_path, "harness/dated.py", f'"""What it does.\n\nBefore 2026-12-05 it did less."""'
           f"\n\nX = 1  # slower before {commit}\n\n\ndef f() -> None:\n"
           '    """Since 2026-12-01."""\n')
    _write(tmp_path, "tests/unit/test_x.py", "#: The first night (2026-11-01 03:00 UTC).\n")
    _write(tmp_path, "targets/refprover/src/lib.rs", "/// Measured 2026-12-02: 3.1x.\n")
    got = docs_check.check_dated(tmp_path)
    assert _shown(got) == ["harness/dated.py:3 dated", "harness/dated.py:5 dated",
                           "harness/dated.py:9 dated", "targets/refprover/src/lib.rs:1 dated",
                           "tests/unit/test_x.py:1 dated"], got
    assert got[1].message == f"commit {commit} in a comment" and "CHANGELOG.md" in got[1].fix
    assert [d.where for d in dated_comments(tmp_path)][:3] == ["docstring", "comment",
                                                               "docstring"]


def test_known_offenders_are_warnings_and_unused_entries_are_pruned(tmp_path: Path) -> None:
    old = docs_check.Finding("dated", "a.py", 3, "date", "fix", "dated\ta.py\t2026-01-01\t# x")
    new = docs_check.Finding("dated", "b.py", 9, "date", "fix", "dated\tb.py\t2026-01-02\t# y")
    baseline = _write(tmp_path, "baseline", "# known\n" + old.key + "\n" + "link\tgone.md\tx\n")
    failures, known, unused = docs_check.split_known([old, new],
                                                     docs_check.read_baseline(baseline))
    assert (failures, known, unused) == ([new], [old], Counter({"link\tgone.md\tx": 1}))
    docs_check.prune(baseline, unused)
    assert baseline.read_text(encoding="utf-8") == "# known\n" + old.key + "\n"
