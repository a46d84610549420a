"""The ``bench-cli`` driver: runs the image's cuzk-bench-style client against the daemon.

Operators benchmark cuzk with ``cuzk-bench batch``; this driver does the same, so a profile
can reproduce their numbers and their command line. Per distinct workload job it starts a
short-lived container of the profile's image with the bench tool as entrypoint::

    <bench_tool> -a http://<daemon>:<port> batch -t porep|wpost --c1 /in/<job>.c1
        --sector-num N --miner-id M -c COUNT -j CONCURRENCY [--save-proofs /out]
        [--timeout S] <bench_args...>

on the daemon's docker network (bridge: the daemon container's IP; host: 127.0.0.1), labelled
``proofdiff.run`` / ``proofdiff.profile`` / ``proofdiff.role=bench``, with the job's C1 (or, for
WindowPoSt, the job JSON) mounted read-only, a deadline, and removed afterwards. Its output
(:mod:`harness.bench_output`) becomes one :class:`~harness.records.JobResult` per proof.

Proofs: when the tool has ``--save-proofs`` (refprover's extension, found in ``batch --help``)
the proof bytes are read back and verified like any other; real cuzk-bench has no such flag,
so its COMPLETED proofs are counted but marked ``unverifiable`` with the reason.

Concurrency: cuzk-bench takes one C1 file per run, so jobs are grouped by workload job (the
profile's ``jobs`` count cycles through the workload); groups run one after another, each with
``-j min(concurrency, COUNT)``. Request ids are the tool's own (cuzk-bench: a fresh UUID per
proof), so a bench-cli profile has ``job_ids = "uuid"``.
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import docker
import docker.errors
import requests

from .bench_output import (BenchOutputError, BenchUsageError, parse_bench_output,
                           usage_error)
from .launcher import LABEL_IMAGE, LABEL_PROFILE, LABEL_ROLE, LABEL_RUN, Daemon, hardening
from .profiles import Profile
from .records import JobResult, JobStatus
from .workload import Workload, WorkloadJob, bench_input, select_jobs

__all__ = ["BENCH_REQUEST_ID", "BenchCliDriver", "BenchToolError", "bench_type"]

#: What a bench-cli job's ``request_id`` says: the tool picks its own id and does not print it.
BENCH_REQUEST_ID = "(bench tool uuid)"
#: Seconds added to a batch's own deadline (container start, connect, output).
BATCH_SLACK_S = 60.0
#: Deadline of the ``batch --help`` probe, seconds.
PROBE_TIMEOUT_S = 60.0
IN_DIR, OUT_DIR = "/in", "/out"

_TYPES = {"POREP_SEAL_COMMIT": "porep", "WINDOW_POST_PARTITION": "wpost",
          "SNAP_DEALS_UPDATE": "snap", "WINNING_POST": "winning"}
_FLAG = re.compile(r"(?<![\w-])(--[a-z][a-z0-9-]*)")
NO_SAVE_PROOFS = ("the bench tool has no --save-proofs flag (real cuzk-bench prints timings "
                  "only), so this proof was counted, not verified; run the profile with driver "
                  "'grpc' to verify its proofs")


class BenchToolError(RuntimeError):
    """The bench tool could not be run at all (missing in the image, no network path to the
    daemon, docker refused the container); the message names the profile and the fix."""


def bench_type(proof_kind: str) -> str:
    """cuzk-bench's ``-t`` value for a ``ProofKind`` name (``POREP_SEAL_COMMIT`` -> ``porep``).

    Raises:
        BenchToolError: a kind cuzk-bench has no type for.
    """
    try:
        return _TYPES[proof_kind]
    except KeyError:
        raise BenchToolError(f"cuzk-bench has no -t type for proof kind {proof_kind!r}; "
                             f"known: {', '.join(_TYPES)}") from None


@dataclass(frozen=True)
class _Exit:
    code: int
    stdout: str
    stderr: str
    timed_out: bool
    out_dir: Path | None = None


class BenchCliDriver:
    """Drives one daemon through its image's bench tool (see the module docstring).

    Args:
        daemon: the started daemon (its container gives the network address and the client).
        client: docker client (default: the daemon container's).

    Attributes:
        transcripts: per batch run, the command line, exit code, stdout and stderr (evidence
            for reports; newest last).
    """

    name = "bench-cli"

    def __init__(self, daemon: Daemon, client: docker.DockerClient | None = None) -> None:
        self.daemon = daemon
        self.client = client or daemon.container.client
        self.transcripts: list[dict[str, Any]] = []
        self._flags: dict[str, frozenset[str]] = {}

    def preflight(self, profile: Profile, workload: Workload) -> list[str]:
        """Problems that would stop the tool before it proves anything, one sentence each
        (empty when none): the tool is missing from the image or is not cuzk-bench-like, the
        daemon is unreachable by network, the proof kind has no ``-t`` type, or the tool
        rejects the command line (``bench_args``), quoting the tool's own usage line.

        The command-line check runs the real command once with ``-c 1`` against an address
        nothing listens on (``http://127.0.0.1:1``, networking disabled): a tool that accepts
        its arguments fails to connect at once; one that rejects them says so (clap: exit 2).
        """
        try:
            flags = self.supported_flags(profile)
            self.daemon_url(profile)
            kind = bench_type(workload.proof_kind)
        except BenchToolError as exc:
            return [str(exc)]
        job = workload.jobs[0]
        argv = self.command_line(profile, job, kind, 1, "http://127.0.0.1:1", flags)
        try:
            res = self._container(profile, argv, network=None,
                                  files={f"{_safe(job.name)}.c1": bench_input(workload, job)},
                                  timeout_s=PROBE_TIMEOUT_S, want_out=False)
        except BenchToolError as exc:
            return [str(exc)]
        bad = usage_error(res.code, res.stdout, res.stderr)
        if bad is not None:
            return [f"profile {profile.name!r}: {bad}; command (a dry run against an unused "
                    f"address): {profile.bench_tool} {' '.join(argv)}; fix bench_args in "
                    f"{profile.source or 'the profile file'}"]
        return []

    # -- public ------------------------------------------------------------------------------
    def run(self, *, profile: Profile, workload: Workload, address: str,
            log: Callable[[str], None] | None = None) -> list[JobResult]:
        """See :class:`~harness.driver_grpc.Driver`. ``address`` (the host-published port) is
        not used: the tool runs in a container and reaches the daemon on docker's network.

        Deadline: each batch gets ``ceil(COUNT / concurrency) * timeout_s + 60 s``; proofs the
        tool has not reported by then come back ``LOST``. Never raises for a job's failure:
        a tool that cannot run, or rejects its command line, makes every job ``ERROR`` with
        the tool's own message.
        """
        jobs = select_jobs(workload, profile.jobs)
        groups: dict[str, list[int]] = {}
        for i, job in enumerate(jobs):
            groups.setdefault(job.name, []).append(i)
        results: list[JobResult | None] = [None] * len(jobs)
        try:
            flags = self.supported_flags(profile)
            addr = self.daemon_url(profile)
            kind = bench_type(workload.proof_kind)
        except BenchToolError as exc:
            return [_error(job, i, str(exc)) for i, job in enumerate(jobs)]
        for indices in groups.values():
            job = jobs[indices[0]]
            for r in self._batch(profile, workload, job, indices, flags, addr, kind, log):
                results[r.index] = r
        return [r if r is not None else _error(jobs[i], i, "no result (driver bug)")
                for i, r in enumerate(results)]

    def supported_flags(self, profile: Profile) -> frozenset[str]:
        """The long flags ``<bench_tool> batch --help`` lists (e.g. ``--save-proofs``).

        Raises:
            BenchToolError: the tool is missing from the image or its help did not print.
        """
        if profile.name in self._flags:
            return self._flags[profile.name]
        res = self._container(profile, ["batch", "--help"], network=None, files={},
                              timeout_s=PROBE_TIMEOUT_S, want_out=False)
        text = res.stdout + res.stderr
        if res.timed_out or res.code != 0 or "--c1" not in text:
            raise BenchToolError(
                f"profile {profile.name!r}: `{profile.bench_tool} batch --help` in image "
                f"{profile.image!r} exited {res.code}{' (timed out)' if res.timed_out else ''} "
                f"without cuzk-bench's usage ({text.strip()[-500:]!r}); set bench_tool to the "
                "image's cuzk-bench-compatible client (refprover: 'bench', cuzk: 'cuzk-bench')")
        self._flags[profile.name] = frozenset(_FLAG.findall(text))
        return self._flags[profile.name]

    def daemon_url(self, profile: Profile) -> str:
        """``http://<daemon container IP>:<grpc port>`` on a bridge network, or
        ``http://127.0.0.1:<port>`` with ``network = "host"``.

        Raises:
            BenchToolError: network ``none``, or the daemon container has no IP address.
        """
        port = profile.grpc_port()
        if profile.network == "host":
            return f"http://127.0.0.1:{port}"
        if profile.network == "none":
            raise BenchToolError(f"profile {profile.name!r}: network 'none' leaves the bench "
                                 "client no way to reach the daemon; use 'bridge' or 'host'")
        attrs = self.daemon.inspect()
        nets = (attrs.get("NetworkSettings") or {}).get("Networks") or {}
        ip = ((nets.get(profile.network) or {}).get("IPAddress")
              or (attrs.get("NetworkSettings") or {}).get("IPAddress"))
        if not ip:
            raise BenchToolError(f"profile {profile.name!r}: daemon container "
                                 f"{self.daemon.short_id} has no IP address on network "
                                 f"{profile.network!r} (is it still running?)")
        return f"http://{ip}:{port}"

    def command_line(self, profile: Profile, job: WorkloadJob, kind: str, count: int,
                     addr: str, flags: frozenset[str]) -> list[str]:
        """The bench tool's arguments for ``count`` proofs of ``job`` (module docstring)."""
        argv = ["-a", addr, "batch", "-t", kind, "--c1", f"{IN_DIR}/{_safe(job.name)}.c1",
                "--sector-num", str(job.sectors[0].sector_id), "--miner-id", str(job.miner_id),
                "-c", str(count), "-j", str(min(profile.concurrency, count))]
        if "--save-proofs" in flags:
            argv += ["--save-proofs", OUT_DIR]
        if "--timeout" in flags:
            argv += ["--timeout", str(int(profile.timeout_s))]
        return argv + list(profile.bench_args)

    # -- one batch ---------------------------------------------------------------------------
    def _batch(self, profile: Profile, workload: Workload, job: WorkloadJob, indices: list[int],
               flags: frozenset[str], addr: str, kind: str,
               log: Callable[[str], None] | None) -> list[JobResult]:
        count = len(indices)
        argv = self.command_line(profile, job, kind, count, addr, flags)
        rounds = -(-count // min(profile.concurrency, count))
        deadline_s = rounds * profile.timeout_s + BATCH_SLACK_S
        started = time.time()
        shown = f"{profile.bench_tool} {' '.join(argv)}"
        if log:
            log(f"[{profile.name}] {shown}")
        try:
            res = self._container(profile, argv, network=profile.network,
                                  files={f"{_safe(job.name)}.c1": bench_input(workload, job)},
                                  timeout_s=deadline_s, want_out=True)
        except BenchToolError as exc:
            return [_error(job, i, str(exc), started) for i in indices]
        try:
            self.transcripts.append({"profile": profile.name, "job": job.name,
                                     "command": [profile.bench_tool, *argv],
                                     "exit_code": res.code, "timed_out": res.timed_out,
                                     "stdout": res.stdout, "stderr": res.stderr})
            return self._results(profile, job, indices, res, shown, deadline_s, flags, started,
                                 log)
        finally:
            if res.out_dir is not None:
                shutil.rmtree(res.out_dir.parent, ignore_errors=True)

    def _results(self, profile: Profile, job: WorkloadJob, indices: list[int], res: _Exit,
                 shown: str, deadline_s: float, flags: frozenset[str], started: float,
                 log: Callable[[str], None] | None) -> list[JobResult]:
        bad_cmd: BenchUsageError | None = usage_error(res.code, res.stdout, res.stderr)
        if bad_cmd is not None:
            msg = (f"{bad_cmd}; command: {shown}; fix bench_args of profile {profile.name!r} "
                   f"in {profile.source or 'the profile file'}")
            return [_error(job, i, msg, started) for i in indices]
        try:
            out = parse_bench_output(res.stdout, expected_count=len(indices))
        except BenchOutputError as exc:
            msg = f"{exc}; command: {shown}; stdout tail: {res.stdout.strip()[-500:]!r}"
            return [_error(job, i, msg, started) for i in indices]
        results = []
        for pos, i in enumerate(indices, start=1):
            line = out.lines.get(pos)
            if line is None:
                why = (f"the bench tool printed no line for proof [{pos}/{len(indices)}] within "
                       f"{deadline_s:.0f} s" if res.timed_out else
                       f"the bench tool exited {res.code} without a line for proof "
                       f"[{pos}/{len(indices)}]")
                tail = res.stderr.strip()[-500:]
                results.append(JobResult(
                    name=job.name, index=i, request_id=BENCH_REQUEST_ID,
                    status=JobStatus.LOST if res.timed_out else JobStatus.ERROR,
                    error=why + (f"; stderr: {tail!r}" if tail else ""), started_unix_s=started))
                continue
            proof, note = b"", ""
            if line.completed:
                proof, note = _saved_proof(res.out_dir, pos, flags)
            r = JobResult(
                name=job.name, index=i, request_id=BENCH_REQUEST_ID,
                status=JobStatus.COMPLETED if line.completed else JobStatus.FAILED,
                proof=proof, error=line.error if not line.completed else "",
                queue_wait_ms=line.queue_ms or 0, gpu_compute_ms=line.prove_ms or 0,
                wall_ms=line.wall_ms or 0.0, started_unix_s=started, unverifiable=note)
            if log:
                log(f"[{profile.name}] {job.name} bench [{pos}/{len(indices)}] {r.status.value} "
                    f"{r.wall_ms:.0f} ms {len(r.proof)} B")
            results.append(r)
        return results

    # -- containers --------------------------------------------------------------------------
    def _container(self, profile: Profile, argv: list[str], *, network: str | None,
                   files: dict[str, bytes], timeout_s: float, want_out: bool) -> _Exit:
        """Run the bench tool once in a labelled container and remove it.

        ``network=None`` disables networking (the help probe). Returns its exit code (-1 when
        killed at the deadline), stdout and stderr, and the host dir holding ``/out``.

        Raises:
            BenchToolError: docker refused to create or start the container (e.g. the tool is
                not in the image).
        """
        tmp = Path(tempfile.mkdtemp(prefix=f"proofdiff-bench-{profile.name}-"))
        in_dir, out_dir = tmp / "in", tmp / "out"
        in_dir.mkdir()
        out_dir.mkdir()
        os.chmod(tmp, 0o755)
        os.chmod(in_dir, 0o755)
        os.chmod(out_dir, 0o777)  # written by the container user 65534
        for name, data in files.items():
            (in_dir / name).write_bytes(data)
            os.chmod(in_dir / name, 0o644)
        labels = {LABEL_RUN: self.daemon.run_id, LABEL_PROFILE: profile.name,
                  LABEL_IMAGE: profile.image, LABEL_ROLE: "bench"}
        kwargs: dict[str, Any] = {
            "image": profile.image, "entrypoint": [profile.bench_tool], "command": argv,
            "name": f"proofdiff-{self.daemon.run_id}-{profile.name}-bench-{secrets.token_hex(3)}",
            "labels": labels, "detach": True,
            "volumes": {str(in_dir): {"bind": IN_DIR, "mode": "ro"},
                        str(out_dir): {"bind": OUT_DIR, "mode": "rw"}},
            **hardening(),
        }
        if network is None:
            kwargs["network_disabled"] = True
        else:
            kwargs["network_mode"] = network
        container = None
        keep = False
        try:
            try:
                container = self.client.containers.create(**kwargs)
                container.start()
            except docker.errors.DockerException as exc:
                said = getattr(exc, "explanation", None) or str(exc)
                raise BenchToolError(
                    f"profile {profile.name!r}: the bench container ({profile.bench_tool!r} in "
                    f"{profile.image!r}) did not start: {said}; set bench_tool to the image's "
                    "cuzk-bench-compatible client (refprover: 'bench', cuzk: 'cuzk-bench')"
                ) from None
            timed_out = False
            try:
                code = int(container.wait(timeout=timeout_s).get("StatusCode", -1))
            except (requests.exceptions.ReadTimeout, requests.exceptions.ConnectionError):
                timed_out, code = True, -1
                try:
                    container.kill()
                except docker.errors.DockerException:
                    pass
            stdout = container.logs(stdout=True, stderr=False).decode("utf-8", "replace")
            stderr = container.logs(stdout=False, stderr=True).decode("utf-8", "replace")
            keep = want_out
            return _Exit(code, stdout, stderr, timed_out, out_dir if want_out else None)
        finally:
            if container is not None:
                try:
                    container.remove(force=True, v=True)
                except docker.errors.DockerException:
                    pass
            if not keep:
                shutil.rmtree(tmp, ignore_errors=True)


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name)


def _saved_proof(out_dir: Path | None, pos: int, flags: frozenset[str]) -> tuple[bytes, str]:
    """The proof the tool saved as ``<pos>.proof`` (hex), or ``(b'', reason)``."""
    if "--save-proofs" not in flags or out_dir is None:
        return b"", NO_SAVE_PROOFS
    path = out_dir / f"{pos}.proof"
    try:
        return bytes.fromhex(path.read_text(encoding="ascii").strip()), ""
    except FileNotFoundError:
        return b"", (f"the bench tool reported COMPLETED but wrote no {pos}.proof under "
                     "--save-proofs, so the proof could not be verified")
    except (ValueError, UnicodeDecodeError) as exc:
        return b"", f"{path.name} written by the bench tool is not hex ({exc})"


def _error(job: WorkloadJob, index: int, error: str, started: float = 0.0) -> JobResult:
    return JobResult(name=job.name, index=index, request_id=BENCH_REQUEST_ID,
                     status=JobStatus.ERROR, error=error, started_unix_s=started or time.time())
