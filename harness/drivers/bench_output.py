"""Parse the output of cuzk-bench (and refprover's compatible ``bench``).

The formats are cuzk-bench's (curio e0294b0f, ``extern/cuzk/cuzk-bench/src/main.rs``, its
``batch`` arm and ``print_result``). ``batch`` prints, a proof's line once it finished, in
submission order::

    === Batch Benchmark ===
    proof type:  porep
    count:       3
    concurrency: 1

      [1/3] COMPLETED — 63.2s (prove=62990 ms, queue=0 ms)
      [2/3] FAILED — 0.1s (prove=0 ms, queue=0 ms)          (refprover adds ": <error>")

    === Batch Summary ===
    total time:    126.5s
    completed:     1
    failed:        1
    wall time:     avg=63.2s min=63.2s max=63.2s            (these three only if completed > 0)
    prove time:    avg=63.0s min=63.0s max=63.0s
    throughput:    0.474 proofs/min (126.5s/proof)

``single`` prints a block (:func:`parse_single_output`); a 192-byte WindowPoSt partition proof
is printed whole in it (``proof: 192 bytes (hex: ...)``, whole up to :data:`SINGLE_PRINTS_WHOLE`
bytes), so it can be
verified; ``batch`` never prints a proof. The parser is lenient where real tools may differ (an
ASCII ``-`` for the em dash, no error suffix, tracing log lines in stdout) and strict where a
wrong answer would mislead: an index outside ``1..N``, a line given twice, or a summary that
contradicts the lines is a :class:`BenchOutputError`.

A command line the tool rejects (clap: exit code 2, ``error: unexpected argument '-n' found``
and a ``Usage:`` line on stderr, no header) is a :class:`BenchUsageError` carrying the tool's
own message and usage line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from proofdiff.model.errors import ProofdiffError
from proofdiff.model.jobs import NO_TIMINGS, DaemonTimings

__all__ = [
    "SINGLE_PRINTS_WHOLE",
    "BenchLine",
    "BenchOutput",
    "BenchOutputError",
    "BenchSummary",
    "BenchUsageError",
    "SingleResult",
    "parse_bench_output",
    "parse_line",
    "parse_single_output",
    "usage_error",
]

#: ``single`` prints a proof whole up to this many bytes, else its first 128 bytes and ``...``
#: (cuzk-bench ``print_result``, curio e0294b0f): one 192-byte partition proof fits, a 32 GiB
#: PoRep's 10 partitions (1920 bytes) do not.
SINGLE_PRINTS_WHOLE = 256

HEADER = "=== Batch Benchmark ==="
SUMMARY = "=== Batch Summary ==="

_LINE = re.compile(
    r"^\s*(?:\[(?P<i>\d+)/(?P<n>\d+)\]\s+)?(?P<status>COMPLETED|FAILED)\b"
    r"(?:\s*(?:—|--|-|–)\s*(?P<wall>\d+(?:\.\d+)?)\s*s\b)?"
    r"(?:\s*\((?P<detail>[^)]*)\))?"
    r"(?:\s*:\s*(?P<error>.*))?\s*$")
_MS = re.compile(r"(?P<key>prove|queue)\s*=\s*(?P<ms>\d+)\s*ms")
_COUNT = re.compile(r"^\s*(?P<key>completed|failed)\s*:\s*(?P<n>\d+)\s*$")
_WALL = re.compile(r"^\s*wall time\s*:\s*avg=(?P<avg>[\d.]+)s\s+min=(?P<min>[\d.]+)s\s+"
                   r"max=(?P<max>[\d.]+)s\s*$")
_THROUGHPUT = re.compile(r"^\s*throughput\s*:\s*(?P<tp>[\d.]+)\s*proofs/min\b")
RESULT = "=== Proof Result ==="
_FIELD = re.compile(r"^(?P<key>status|job_id|timings|wall time|proof|error)\s*:\s*(?P<value>.*)$")
_TIMINGS = re.compile(r"total=(?P<total>\d+) ms \(queue=(?P<queue>\d+) ms, srs=(?P<srs>\d+) ms, "
                      r"synth=(?P<synth>\d+) ms, gpu=(?P<gpu>\d+) ms\)")
_PROOF = re.compile(r"(?P<len>\d+) bytes \(hex: (?P<hex>[0-9a-fA-F]*)(?P<cut>\.\.\.)?\)")


class BenchOutputError(ProofdiffError):
    """The output is not the cuzk-bench format, or contradicts itself (message quotes the
    offending line)."""


class BenchUsageError(ProofdiffError):
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


#: What a tool that accepted its arguments says when nothing answers at the address (cuzk-bench:
#: ``Error: failed to connect to daemon at ...``; tonic: ``transport error``).
_CONNECT = re.compile(r"failed to connect|transport error|connection refused|tcp connect error|"
                      r"error trying to connect", re.IGNORECASE)


def usage_error(exit_code: int, stdout: str, stderr: str) -> BenchUsageError | None:
    """A :class:`BenchUsageError` when the output is a rejected command line (a non-zero exit,
    no proof line and no header, and an ``error:`` or ``Usage:`` line, not about connecting),
    else ``None``."""
    if (exit_code == 0 or HEADER in stdout or RESULT in stdout
            or any(parse_line(x) for x in stdout.splitlines())
            or _CONNECT.search(stdout + stderr)):
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


@dataclass(frozen=True)
class SingleResult:
    """The ``=== Proof Result ===`` block of ``single``.

    Attributes:
        status: COMPLETED | FAILED | CANCELLED | TIMEOUT | UNKNOWN. job_id: the daemon's id.
        timings: the daemon's timings as the tool printed them (0 unless COMPLETED).
        wall_ms: the tool's wall time, ms.
        proof: the proof bytes when printed whole (up to 256 bytes); ``None`` when cut short.
        proof_len: its length in bytes. error: the daemon's error text ('' when COMPLETED).
    """

    status: str
    job_id: str = ""
    timings: DaemonTimings = NO_TIMINGS
    wall_ms: float = 0.0
    proof: bytes | None = None
    proof_len: int = 0
    error: str = ""

    @property
    def completed(self) -> bool:
        """The status is COMPLETED."""
        return self.status == "COMPLETED"


def parse_single_output(stdout: str) -> SingleResult:
    """Parse ``single``'s result block (log lines around it are ignored).

    Raises:
        BenchOutputError: no ``=== Proof Result ===`` block, no ``status:`` line, a COMPLETED
            result without its ``proof:`` line, or a proof whose hex is not its stated length.
    """
    rows = stdout.splitlines()
    try:
        start = next(i for i, r in enumerate(rows) if r.strip() == RESULT)
    except StopIteration:
        raise BenchOutputError(f"no {RESULT!r} block in the bench tool's output") from None
    fields: dict[str, str] = {}
    for row in rows[start + 1:]:
        if m := _FIELD.match(row.strip()):
            fields.setdefault(m.group("key"), m.group("value").strip())
    status = fields.get("status")
    if status is None:
        raise BenchOutputError(f"the {RESULT!r} block has no status line")
    res = SingleResult(status=status, job_id=fields.get("job_id", ""), error=fields.get("error", ""))
    if status != "COMPLETED":
        return res
    t = _TIMINGS.search(fields.get("timings", ""))
    wall = re.match(r"(\d+)\s*ms", fields.get("wall time", ""))
    proof = _PROOF.match(fields.get("proof", ""))
    if proof is None:
        raise BenchOutputError(f"a COMPLETED result without a proof line: {fields!r}")
    length, hexs = int(proof.group("len")), proof.group("hex")
    whole = None if proof.group("cut") else bytes.fromhex(hexs)
    if whole is not None and len(whole) != length:
        raise BenchOutputError(f"the proof line says {length} bytes but its hex has {len(whole)}")
    timings = DaemonTimings(
        total_ms=int(t.group("total")), queue_wait_ms=int(t.group("queue")),
        srs_load_ms=int(t.group("srs")), synthesis_ms=int(t.group("synth")),
        gpu_compute_ms=int(t.group("gpu"))) if t else NO_TIMINGS
    return SingleResult(status=status, job_id=res.job_id, timings=timings,
                        wall_ms=float(wall.group(1)) if wall else 0.0, proof=whole,
                        proof_len=length)
