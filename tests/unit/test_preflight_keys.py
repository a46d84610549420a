"""preflight/config-keys on what a daemon says about its keys, and when it says nothing."""

from __future__ import annotations

from proofdiff.model.status import Outcome
from proofdiff.oracles.preflight import _config_keys
from tests.conftest import recorder
from tests.unit.fakes import refprover_profiles


def _keys(status, log, *overrides):  # type: ignore[no-untyped-def]
    rec = recorder("preflight")
    _config_keys(rec, refprover_profiles(*overrides)["prod"], status, log)
    return rec.records[0]


def test_ignored_keys_from_status_or_log_fail_naming_the_key_and_a_spelling() -> None:
    got = _keys({"ignored_keys": ["pipline.enabled"]}, "")
    assert got.outcome is Outcome.FAIL and "'pipline.enabled' (did you mean 'pipeline.enabled'?)" \
        in got.message
    assert got.names == ("config.pipline.enabled",)
    dep = _keys(None, "WARN synthesis.partition_workers is deprecated — concurrency is now "
                      "managed by the memory budget\n")
    assert dep.outcome is Outcome.FAIL and "'synthesis.partition_workers'" in dep.message


def test_nothing_readable_is_an_error_not_a_pass() -> None:
    got = _keys(None, "")
    assert got.outcome is Outcome.ERROR and "neither GET /status nor the daemon log" in got.message


def test_a_silent_daemon_is_checked_against_cuzks_keys() -> None:
    # cuzk ignores unknown keys without a word: proofdiff's list of its keys has to tell
    silent = "INFO cuzk-daemon starting listen=0.0.0.0:9820\n"
    ok = _keys(None, silent)
    assert ok.outcome is Outcome.FAIL and "'synthesis.partition_workers'" in ok.message, \
        "refprover's own key is one cuzk does not read (deprecated there)"
    typo = _keys(None, silent, "prod.config.gpus.gpu_worker_per_device=2")
    assert typo.outcome is Outcome.FAIL and "proofdiff's list of cuzk's keys" in typo.message
    assert "did you mean 'gpus.gpu_workers_per_device'?" in typo.message
    said = _keys({"ignored_keys": []}, silent)
    assert said.outcome is Outcome.PASS
