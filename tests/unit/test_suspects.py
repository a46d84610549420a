"""The suspect ranking (proofdiff.core.suspects) ranks by evidence, then by what each cuzk key
controls (proofdiff.core.config_subsystems), never by a self-test's fault switch: the top
suspect is the right config key with the switch left out of the delta, and a switch in the
delta is an undocumented setting like any other."""

from __future__ import annotations

import pytest

from proofdiff.core.config_subsystems import CHECK_SUBSYSTEMS, SUBSYSTEMS, subsystems_for
from proofdiff.core.profile_delta import profile_delta
from proofdiff.core.suspects import rank
from proofdiff.model.oracle_records import OracleRecord
from proofdiff.model.profile import PROFILE_KEYS
from proofdiff.model.profile_file import load_profiles
from proofdiff.model.status import Outcome
from proofdiff.oracles.preflight import DEPRECATED_KEYS, KNOWN_KEYS
from proofdiff.oracles.suite_table import SUITES


def failed(check: str, names: tuple[str, ...] = ()) -> OracleRecord:
    suite, oracle = check.split("/")
    return OracleRecord(suite=suite, oracle=oracle, profile="prod", workload="wpost-2k",
                        outcome=Outcome.FAIL, message="m", names=names)


def ranked(check: str, *overrides: str, names: tuple[str, ...] = ()) -> list[str]:
    ps = load_profiles("refprover", list(overrides))
    return [s.path for s in rank(profile_delta(ps["bench"], ps["prod"]), failed(check, names))]


CHECKS = [f"{s}/{o}" for s, t in SUITES.items() for o in t.oracles]


@pytest.mark.parametrize("check", CHECKS)
def test_a_fault_switch_in_the_delta_ranks_after_every_documented_setting(check: str) -> None:
    ps = load_profiles("refprover", ["prod.env.REFPROVER_FAULTS=partition-race"])
    suspects = rank(profile_delta(ps["bench"], ps["prod"]), failed(check))
    paths = [s.path for s in suspects]
    at = paths.index("env.REFPROVER_FAULTS")
    assert suspects[at].why.startswith("differs"), suspects[at]
    assert all(s.why.startswith("differs") for s in suspects[at:]), suspects


@pytest.mark.parametrize(("check", "top"), [
    ("validity/proofs", ["config.pipeline.enabled", "config.synthesis.partition_workers"]),
    ("isolation/hang", ["concurrency"]),
    ("timing/concurrency", ["config.pipeline.enabled"]),
    ("warmup/liveness", ["mem_limit"]),
])
def test_the_top_suspect_with_the_switch_left_out_of_the_delta(check: str,
                                                               top: list[str]) -> None:
    # the fault on both profiles (as bisect's self-tests set it): only config differs
    got = ranked(check, "*.env.REFPROVER_FAULTS=partition-race", "prod.mem_limit=\"4g\"")
    assert "env.REFPROVER_FAULTS" not in got
    assert got[:len(top)] == top, got


def test_what_the_evidence_names_ranks_first() -> None:
    got = ranked("validity/proofs", names=("job_ids", "concurrency"))
    assert got[:2] == ["job_ids", "concurrency"], got


def test_every_subsystem_path_is_a_profile_setting_or_a_documented_cuzk_key() -> None:
    tables = {k.split(".")[0] for k in (*KNOWN_KEYS, *DEPRECATED_KEYS)}
    for name, (_what, paths) in SUBSYSTEMS.items():
        for path in paths:
            head, _, rest = path.partition(".")
            assert head in PROFILE_KEYS, (name, path)
            if head == "config":
                assert rest in (*KNOWN_KEYS, *DEPRECATED_KEYS) or rest in tables, (name, path)


def test_every_check_exercises_known_subsystems() -> None:
    for check in CHECKS:
        suite = check.split("/")[0]
        subs = subsystems_for(check, suite)
        assert subs and set(subs) <= set(SUBSYSTEMS), (check, subs)
    assert set(CHECK_SUBSYSTEMS) <= {*SUITES, *CHECKS}
