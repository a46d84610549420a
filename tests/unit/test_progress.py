"""Progress on long work, shown over real work: a real build step (a
subprocess through :func:`proofdiff.artifacts.build_steps.run`) in plain mode, as a CI log sees
it, and a real dd bisection (:func:`proofdiff.bisect.dd.isolate`) over units whose failure is a
set, on a terminal that rich drives (``force_terminal=True``) into a buffer. The core opens
tasks and never imports rich: checked in a fresh interpreter."""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from rich.console import Console

from proofdiff.artifacts import build_steps
from proofdiff.bisect.dd import FAIL, PASS, isolate
from proofdiff.report.progress import progress_display

#: Modules that open progress tasks: none may load rich (the display is the caller's). The
#: bisect package is left out: its ``__init__`` loads its console table (bisect_view, rich).
CORE = ("proofdiff.artifacts.build_steps", "proofdiff.drivers.flow",
        "proofdiff.gate.timing_rounds", "proofdiff.oracles.timing", "proofdiff.core.session")


class Stamped(io.StringIO):
    """A console file that keeps when (``time.monotonic()`` s) each line was written."""

    def __init__(self) -> None:
        super().__init__()
        self.lines: list[tuple[float, str]] = []
        self._part = ""

    def write(self, s: str) -> int:
        self._part += s
        while "\n" in self._part:
            line, self._part = self._part.split("\n", 1)
            self.lines.append((time.monotonic(), line))
        return super().write(s)


def test_plain_lines_of_a_real_build_step_keep_the_rate_bound(tmp_path: Path) -> None:
    out = Stamped()
    console = Console(file=out, force_terminal=False, width=200)
    every_s = 0.6
    script = ("import time\nfor i in range(14):\n    print(f'compiling crate-{i}', flush=True)\n"
              "    time.sleep(0.25)\n")
    heartbeats: list[str] = []
    with progress_display(console, every_s=every_s):
        took_s = build_steps.run("compile", [sys.executable, "-c", script], timeout_s=60,
                                 log=heartbeats.append, fix="-", log_path=tmp_path / "c.log",
                                 heartbeat_s=0.5)
    said = [(t, line) for t, line in out.lines if line.startswith("progress: build compile")]
    assert said[0][1] == "progress: build compile: started"
    end = said[-1][1]
    assert re.fullmatch(r"progress: build compile: done, 0 in (\d+\.\d) s", end), end
    assert abs(float(end.split(" in ")[1][:-2]) - took_s) < 0.3  # the step's own wall time
    periodic = said[1:-1]
    # at most one line per every_s while it ran, and it did say it was alive
    assert 2 <= len(periodic) <= int(took_s / every_s) + 1, said
    gaps = [b[0] - a[0] for a, b in zip(periodic, periodic[1:])]
    assert all(g >= every_s - 0.05 for g in gaps), gaps
    assert any("compiling crate-" in line for _t, line in periodic), periodic  # its output
    assert heartbeats == []  # shown by the display instead of the log's heartbeat
    assert len(out.lines) == len(said)  # nothing else printed


def test_rich_panel_over_a_real_dd_bisection(tmp_path: Path) -> None:
    buf = io.StringIO()
    console = Console(file=buf, force_terminal=True, width=140, color_system=None)
    cause = {2, 5}
    judged: list[frozenset[int]] = []

    def tester(configs: Sequence[frozenset[int]], fresh: bool) -> list[str]:
        time.sleep(0.15)  # a probe takes time: the panel refreshes meanwhile (4 Hz)
        judged.extend(configs)
        return [FAIL if cause <= c else PASS for c in configs]

    script = "import time\nfor i in range(3):\n    print(f'[{i}/3] linking', flush=True)\n" \
        "    time.sleep(0.8)\n"
    with progress_display(console):
        console.print("a log line above the panel")
        res = isolate(8, tester)
        build_steps.run("[refprover] link", [sys.executable, "-c", script], timeout_s=60,
                        log=print, fix="-", log_path=tmp_path / "l.log")
    assert res.status == "found" and sorted(res.change) == sorted(cause)
    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", buf.getvalue())
    rows = [line for line in re.split(r"[\r\n]", text) if "bisect dd over 8 units" in line]
    assert rows, text[-2000:]
    counts = [int(m.group(1)) for r in rows for m in [re.search(r" (\d+)/\? ", r)] if m]
    # the row counted the configurations judged, up to all of them (its last frame)
    assert counts == sorted(counts) and counts[-1] == len(judged), (counts, len(judged))
    assert any(re.search(r"0:00:0\d", r) for r in rows)  # how long it has been running
    assert any("last: PASS" in r or "last: FAIL" in r for r in rows)
    assert "a log line above the panel" in text
    # a name and a note with brackets are shown as they are, not read as rich markup
    assert re.search(r"build \[refprover\] link .*\[\d/3\] linking", text), [
        r for r in re.split(r"[\r\n]", text) if "link" in r][-3:]


def test_with_no_display_a_task_is_silent_and_the_core_loads_no_rich(tmp_path: Path) -> None:
    beats: list[str] = []
    build_steps.run("quiet", [sys.executable, "-c", "import time; time.sleep(1.2)"],
                    timeout_s=30, log=beats.append, fix="-", log_path=tmp_path / "q.log",
                    heartbeat_s=0.5)
    assert beats and "quiet: still running after" in beats[0]  # the log's heartbeat, as before
    probe = ("import json, sys\n" + "".join(f"import {m}\n" for m in CORE)
             + "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] == 'rich')))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          timeout=120, check=True)
    assert json.loads(done.stdout) == []
