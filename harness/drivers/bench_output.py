"""Parse the output of cuzk-bench (and refprover's compatible ``bench``): DESIGN.md section 3.

``cuzk-bench batch`` prints::

    === Batch Benchmark ===
      type: porep  count: 3  concurrency: 1  addr: http://10.0.0.2:9820      (refprover; optional)
      [1/3] COMPLETED — 63.2s (prove=62990 ms, queue=0 ms)
      [2/3] FAILED — 0.1s (prove=0 ms, queue=0 ms): C1 parse failed: ...
    === Batch Summary ===
      completed:  1
      failed:     1
      wall avg:   63.2s  min: 63.2s  max: 63.2s
      throughput: 0.95 proofs/min

``single`` prints one such line without the ``[i/N]`` prefix. The parser is lenient where real
tools may differ (an ASCII ``-`` for the em dash, no error suffix, extra lines, lines in
completion order) and strict where a wrong answer would mislead: an index outside ``1..N``, a
line given twice, or a summary that contradicts the lines is a :class:`BenchOutputError`.

A command line the tool rejects (clap: exit code 2, ``error: unexpected argument '-n' found``
and a ``Usage:`` line on stderr, no header) is a :class:`BenchUsageError` carrying the tool's
own message and usage line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

__all__ = [
    "BenchLine",
    "BenchOutput",
    "BenchOutputError",
    "BenchSummary",
    "BenchUsageError",
    "parse_bench_output",
    "parse_line",
    "usage_error",
]

HEADER = "=== Batch Benchmark ==="
SUMMARY = "=== Batch Summary ==="

_LINE = re.compile(
    r"^\s*(?:\[(?P<i>\d+)/(?P<n>\d+)\]\s+)?(?P<status>COMPLETED|FAILED)\b"
    r"(?:\s*(?:—|--|-|–)\s*(?P<wall>\d+(?:\.\d+)?)\s*s\b)?"
    r"(?:\s*\((?P<detail>[^)]*)\))?"
    r"(?:\s*:\s*(?P<error>.*))?\s*$")
_MS = re.compile(r"(?P<key>prove|queue)\s*=\s*(?P<ms>\d+)\s*ms")
_COUNT = re.compile(r"^\s*(?P<key>completed|failed)\s*:\s*(?P<n>\d+)\s*$")
_WALL = re.compile(r"^\s*wall avg\s*:\s*(?P<avg>[\d.]+)s\s+min\s*:\s*(?P<min>[\d.]+)s\s+"
                   r"max\s*:\s*(?P<max>[\d.]+)s\s*$")
_THROUGHPUT = re.compile(r"^\s*throughput\s*:\s*(?P<tp>[\d.]+)\s*proofs/min\s*$")


class BenchOutputError(ValueError):
    """The output is not the cuzk-bench format, or contradicts itself (message quotes the
    offending line)."""


class BenchUsageError(ValueError):
    """The tool rejected its command line.

    Attributes:
        exit_code: the tool's exit code (clap: 2).
        message: the tool's error line, e.g. ``error: unexpected argument '-n' found``.
        usage: the tool's ``Usage:`` line ('' when it printed none).
    """

    def __init__(self, exit_code: int, message: str, usage: str) -> None:
        self.exit_code, self.message, self.usage = exit_code, message, usage
        text = f"the bench tool rejected its command line (exit {exit_code}): {message}"
        if usage:
            text += f"; its usage: {usage}"
        super().__init__(text)


@dataclass(frozen=True)
class BenchLine:
    """One proof's line.

    Attributes:
        index: 1-based position in the batch (``[i/N]``; 1 for ``single``).
        count: the batch size ``N`` (1 for ``single``).
        completed: ``COMPLETED`` (True) or ``FAILED`` (False).
        wall_ms: the tool's wall time for the proof, ms (``None`` when not printed).
        prove_ms, queue_ms: the daemon's prove and queue times as printed, ms (``None`` when
            not printed).
        error: the text after ``): `` on a FAILED line ('' when none).
        raw: the line as printed.
    """

    index: int
    count: int
    completed: bool
    wall_ms: float | None = None
    prove_ms: int | None = None
    queue_ms: int | None = None
    error: str = ""
    raw: str = ""


@dataclass(frozen=True)
class BenchSummary:
    """The ``=== Batch Summary ===`` block: counts, wall avg/min/max of the completed proofs in
    seconds, throughput in proofs per minute (``None`` when a line is missing)."""

    completed: int | None = None
    failed: int | None = None
    wall_avg_s: float | None = None
    wall_min_s: float | None = None
    wall_max_s: float | None = None
    throughput_per_min: float | None = None


@dataclass(frozen=True)
class BenchOutput:
    """A parsed run: the proof lines by index, the summary (``None`` when the tool printed none,
    e.g. it was killed), and lines the parser did not recognise (kept as evidence)."""

    lines: dict[int, BenchLine]
    count: int
    summary: BenchSummary | None
    header: bool
    other: tuple[str, ...] = field(default=())

    def missing(self) -> list[int]:
        """Indices ``1..count`` with no line (proofs the tool never reported)."""
        return [i for i in range(1, self.count + 1) if i not in self.lines]


def parse_line(text: str) -> BenchLine | None:
    """One proof line, or ``None`` when ``text`` is not one."""
    m = _LINE.match(text)
    if m is None:
        return None
    detail = m.group("detail") or ""
    ms = {k.group("key"): int(k.group("ms")) for k in _MS.finditer(detail)}
    wall = m.group("wall")
    return BenchLine(
        index=int(m.group("i") or 1), count=int(m.group("n") or 1),
        completed=m.group("status") == "COMPLETED",
        wall_ms=float(wall) * 1000.0 if wall is not None else None,
        prove_ms=ms.get("prove"), queue_ms=ms.get("queue"),
        error=(m.group("error") or "").strip(), raw=text.rstrip())


def usage_error(exit_code: int, stdout: str, stderr: str) -> BenchUsageError | None:
    """A :class:`BenchUsageError` when the output is a rejected command line (a non-zero exit,
    no proof line and no header, and an ``error:`` or ``Usage:`` line), else ``None``."""
    if exit_code == 0 or HEADER in stdout or any(parse_line(x) for x in stdout.splitlines()):
        return None
    text = (stderr + "\n" + stdout).splitlines()
    err = next((x.strip() for x in text if x.strip().lower().startswith("error")), "")
    usage = next((x.strip() for x in text if x.strip().startswith("Usage:")), "")
    if not err and not usage:
        return None
    return BenchUsageError(exit_code, err or "(no error line)", usage)


def _summary(rows: list[str]) -> BenchSummary:
    vals: dict[str, float | int | None] = {}
    for row in rows:
        if m := _COUNT.match(row):
            vals[m.group("key")] = int(m.group("n"))
        elif m := _WALL.match(row):
            vals.update(avg=float(m.group("avg")), min=float(m.group("min")),
                        max=float(m.group("max")))
        elif m := _THROUGHPUT.match(row):
            vals["tp"] = float(m.group("tp"))

    def i(key: str) -> int | None:
        v = vals.get(key)
        return int(v) if v is not None else None

    def f(key: str) -> float | None:
        v = vals.get(key)
        return float(v) if v is not None else None

    return BenchSummary(completed=i("completed"), failed=i("failed"), wall_avg_s=f("avg"),
                        wall_min_s=f("min"), wall_max_s=f("max"), throughput_per_min=f("tp"))


def parse_bench_output(stdout: str, *, expected_count: int | None = None) -> BenchOutput:
    """Parse ``batch`` (or ``single``) output.

    Args:
        stdout: what the tool printed on stdout.
        expected_count: the ``-c`` the tool was given; checked against every ``[i/N]``.

    Raises:
        BenchOutputError: a proof line's ``N`` differs from ``expected_count`` or from another
            line's, an index is outside ``1..N`` or repeated, or the summary's completed/failed
            counts contradict the proof lines.
    """
    lines: dict[int, BenchLine] = {}
    other: list[str] = []
    summary_rows: list[str] = []
    header = in_summary = False
    count = expected_count
    for row in stdout.splitlines():
        if row.strip() == HEADER:
            header = True
            continue
        if row.strip() == SUMMARY:
            in_summary = True
            continue
        if in_summary:
            summary_rows.append(row)
            continue
        line = parse_line(row)
        if line is None:
            if row.strip():
                other.append(row.rstrip())
            continue
        if count is None:
            count = line.count
        if line.count != count:
            raise BenchOutputError(f"bench line {row.strip()!r} says the batch has {line.count} "
                                   f"proofs, expected {count}")
        if not 1 <= line.index <= count:
            raise BenchOutputError(f"bench line {row.strip()!r}: index {line.index} outside "
                                   f"1..{count}")
        if line.index in lines:
            raise BenchOutputError(f"bench line {row.strip()!r}: proof {line.index} reported twice")
        lines[line.index] = line
    summary = _summary(summary_rows) if in_summary else None
    if summary is not None:
        done = sum(1 for x in lines.values() if x.completed)
        failed = len(lines) - done
        if summary.completed not in (None, done) or summary.failed not in (None, failed):
            raise BenchOutputError(
                f"bench summary says completed={summary.completed}, failed={summary.failed} but "
                f"the proof lines say completed={done}, failed={failed}")
    return BenchOutput(lines=lines, count=count or len(lines), summary=summary, header=header,
                       other=tuple(other))
