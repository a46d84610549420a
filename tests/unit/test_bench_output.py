"""The cuzk-bench output parser, on cuzk-bench's own formats (its ``batch`` arm and
``print_result``, curio e0294b0f ``extern/cuzk/cuzk-bench/src/main.rs``; refprover's ``bench``
prints the same, plus an error after a FAILED batch line) and what clap prints."""

from __future__ import annotations

import re

import pytest

from proofdiff.drivers.bench_output import (BenchOutputError, parse_bench_output, parse_line,
                                           parse_single_output, usage_error)

BATCH = """\
=== Batch Benchmark ===
proof type:  porep
count:       3
concurrency: 1

  [1/3] COMPLETED — 63.2s (prove=62990 ms, queue=0 ms)
  [2/3] FAILED — 0.1s (prove=0 ms, queue=3 ms): C1 parse failed: missing field `SectorNum`
  [3/3] COMPLETED — 61.9s (prove=61700 ms, queue=12 ms)

=== Batch Summary ===
total time:    125.2s
completed:     2
failed:        1
wall time:     avg=62.5s min=61.9s max=63.2s
prove time:    avg=62.3s min=61.7s max=63.0s
throughput:    0.958 proofs/min (62.6s/proof)
"""

PROOF = "ab" * 192
SINGLE = f"""\
2026-12-01T12:11:44.108660Z  INFO cuzk_bench: connecting addr=http://127.0.0.1:9820

=== Proof Result ===
status:    COMPLETED
job_id:    5077d193-ffe3-4671-9973-ad2680f93f15
timings:   total=812 ms (queue=3 ms, srs=0 ms, synth=0 ms, gpu=809 ms)
wall time: 840 ms
proof:     192 bytes (hex: {PROOF})
"""

# clap's answer to a flag cuzk-bench does not have (refprover's bench, `-n 2`), exit code 2
REJECTED_STDERR = """\
error: unexpected argument '-n' found

Usage: bench batch [OPTIONS] --type <PROOF_TYPE>

For more information, try '--help'.
"""


def test_batch_lines_and_summary() -> None:
    out = parse_bench_output(BATCH, expected_count=3)
    assert out.header and out.count == 3 and out.missing() == []
    ok, failed, last = out.lines[1], out.lines[2], out.lines[3]
    assert (ok.completed, ok.wall_ms, ok.prove_ms, ok.queue_ms, ok.error) == (
        True, 63200.0, 62990, 0, "")
    assert not failed.completed and failed.error == "C1 parse failed: missing field `SectorNum`"
    assert (failed.wall_ms, failed.prove_ms, failed.queue_ms) == (100.0, 0, 3)
    assert last.queue_ms == 12
    s = out.summary
    assert s is not None
    assert (s.completed, s.failed, s.wall_avg_s, s.wall_min_s, s.wall_max_s,
            s.throughput_per_min) == (2, 1, 62.5, 61.9, 63.2, 0.958)
    assert out.other == ("proof type:  porep", "count:       3", "concurrency: 1")


def test_single_result_block_with_the_whole_partition_proof() -> None:
    r = parse_single_output(SINGLE)
    assert r.completed and r.job_id.startswith("5077d193") and r.proof == bytes.fromhex(PROOF)
    t = r.timings
    assert (t.total_ms, t.queue_wait_ms, t.gpu_compute_ms, r.wall_ms, r.proof_len) == \
        (812, 3, 809, 840.0, 192)
    cut = SINGLE.replace(f"192 bytes (hex: {PROOF})", f"1920 bytes (hex: {'cd' * 128}...)")
    assert parse_single_output(cut).proof is None  # PoRep: printed cut short, not verifiable
    failed = parse_single_output("\n=== Proof Result ===\nstatus:    FAILED\njob_id:    x\n"
                                 "error:     generate_single_window_post_with_vanilla failed\n")
    assert not failed.completed and failed.error.startswith("generate_single_window_post")
    with pytest.raises(BenchOutputError, match="no '=== Proof Result ===' block"):
        parse_single_output("Error: --vanilla required for PoSt/SnapDeals proof types")
    with pytest.raises(BenchOutputError, match="says 192 bytes but its hex has 2"):
        parse_single_output(SINGLE.replace(PROOF, "abcd"))


def test_failed_line_with_a_self_check_error_keeps_the_whole_message() -> None:
    line = parse_line("  [2/2] FAILED — 70.4s (prove=70012 ms, queue=0 ms): PoRep proof "
                      "self-check failed: assembled proof did not verify (sector=1, miner=1000)")
    assert line is not None and not line.completed and (line.index, line.count) == (2, 2)
    assert line.error == ("PoRep proof self-check failed: assembled proof did not verify "
                          "(sector=1, miner=1000)")


@pytest.mark.parametrize("text, wall_ms, prove_ms, error", [
    ("  [1/1] FAILED — 0.0s (prove=0 ms, queue=0 ms)", 0.0, 0, ""),        # no error suffix
    ("  [1/1] COMPLETED - 2.5s (prove=2400 ms, queue=1 ms)", 2500.0, 2400, ""),  # ASCII dash
    ("  [1/1] FAILED: transport error", None, None, "transport error"),      # no timings
    ("COMPLETED — 3.6s (prove=3562 ms, queue=0 ms)", 3600.0, 3562, ""),      # `single`
])
def test_lenient_where_real_tools_differ(text: str, wall_ms: float | None,
                                         prove_ms: int | None, error: str) -> None:
    line = parse_line(text)
    assert line is not None
    assert (line.wall_ms, line.prove_ms, line.error) == (wall_ms, prove_ms, error)


def test_lines_in_completion_order_and_a_killed_tool() -> None:
    text = ("=== Batch Benchmark ===\n"
            "  [3/4] COMPLETED — 1.0s (prove=900 ms, queue=0 ms)\n"
            "  [1/4] COMPLETED — 2.0s (prove=1900 ms, queue=0 ms)\n")
    out = parse_bench_output(text, expected_count=4)
    assert sorted(out.lines) == [1, 3] and out.missing() == [2, 4] and out.summary is None


@pytest.mark.parametrize("text, message", [
    ("  [1/2] COMPLETED — 1.0s (prove=1 ms, queue=0 ms)\n", "says the batch has 2 proofs, "
                                                           "expected 3"),
    ("  [4/3] COMPLETED — 1.0s (prove=1 ms, queue=0 ms)\n", "index 4 outside 1..3"),
    ("  [1/3] COMPLETED — 1.0s (prove=1 ms, queue=0 ms)\n" * 2, "proof 1 reported twice"),
    ("  [1/3] FAILED — 1.0s (prove=1 ms, queue=0 ms)\n=== Batch Summary ===\n"
     "  completed:  1\n  failed:     0\n", "summary says completed=1, failed=0 but the proof "
                                           "lines say completed=0, failed=1"),
])
def test_contradictions_are_errors_quoting_the_line(text: str, message: str) -> None:
    with pytest.raises(BenchOutputError, match=re.escape(message)):
        parse_bench_output(text, expected_count=3)


def test_a_rejected_flag_is_a_usage_error_with_the_tools_own_usage_line() -> None:
    err = usage_error(2, "", REJECTED_STDERR)
    assert err is not None and err.exit_code == 2
    assert err.message == "error: unexpected argument '-n' found"
    assert err.usage == "Usage: bench batch [OPTIONS] --type <PROOF_TYPE>"
    assert "rejected its command line (exit 2)" in str(err) and err.usage in str(err)


def test_a_batch_with_failures_is_not_a_usage_error() -> None:
    assert usage_error(1, BATCH, "") is None       # exit 1: some proofs failed
    assert usage_error(0, BATCH, "") is None
    assert usage_error(2, "", "error: cannot read --c1 /in/x.c1: No such file") is not None
    assert usage_error(1, "", "") is None          # nothing to quote: not a usage error


def test_a_tool_that_cannot_connect_has_accepted_its_command_line() -> None:
    # cuzk-bench's answer to the dry run's unused address (exit 1), and its own input check
    assert usage_error(1, "", "Error: failed to connect to daemon at http://127.0.0.1:1") is None
    bad = usage_error(1, "", "Error: --vanilla required for PoSt/SnapDeals proof types")
    assert bad is not None and "--vanilla required" in bad.message
