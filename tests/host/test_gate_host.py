"""``proofdiff gate`` over two builds' host binaries (the process runtime, no container): a GPU
host without Docker gates a build this way. One run: a candidate whose
daemon has the partition-race fault (a wrapper that starts the build's refprover with it) against
the build's refprover, bench and prod, with an allowlist that accepts prod's invalid proofs and
holds an entry that has expired (the gate's allowlist is the same for images and folders)."""

from __future__ import annotations

import os
import socket
from pathlib import Path
from typing import Any

import docker
import msgspec
import pytest

from proofdiff.gate import run_gate
from proofdiff.gate.gate_result import Decision
from proofdiff.model.choices import Runtime
from proofdiff.model.run_options import RunOptions
from proofdiff.runtime.identity import file_sha256
from proofdiff.runtime.spec import LABEL_OWNER

ALLOWLIST = """
[[accept]]
check = "validity/proofs"
profile = "prod"
match = "invalid"
reason = "known partition race in this candidate"
link = "https://example.org/issues/7"
expires = 2099-12-31

[[accept]]
check = "isolation/hang"
profile = "*"
match = "stuck"
reason = "an old deadlock"
link = "https://example.org/issues/3"
expires = 2020-01-01
"""


def _containers_not_watched_elsewhere() -> set[str]:
    """Ids of every container but those another proofdiff process watches (owner label
    ``<host>-<pid>-<hex>``, proofdiff.runtime.watchdog, of another pid): the gate runs in this
    process, and the tests running beside it (tests/conftest.py ``BESIDE``) start proofdiff
    processes of their own."""
    host, mine = f"{socket.gethostname()}-", f"{socket.gethostname()}-{os.getpid()}-"
    return {c.id for c in docker.from_env().containers.list(all=True)
            if not (c.labels.get(LABEL_OWNER, "").startswith(host)
                    and not c.labels[LABEL_OWNER].startswith(mine))}


# slow: a gate of host binaries also runs in make test, on SSH hosts (tests/e2e/test_fleet_ssh.py)
@pytest.mark.slow
def test_a_gate_of_host_binaries_runs_every_profile_as_a_process(
        artifacts: Any, run_opts: RunOptions, tmp_path: Path,
        one_partition_workload: str) -> None:
    base = Path(artifacts.bin_dir)
    cand = tmp_path / "candidate"
    cand.mkdir()
    daemon = cand / "refprover"  # a build whose partitioned path is broken
    daemon.write_text(f"#!/bin/sh\nREFPROVER_FAULTS=partition-race exec {base / 'refprover'} "
                      '"$@"\n', encoding="utf-8")
    daemon.chmod(0o755)
    allow = tmp_path / "allow.toml"
    allow.write_text(ALLOWLIST, encoding="utf-8")
    before = _containers_not_watched_elsewhere()
    # one partition a job: partition-race breaks every partition proved beside another, of
    # any job, so prod's proofs are invalid still, and each bench round proves half as much
    name, path = one_partition_workload.split("=", 1)
    opts = msgspec.structs.replace(run_opts, workloads=(name,), run_id="gate-host",
                                   allowlist=str(allow), workload_files={name: path})
    # bench's arm: the first look's 6 rounds at most (a round proves one job per side); what
    # is asserted of it is that it ran, after the cross-check, on both folders' daemons
    res = run_gate(str(cand), str(base), opts, rounds=6, runtime=Runtime.PROCESS)

    # both sides are the folders' programs, by digest; the verifier is --bin-dir's verify
    assert (res.candidate.digest, res.baseline.digest) == (
        file_sha256(str(daemon)), file_sha256(str(base / "refprover")))
    assert res.verifier is not None and res.verifier.tag == str((base / "verify").resolve())
    # the candidate's own differential ran as processes: prod's proofs are invalid, bench
    # clean; the allowlist accepts that finding (shown, marked), and its expired entry fails
    # the gate, named in the decision line
    assert res.decision is Decision.FAIL and res.exit_code == 1, res.decision_line
    failed = {(f.check, f.profile) for f in res.findings if f.kind == "check"}
    assert ("validity/proofs", "prod") in failed and {p for _, p in failed} == {"prod"}
    (proofs,) = [f for f in res.findings if f.check == "validity/proofs"]
    assert proofs.accepted and proofs.accepted_by.endswith("#1")
    assert proofs.reason == "known partition race in this candidate"
    (old,) = [e for e in res.stale if e.status == "expired"]
    assert old.entry.endswith("#2") and old.entry in res.decision_line
    summary = msgspec.json.decode((Path(opts.report_root) / "gate-host" / "differential"
                                   / "summary.json").read_bytes())
    assert {r["profile"]: r["image"]["tag"] for r in summary["runs"]} == {
        "bench": str(daemon.resolve()), "prod": str(daemon.resolve())}
    # bench, clean, was timed on both folders' daemons, after the baseline folder's own verify
    # agreed with --bin-dir's on its proofs and a tampered copy
    assert res.verifier_check is not None and res.verifier_check.agreed is True
    assert res.verifier_check.proofs >= 2
    # --bin-dir's verify rejects bench's proof with a byte flipped; prod had no valid proof
    tamper = {t.profile: t for t in res.tamper}
    assert tamper["bench"].rejected and tamper["bench"].verdict.startswith("invalid"), tamper
    assert tamper["prod"].note == "no proof verified valid to tamper with", tamper
    (bench,) = [t for t in res.timing if t.profile == "bench"]
    assert 1 <= bench.rounds <= 6 == res.max_rounds, bench.stopped
    (prod,) = [t for t in res.timing if t.profile == "prod"]
    assert prod.stopped == "not timed: the candidate fails its checks on this profile"
    # no container was made
    assert _containers_not_watched_elsewhere() == before
