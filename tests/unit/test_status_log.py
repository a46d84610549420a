"""The daemon-log parsers on refprover's own log format (proofdiff.runtime.daemon_status)."""

from __future__ import annotations

from proofdiff.runtime.daemon_status import ignored_keys_from_log, param_cache_from_log


def test_log_parsers_read_refprover_lines() -> None:
    log = ("2026-11-30T23:11:00Z  WARN ignored config key: refprover does not know it "
           "key=synthesis.partition_worker\n"
           "2026-11-30T23:11:00Z  INFO refprover starting config=/data/zk/cuzk.toml "
           "listen=0.0.0.0:9820 param_cache=/var/tmp/filecoin-proof-parameters pipeline=true\n")
    assert ignored_keys_from_log(log) == ["synthesis.partition_worker"]
    assert param_cache_from_log(log) == "/var/tmp/filecoin-proof-parameters"
    assert param_cache_from_log("nothing") is None and ignored_keys_from_log("") == []
