from __future__ import annotations

from proofdiff.core.profile_delta import inspect_delta, profile_delta
from proofdiff.model.config_delta import ABSENT
from proofdiff.model.profile_file import load_profiles

PROFILES = "refprover"


def test_bench_vs_prod_lines() -> None:
    ps = load_profiles(PROFILES)
    lines = [i.render() for i in profile_delta(ps["bench"], ps["prod"]).items]
    for want in ("config.pipeline.enabled: False -> True",
                 "config.synthesis.partition_workers: 1 -> 4",
                 "concurrency: 1 -> 4",
                 "job_ids: 'uuid' -> 'curio'",
                 "mounts.params: '/data/zk/params' -> '/var/tmp/filecoin-proof-parameters'",
                 "config.daemon.status_listen: <absent> -> '0.0.0.0:9821'",
                 "command: [] -> ['-c', '/data/zk/cuzk.toml', '--log-level', 'info']"):
        assert want in lines, lines
    assert lines == sorted(lines)


def test_identical_profiles_have_no_delta() -> None:
    ps = load_profiles(PROFILES)
    d = profile_delta(ps["prod"], ps["prod"])
    assert d.items == () and d.render().endswith("(none)")


def test_default_valued_key_is_not_a_difference() -> None:
    ps = load_profiles(PROFILES, ["bench.config.logging.level=info"])
    base = load_profiles(PROFILES)["bench"]
    assert profile_delta(base, ps["bench"]).items == ()


def inspect_doc(env: list[str], cmd: list[str], dest: str, nano_cpus: int) -> dict:  # type: ignore[type-arg]
    return {
        "Config": {"Image": "proofdiff/refprover:t", "Entrypoint": ["refprover"], "Cmd": cmd,
                   "User": "65534:65534", "Env": env},
        "Mounts": [{"Type": "bind", "Source": "/cache/params", "Destination": dest, "RW": False}],
        "HostConfig": {"NanoCpus": nano_cpus, "Memory": 0, "CapDrop": ["ALL"],
                       "SecurityOpt": ["no-new-privileges"], "Privileged": False,
                       "NetworkMode": "bridge", "PortBindings": {"9820/tcp": []}},
    }


def test_inspect_delta() -> None:
    a = inspect_doc(["PATH=/usr/bin", "RUST_LOG=info"], [], "/data/zk/params", 0)
    b = inspect_doc(["PATH=/usr/bin", "RUST_LOG=debug", "REFPROVER_FAULTS=x"], ["-l", "0.0.0.0:1"],
                    "/var/tmp/p", 2_000_000_000)
    d = inspect_delta(a, b, "bench:abc", "prod:def")
    paths = {i.path: i for i in d.items}
    assert paths["env.RUST_LOG"].right == "debug"
    assert paths["env.REFPROVER_FAULTS"].left == ABSENT
    assert paths["limits.nano_cpus"].right == 2_000_000_000
    assert paths["cmd"].left == [] and paths["cmd"].right == ["-l", "0.0.0.0:1"]
    assert "mounts./data/zk/params" in paths and "mounts./var/tmp/p" in paths
    assert d.render().startswith("config delta bench:abc -> prod:def:")
