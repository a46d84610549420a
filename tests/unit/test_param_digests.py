"""Param digests in parameters.json form, their cache, and the integrity check's findings."""

from __future__ import annotations

import hashlib
import os
import json
from pathlib import Path

import msgspec
import pytest

from proofdiff.oracles.preflight import integrity_problems
from proofdiff.artifacts.param_manifest import DigestCache, file_digest, read_manifest, write_manifest


def test_the_digest_is_the_first_32_hex_digits_of_blake2b_512(tmp_path: Path) -> None:
    f = tmp_path / "v28-x.vk"
    f.write_bytes(b"verifying key")
    # b2sum (coreutils, BLAKE2b-512) of the same bytes, first 32 hex digits
    assert file_digest(f) == hashlib.blake2b(b"verifying key").hexdigest()[:32]
    assert len(file_digest(f)) == 32


def test_the_cache_hashes_once_per_size_and_mtime(tmp_path: Path) -> None:
    f = tmp_path / "a.params"
    f.write_bytes(b"x" * 1000)
    cache = DigestCache(tmp_path / "cache.json")
    first = cache.digests([f])[f]
    assert (cache.hits, cache.misses) == (0, 1)
    assert DigestCache(tmp_path / "cache.json").digests([f])[f] == first
    again = DigestCache(tmp_path / "cache.json")
    f.write_bytes(b"y" * 1000)  # same size, new mtime: hashed again
    assert again.digests([f])[f] != first and again.misses == 1


def test_the_manifest_round_trips_and_rejects_other_shapes(tmp_path: Path) -> None:
    (tmp_path / "a.params").write_bytes(b"p")
    (tmp_path / "a.vk").write_bytes(b"v")
    path = write_manifest(tmp_path, cache=DigestCache(tmp_path / "c.json"))
    doc = read_manifest(path)
    assert set(doc) == {"a.params", "a.vk"} and doc["a.vk"]["digest"] == file_digest(tmp_path / "a.vk")
    assert doc["a.vk"]["sector_size"] == 2048
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"a.vk": {"cid": "Qm"}}))
    with pytest.raises(ValueError, match='each entry needs a "digest"'):
        read_manifest(bad)


def test_integrity_names_a_corrupt_file_a_missing_entry_and_two_copies() -> None:
    manifest = {"a.params": {"digest": "aa"}, "a.vk": {"digest": "bb"}}
    ok = integrity_problems(["a.params", "a.vk"], manifest, {"a.params": "aa", "a.vk": "bb"},
                            {"a.params": "aa", "a.vk": "bb"}, read_path="/data/zk/params",
                            verifier_dir="/cache", manifest_path="m.json")
    assert ok == []
    bad = integrity_problems(["a.params", "b.vk"], manifest, {"a.params": "ff", "b.vk": "cc"},
                             {"a.params": "aa", "b.vk": "cc"}, read_path="/data/zk/params",
                             verifier_dir="/cache", manifest_path="m.json")
    assert bad == [
        "a.params: digest ff at /data/zk/params (where the daemon reads it), the manifest says "
        "aa: the file is corrupt or truncated",
        "a.params: the daemon's copy at /data/zk/params (ff) differs from the verifier's in "
        "/cache (aa)",
        "b.vk: not in the manifest m.json"]


def test_integrity_reads_the_daemons_own_copies_not_the_verifiers_table(tmp_path: Path) -> None:
    """The verifier's copies match the manifest; the daemon's own copy of one file does not:
    only a check that hashes the daemon's files (inside its container or process view) fails."""
    from types import SimpleNamespace

    from proofdiff.model.status import Outcome
    from proofdiff.oracles.evidence import Recorder
    from proofdiff.oracles.preflight import _integrity
    from tests.unit.fakes import FakeEvidence, refprover_profiles

    manifest = tmp_path / "parameters.json"
    manifest.write_text(json.dumps({"a.params": {"digest": "aa"}, "a.vk": {"digest": "bb"}}))
    profiles = refprover_profiles()
    ev = FakeEvidence(profiles=profiles, workload_file=tmp_path / "w.json",
                      params_manifest=manifest, param_cache=tmp_path,
                      host_digest={"a.params": "aa", "a.vk": "bb"},
                      daemon_digest={"a.params": "a0", "a.vk": "bb"})
    rec = Recorder(ev, "preflight", "wpost-2k")  # type: ignore[arg-type]
    _integrity(ev, rec, SimpleNamespace(profile=profiles["prod"]),  # type: ignore[arg-type]
               ["a.params", "a.vk"], "/var/tmp/filecoin-proof-parameters")
    (got,) = rec.records
    assert got.outcome is Outcome.FAIL
    assert "a.params: digest a0 at /var/tmp/filecoin-proof-parameters (where the daemon reads " \
        "it), the manifest says aa" in got.message


class _LossyHandle:
    """Runs the command for real here (coreutils' b2sum), but the first ``lose`` answers come
    back empty with exit 0, as Docker's exec sometimes answers (docker-py 2042, moby 27289)."""

    runtime, short_id = "attach", "127.0.0.1:9820"  # named by its address in messages

    def __init__(self, lose: int) -> None:
        self.lose, self.calls = lose, 0

    def exec(self, argv: list[str]) -> tuple[int, str]:
        import subprocess

        self.calls += 1
        out = subprocess.run(argv, capture_output=True, text=True, check=True).stdout
        return 0, "" if self.calls <= self.lose else out


def test_a_lost_digest_answer_is_asked_again_and_never_read_as_a_bad_file(
        tmp_path: Path) -> None:
    from proofdiff.core.probes import EXEC_TRIES, daemon_digests
    from proofdiff.model.errors import ProofdiffError
    from proofdiff.model.profile_file import load_profiles
    from proofdiff.runtime.daemon import Daemon

    names = ["a.params", "b.vk"]
    for n in names:
        (tmp_path / n).write_bytes(n.encode() * 100)
    prod = msgspec.structs.replace(load_profiles("refprover")["prod"],
                                   image="proofdiff/refprover:test")
    once = _LossyHandle(lose=1)
    got = daemon_digests(Daemon(profile=prod, handle=once), str(tmp_path), names)  # type: ignore[arg-type]
    assert got == {n: file_digest(tmp_path / n) for n in names} and once.calls == 2
    always = _LossyHandle(lose=EXEC_TRIES)
    with pytest.raises(ProofdiffError, match=r"named 0 of 2 file\(s\) in 3 tries"):
        daemon_digests(Daemon(profile=prod, handle=always), str(tmp_path), names)  # type: ignore[arg-type]


def test_a_lost_readability_answer_is_asked_again_and_never_read_as_all_readable(
        tmp_path: Path) -> None:
    from proofdiff.core.probes import EXEC_TRIES, unreadable
    from proofdiff.model.errors import ProofdiffError
    from proofdiff.model.profile_file import load_profiles
    from proofdiff.runtime.daemon import Daemon

    (tmp_path / "a.params").write_bytes(b"x")
    (tmp_path / "locked.vk").write_bytes(b"y")
    (tmp_path / "locked.vk").chmod(0)
    prod = msgspec.structs.replace(load_profiles("refprover")["prod"],
                                   image="proofdiff/refprover:test")
    names = ["a.params", "locked.vk", "absent.vk"]
    once = _LossyHandle(lose=1)
    got = unreadable(Daemon(profile=prod, handle=once), str(tmp_path), names)  # type: ignore[arg-type]
    # root reads a mode-0 file; every other user does not
    assert got == (["absent.vk"] if os.geteuid() == 0 else ["locked.vk", "absent.vk"])
    assert once.calls == 2
    with pytest.raises(ProofdiffError, match=r"cut short in 3 tries"):
        unreadable(Daemon(profile=prod, handle=_LossyHandle(lose=EXEC_TRIES)),  # type: ignore[arg-type]
                   str(tmp_path), names)
    assert unreadable(Daemon(profile=prod, handle=_LossyHandle(lose=0)),  # type: ignore[arg-type]
                      str(tmp_path / "nowhere"), names) == names
