"""Preflight pieces against the real refprover image (Docker needed; skipped without an engine):
the bench command-line dry parse, the param files a workload needs as the image names them, and
the daemon-log parsers on refprover's own log format."""

from __future__ import annotations

from typing import Any

import docker
import pytest

from harness.daemon_status import ignored_keys_from_log, param_cache_from_log
from harness.preflight import dry_parse, required_param_files


def test_dry_parse_rejects_n_with_the_tools_usage_line(artifacts: Any) -> None:
    bad = dry_parse(artifacts.image_tag, ["-a", "http://127.0.0.1:1", "batch", "-t", "wpost",
                                          "--c1", "/in/x.c1", "-n", "3"], run_id="t-preflight")
    assert not bad.ok and bad.exit_code == 2, bad.output
    assert bad.error_line == "error: unexpected argument '-n' found"
    assert bad.usage_line.startswith("Usage: bench batch [OPTIONS] --type <TYP> --c1 <C1>")
    good = dry_parse(artifacts.image_tag, ["-a", "http://127.0.0.1:1", "batch", "-t", "wpost",
                                           "--c1", "/in/x.c1", "-c", "3", "-j", "2"])
    assert good.ok and good.exit_code == 0 and good.argv[-1] == "--help", good.output


def test_dry_parse_of_a_missing_tool_says_which(artifacts: Any) -> None:
    with pytest.raises(RuntimeError, match="cannot run the bench tool '/usr/local/bin/nope'"):
        dry_parse(artifacts.image_tag, ["batch"], tool="/usr/local/bin/nope")


def test_required_param_files_are_named_by_the_image(artifacts: Any) -> None:
    files, source = required_param_files(docker.from_env(), artifacts.image_tag, "wpost-2k",
                                         artifacts.param_cache)
    assert sorted(f.rsplit(".", 1)[1] for f in files) == ["params", "vk"], files
    assert all("proof-of-spacetime-fallback" in f for f in files)
    assert "paramgen --print-cache-id" in source


def test_log_parsers_read_refprover_lines() -> None:
    log = ("2026-11-30T23:11:00Z  WARN ignored config key: refprover does not know it "
           "key=synthesis.partition_worker\n"
           "2026-11-30T23:11:00Z  INFO refprover starting config=/data/zk/cuzk.toml "
           "listen=0.0.0.0:9820 param_cache=/var/tmp/filecoin-proof-parameters pipeline=true\n")
    assert ignored_keys_from_log(log) == ["synthesis.partition_worker"]
    assert param_cache_from_log(log) == "/var/tmp/filecoin-proof-parameters"
    assert param_cache_from_log("nothing") is None and ignored_keys_from_log("") == []
