"""The ``bench-cli`` driver: jobs go through the image's cuzk-bench-style client, as operators
benchmark (cuzk-bench's flags, curio e0294b0f ``extern/cuzk/cuzk-bench``)::

    <bench_tool> -a http://<daemon>:<port> batch -t porep --c1 /in/<job>.c1
        --sector-num N --miner-id M -c COUNT -j CONCURRENCY [--save-proofs /out]
        [--timeout S] <bench_args...>
    <bench_tool> ... batch -t wpost --vanilla /in/<job>.vanilla --randomness HEX
        --registered-proof R ...                     (a JSON array of base64 vanilla proofs)

The tool takes one input per run, so a flow's jobs are grouped by workload job; each group is
one short-lived run of the tool (a container of the profile's image, role ``bench``, on the
daemon's docker network; a process for a process or attach runtime), with ``-j`` = the group's
share of the flow's concurrency; groups run side by side up to that concurrency. The tool
prints one line per proof (:mod:`proofdiff.drivers.bench_output`); each becomes a
:class:`~proofdiff.model.jobs.JobRecord`.

A real cuzk proves one WindowPoSt partition per request and cuzk-bench's ``batch`` always asks
for partition 0, so for a cuzk daemon (``daemon = "cuzk"``) a WindowPoSt job of several
partitions is proved with ``single --partition K`` per partition, each with that partition's
sectors; ``single`` prints the 192-byte proof whole, so these proofs are verified, and the
job's record joins its partitions' (:func:`proofdiff.drivers.partitions.merge_partitions`).
cuzk-bench has no flag that writes proofs out (its ``single`` and ``batch`` arguments, curio
e0294b0f ``extern/cuzk/cuzk-bench/src/main.rs``); ``single`` is its only way to hand one out, so
a tool without ``--save-proofs`` proves every job whose whole proof ``single`` prints
(:data:`~proofdiff.drivers.bench_output.SINGLE_PRINTS_WHOLE` bytes: a 2 KiB PoRep, one
WindowPoSt partition) with one ``single`` run per proof; only larger proofs (a 32 GiB PoRep's
1920 bytes) go through ``batch`` and are unverifiable.

What the tool cannot give: request ids (it makes a fresh UUID per proof and does not print it:
records say :data:`TOOL_CHOSEN_ID`), and per-proof start times. Start times are reconstructed
from the printed walls: the tool's ``-j`` workers take the proofs in index order, each as soon
as a worker is free. Proofs: with ``--save-proofs`` (refprover's extension, found in ``batch
--help``) the proof bytes come back and are verified; real cuzk-bench has no such flag, so its
COMPLETED proofs are counted but marked ``unverifiable`` with the reason.
"""

from __future__ import annotations

import concurrent.futures as cf
import re
import time
from collections.abc import Sequence

import msgspec

from proofdiff.model.choices import Role, Runtime
from proofdiff.model.jobs import DaemonTimings, JobRecord, JobSpec
from proofdiff.model.profile import Profile
from proofdiff.model.status import JobStatus
from proofdiff.model.workload import POREP, PROOF_BYTES_PER_PARTITION, Workload, WorkloadJob
from proofdiff.runtime.runner import Runner
from proofdiff.runtime.spec import OUT_DIR, ContainerError, LaunchSpec, Handle, ToolResult

from proofdiff.drivers.protocol import Log, Mode
from proofdiff.drivers.bench_inputs import BenchToolError, bench_input, bench_type, input_path, starts
from proofdiff.drivers.bench_output import (SINGLE_PRINTS_WHOLE, BenchOutputError,
                                            parse_bench_output, parse_single_output, usage_error)
from proofdiff.drivers.deadlines import Deadlines
from proofdiff.drivers.partitions import merge_partitions
from proofdiff.drivers.hang_guard import INTERRUPTED, Guard

__all__ = ["TOOL_CHOSEN_ID", "BenchCliDriver", "BenchToolError"]

#: A bench-cli job's ``request_id``: the tool picks its own id and does not print it.
TOOL_CHOSEN_ID = "(bench tool uuid)"
NO_SAVE_PROOFS = ("the bench tool has no --save-proofs flag (real cuzk-bench prints timings "
                  "only), so this proof was counted, not verified; run the profile with driver "
                  "'grpc' to verify its proofs")
_FLAG = re.compile(r"(?<![\w-])(--[a-z][a-z0-9-]*)")
#: An address nothing listens on, for the dry run of a command line.
NOWHERE = "http://127.0.0.1:1"


class BenchCliDriver:
    """Sends jobs through the profile's bench tool (see the module docstring).

    Args:
        runner: the run's container runner. profile: the profile (image, tool, args).
        daemon: the daemon's handle (its network address); ``None`` when only the command
            line is checked (:meth:`check_command_line` needs no daemon). For a process or
            attach runtime, the tool runs as a process on this host and reaches the daemon on
            loopback.
    """

    name = "bench-cli"
    chooses_ids = False
    modes = frozenset({Mode.PROVE})

    def __init__(self, runner: Runner, profile: Profile,
                 daemon: Handle | None = None) -> None:
        self.runner, self.profile, self.daemon = runner, profile, daemon
        self._flags: frozenset[str] | None = None
        self._checked: dict[str, str | None] = {}

    # -- what the tool accepts ---------------------------------------------------------------
    def supported_flags(self, deadlines: Deadlines) -> frozenset[str]:
        """The long flags ``<bench_tool> batch --help`` lists (``--save-proofs`` ...), cached.

        Raises:
            BenchToolError: the tool is missing from the image or printed no cuzk-bench usage.
        """
        if self._flags is None:
            res = self._tool(("batch", "--help"), network=None, files={}, timeout_s=deadlines.tool_s)
            if res.timed_out or res.exit_code != 0 or "--c1" not in res.output:
                raise BenchToolError(
                    f"profile {self.profile.name!r}: `{self.profile.bench_tool} batch --help` in "
                    f"image {self.profile.image!r} exited {res.exit_code}"
                    f"{' (timed out)' if res.timed_out else ''} without cuzk-bench's usage "
                    f"({res.output.strip()[-500:]!r})",
                    fix="set bench_tool to the image's cuzk-bench-compatible client "
                        "(refprover: 'bench', cuzk: 'cuzk-bench')")
            self._flags = frozenset(_FLAG.findall(res.output))
        return self._flags

    def single_runs(self, job: WorkloadJob, flags: frozenset[str]) -> list[int | None] | None:
        """How one proof of ``job`` is asked for with ``single`` (module docstring): one run
        per partition (``[0, 1, ...]``: a cuzk daemon and a WindowPoSt job of several
        partitions), one run for the whole job (``[None]``: a tool without ``--save-proofs``
        and a proof ``single`` prints whole), or ``None``: ``batch``."""
        if (self.profile.daemon == "cuzk" and job.shape.proof_kind != POREP
                and job.shape.partitions > 1):
            return list(range(job.shape.partitions))
        if ("--save-proofs" not in flags
                and job.shape.partitions * PROOF_BYTES_PER_PARTITION <= SINGLE_PRINTS_WHOLE):
            return [None]
        return None

    def command_line(self, job: WorkloadJob, kind: str, count: int, workers: int, addr: str,
                     flags: frozenset[str], partition: int | None = None,
                     single: bool = False) -> list[str]:
        """The tool's arguments for ``count`` proofs of ``job`` on ``workers`` workers, or
        (``single``) for one proof of it, or for one ``partition`` of it (``single
        --partition K``)."""
        single = single or partition is not None
        if job.shape.proof_kind == POREP:
            inputs = ["--c1", input_path(job)]
        else:
            inputs = ["--vanilla", input_path(job, partition), "--randomness", job.randomness.hex(),
                      "--registered-proof", str(job.shape.registered_proof)]
        sector = (job.sectors[0] if partition is None
                  else job.partition_inputs()[partition][0][0]).sector_id
        head = ["-a", addr, "single" if single else "batch", "-t", kind, *inputs,
                "--sector-num", str(sector), "--miner-id", str(job.miner_id)]
        argv = head + (["--partition", str(partition)] if partition is not None
                       else [] if single else ["-c", str(count), "-j", str(workers)])
        if "--save-proofs" in flags:
            argv += ["--save-proofs", OUT_DIR]
        if "--timeout" in flags:
            argv += ["--timeout", str(int(self.profile.timeout_s))]
        return argv + list(self.profile.bench_args)

    def check_command_line(self, workload: Workload, deadlines: Deadlines) -> str | None:
        """Why the tool would stop before proving anything (``None`` when it would not): the
        tool is missing or not cuzk-bench-like, the proof kind has no ``-t`` type, or the tool
        rejects the command line (``bench_args``), quoting its own usage line.

        The one dry parse: the real command runs once with ``-c 1`` against an address nothing
        listens on, with no network. A tool that accepts its arguments fails to connect at
        once; one that rejects them says so (clap: exit 2, ``error:`` and ``Usage:`` lines).
        Cached per workload.
        """
        if workload.name in self._checked:
            return self._checked[workload.name]
        problem: str | None = None
        try:
            flags = self.supported_flags(deadlines)
            job = workload.jobs[0]
            runs = self.single_runs(job, flags)
            part = runs[0] if runs else None
            argv = self.command_line(job, bench_type(job.shape.proof_kind), 1, 1, NOWHERE, flags,
                                     part, single=runs is not None)
            res = self._tool(tuple(argv), network=None, timeout_s=deadlines.tool_s,
                             files={input_path(job, part): bench_input(job, part)})
            bad = usage_error(res.exit_code, res.stdout, res.stderr)
            if bad is not None:
                problem = (f"profile {self.profile.name!r}: {bad}; command (a dry run against an "
                           f"unused address): {self.profile.bench_tool} {' '.join(argv)}; fix "
                           f"bench_args in {self.profile.source or 'the profile file'}")
        except BenchToolError as exc:
            problem = str(exc)
        self._checked[workload.name] = problem
        return problem

    # -- sending -----------------------------------------------------------------------------
    def send(self, specs: Sequence[JobSpec], *, workload: Workload, concurrency: int, mode: Mode,
             guard: Guard, deadlines: Deadlines, log: Log) -> list[JobRecord]:
        """See :class:`~proofdiff.drivers.protocol.Driver`. A tool that cannot run, or rejects its
        command line, makes every job ``ERROR`` with the tool's own message."""
        groups: dict[str, list[JobSpec]] = {}
        for s in specs:
            groups.setdefault(s.job, []).append(s)
        try:
            flags = self.supported_flags(deadlines)
            kinds = {j: bench_type(workload.job(j).shape.proof_kind) for j in groups}
            addr = self._daemon_url()
        except BenchToolError as exc:
            guard.done(len(specs))
            return [self._error(s, str(exc)) for s in specs]
        workers = {job: max(1, min(concurrency, len(g))) for job, g in groups.items()}
        side_by_side = max(1, concurrency // max(workers.values(), default=1))

        def batch(job: str) -> list[JobRecord]:
            try:
                runs = self.single_runs(workload.job(job), flags)
                if runs is not None:
                    got = [self._singles(workload, s, runs, flags, kinds[job], addr, guard,
                                         deadlines, log) for s in groups[job]]
                else:
                    got = self._batch(workload, groups[job], workers[job], flags, kinds[job],
                                      addr, guard, deadlines, log)
                for r in got:  # the tool's answers come together, when it exits
                    guard.answered(r)
                return got
            finally:
                guard.done(len(groups[job]))

        with cf.ThreadPoolExecutor(side_by_side, thread_name_prefix="bench-cli") as pool:
            try:
                return [r for got in pool.map(batch, groups) for r in got]
            except BaseException:  # Ctrl-C: the tools are stopped now, not at the deadline
                guard.trip(INTERRUPTED, stall=False)
                raise

    def _daemon_url(self) -> str:
        port = self.profile.grpc_port()
        if self.daemon is not None and self.daemon.runtime is not Runtime.DOCKER:
            return f"http://{self.daemon.ip()}:{self.daemon.host_port('grpc')}"
        if self.profile.network == "host":
            return f"http://127.0.0.1:{port}"
        if self.profile.network == "none":
            raise BenchToolError(f"profile {self.profile.name!r}: network 'none' leaves the bench "
                                 "client no way to reach the daemon",
                                 fix="set the profile's network to 'bridge' or 'host'")
        ip = self.daemon.ip() if self.daemon else ""
        if not ip:
            raise BenchToolError(f"profile {self.profile.name!r}: daemon container "
                                 f"{self.daemon.short_id if self.daemon else '(none)'} has no IP "
                                 f"address on network {self.profile.network!r}",
                                 fix="is it still running? see its log")
        return f"http://{ip}:{port}"

    def _tool_network(self) -> str | None:
        """The network a bench tool container joins: the daemon container's own for a
        ``bridge`` profile (the address :meth:`_daemon_url` gives is on it; a run's sessions
        each have a network of their own, and a daemon may outlive the session that started
        it), else the profile's network mode."""
        if (self.profile.network == "bridge" and self.daemon is not None
                and self.daemon.runtime is Runtime.DOCKER):
            return self.daemon.network() or self.profile.network
        return self.profile.network

    def _tool(self, argv: tuple[str, ...], *, network: str | None, files: dict[str, bytes],
              timeout_s: float, want_out: bool = False, guard: Guard | None = None) -> ToolResult:
        process = self.profile.runtime is not Runtime.DOCKER
        spec = LaunchSpec(image=self.profile.bench_tool if process else self.profile.image_tag,
                             role=Role.BENCH, profile=self.profile.name,
                             entrypoint=(self.profile.bench_tool,), command=argv, files=files,
                             want_out=want_out, network=network,
                             name=self.runner.unique_name(self.profile.name, "bench"),
                             runtime=Runtime.PROCESS if process else Runtime.DOCKER)
        try:
            return self.runner.run(spec, timeout_s=timeout_s,
                                   should_stop=guard.expired if guard else None)
        except ContainerError as exc:
            where = "this host" if process else repr(self.profile.image)
            fix = ("set bench_tool to the cuzk-bench-compatible client (refprover: 'bench', "
                   "cuzk: 'cuzk-bench'; a path for a process runtime)")
            raise BenchToolError(f"profile {self.profile.name!r}: the bench tool "
                                 f"({self.profile.bench_tool!r} on {where}) did not "
                                 f"start: {exc.headline}",
                                 fix=f"{fix}; {exc.fix}" if exc.fix else fix) from None

    def _batch(self, workload: Workload, group: list[JobSpec], workers: int,
               flags: frozenset[str], kind: str, addr: str, guard: Guard, deadlines: Deadlines,
               log: Log) -> list[JobRecord]:
        job = workload.job(group[0].job)
        argv = self.command_line(job, kind, len(group), workers, addr, flags)
        shown = f"{self.profile.bench_tool} {' '.join(argv)}"
        log(shown)
        started = time.time()
        try:
            res = self._tool(tuple(argv), network=self._tool_network(), want_out=True, guard=guard,
                             timeout_s=deadlines.flow_s(len(group), workers),
                             files={input_path(job): bench_input(job)})
        except BenchToolError as exc:
            return [self._error(s, str(exc), started) for s in group]
        bad = usage_error(res.exit_code, res.stdout, res.stderr)
        if bad is not None:
            msg = (f"{bad}; command: {shown}; fix bench_args of profile {self.profile.name!r} "
                   f"in {self.profile.source or 'the profile file'}")
            return [self._error(s, msg, started) for s in group]
        try:
            out = parse_bench_output(res.stdout, expected_count=len(group))
        except BenchOutputError as exc:
            msg = f"{exc}; command: {shown}; stdout tail: {res.stdout.strip()[-500:]!r}"
            return [self._error(s, msg, started) for s in group]
        walls = [(out.lines[p].wall_ms or 0.0) if p in out.lines else 0.0
                 for p in range(1, len(group) + 1)]
        offsets = starts(walls, workers)
        records = []
        for pos, spec in enumerate(group, start=1):
            line = out.lines.get(pos)
            t_start = started + offsets[pos - 1] / 1000.0
            if line is None:
                why = (f"the bench tool was stopped ({guard.reason})" if res.stopped else
                       f"the bench tool printed no line for proof [{pos}/{len(group)}] within its "
                       "deadline" if res.timed_out else
                       f"the bench tool exited {res.exit_code} without a line for proof "
                       f"[{pos}/{len(group)}]")
                tail = res.stderr.strip()[-500:]
                status = guard.given_up() if res.stopped or res.timed_out else JobStatus.ERROR
                records.append(self._error(spec, why + (f"; stderr: {tail!r}" if tail else ""),
                                           t_start, status))
                continue
            proof, note, error = (self._saved_proof(res, pos, flags) if line.completed
                                  else (b"", "", line.error))
            records.append(JobRecord(
                index=spec.index, job=spec.job, request_id=TOOL_CHOSEN_ID, priority=spec.priority,
                status=JobStatus.COMPLETED if line.completed else JobStatus.FAILED, proof=proof,
                error=error, timings=DaemonTimings(
                    queue_wait_ms=line.queue_ms or 0, srs_load_ms=0, synthesis_ms=0,
                    gpu_compute_ms=line.prove_ms or 0, total_ms=int(line.wall_ms or 0)),
                wall_ms=line.wall_ms or 0.0, started_unix_s=t_start, unverifiable=note))
        return records

    def _singles(self, workload: Workload, spec: JobSpec, runs: list[int | None],
                 flags: frozenset[str], kind: str, addr: str, guard: Guard, deadlines: Deadlines,
                 log: Log) -> JobRecord:
        """One job as ``single`` runs (``runs``: :meth:`single_runs`), one after another."""
        job = workload.job(spec.job)
        parts: list[JobRecord] = []
        for k in runs:
            argv = self.command_line(job, kind, 1, 1, addr, flags, k, single=True)
            shown = f"{self.profile.bench_tool} {' '.join(argv)}"
            log(shown)
            started = time.time()
            try:
                res = self._tool(tuple(argv), network=self._tool_network(), guard=guard,
                                 timeout_s=deadlines.flow_s(1, 1),
                                 files={input_path(job, k): bench_input(job, k)})
                bad = usage_error(res.exit_code, res.stdout, res.stderr)
                if bad is not None:
                    raise BenchToolError(f"{bad}; command: {shown}",
                                         fix=f"fix bench_args of profile {self.profile.name!r} "
                                             f"in {self.profile.source or 'the profile file'}")
                if res.stopped or res.timed_out:
                    parts.append(self._error(spec, f"the bench tool was stopped ({guard.reason})"
                                             if res.stopped else "the bench tool ran past its "
                                             "deadline", started, guard.given_up()))
                    break
                out = parse_single_output(res.stdout)
            except (BenchToolError, BenchOutputError) as exc:
                parts.append(self._error(spec, f"{'' if k is None else f'partition {k}: '}{exc}",
                                         started))
                break
            proof, note = out.proof or b"", ""
            if out.completed and out.proof is None:
                note = (f"the tool printed only the start of the {out.proof_len}-byte proof, so "
                        "it was counted, not verified")
            parts.append(JobRecord(
                index=spec.index, job=spec.job, request_id=out.job_id or TOOL_CHOSEN_ID,
                priority=spec.priority, status=JobStatus.COMPLETED if out.completed
                else JobStatus.FAILED, proof=proof, error=out.error, job_id=out.job_id,
                timings=out.timings,
                wall_ms=out.wall_ms or (time.time() - started) * 1000.0, started_unix_s=started,
                unverifiable=note))
            if not out.completed:
                break
        merged = merge_partitions(spec, TOOL_CHOSEN_ID, parts)
        notes = [r.unverifiable for r in parts if r.unverifiable]
        return msgspec.structs.replace(merged, unverifiable=notes[0]) if notes else merged

    def _saved_proof(self, res: ToolResult, pos: int,
                     flags: frozenset[str]) -> tuple[bytes, str, str]:
        """``(proof, unverifiable, error)`` of proof ``pos``: the bytes the tool saved as
        ``<pos>.proof`` (hex). Without ``--save-proofs`` the proof is unverifiable (the reason);
        with it, a missing or non-hex file is an error: the tool said COMPLETED but handed
        back no proof, which the validity oracle reports as an invalid proof."""
        if "--save-proofs" not in flags:
            return b"", NO_SAVE_PROOFS, ""
        raw = res.out_files.get(f"{pos}.proof")
        if raw is None:
            return b"", "", (f"the bench tool reported COMPLETED but wrote no {pos}.proof under "
                             "--save-proofs")
        try:
            return bytes.fromhex(raw.decode("ascii").strip()), "", ""
        except (ValueError, UnicodeDecodeError) as exc:
            return b"", "", f"{pos}.proof written by the bench tool is not hex ({exc})"

    def _error(self, spec: JobSpec, error: str, started: float = 0.0,
               status: JobStatus = JobStatus.ERROR) -> JobRecord:
        return JobRecord(index=spec.index, job=spec.job, request_id=TOOL_CHOSEN_ID,
                         priority=spec.priority, status=status, error=error,
                         started_unix_s=started or time.time())
