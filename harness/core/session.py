"""The differential session: one plan (profiles on one image slot), computed on demand.

It starts at most one daemon per profile (through the one container runner, watched by the
owner's watchdog), runs each workload once through the profile's driver and verifies it, sends
the other flows after it (so a fresh daemon's first proof is always the workload run's first
job: the warmup), and evaluates each suite once per workload. What it computes is kept in a
:class:`~proofdiff.core.store.Store`: in memory, or shared between pytest-xdist workers.
What preflight looks at around the daemons is :class:`~proofdiff.core.preflight_looks.
PreflightLooks`; what the oracles read of a started daemon,
:class:`~proofdiff.core.daemon_readings.DaemonReadings`; the order and overlap of a whole
plan's work, :mod:`proofdiff.core.schedule`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from pathlib import Path

import msgspec

from proofdiff.core import preload, probes
from proofdiff.core.daemon_readings import DaemonReadings, daemon_facts
from proofdiff.core.plan import Plan
from proofdiff.core.library_probe import LibraryLook
from proofdiff.core.preflight_looks import PreflightLooks
from proofdiff.core.side_by_side import Placement
from proofdiff.core.store import MemoryStore, Store
from proofdiff.core.suite_result import SuiteResult, merge_flows, once
from proofdiff.drivers.bench_cli import BenchCliDriver
from proofdiff.drivers.deadlines import Deadlines, deadlines_for
from proofdiff.drivers.flow import prove_many
from proofdiff.drivers.hang_guard import CpuProbe
from proofdiff.drivers.stall_rule import AnswerClock
from proofdiff.drivers.for_profile import driver_for
from proofdiff.drivers.job_ids import JobIdError
from proofdiff.drivers.protocol import Driver, Mode, plan_workload
from proofdiff.model.choices import Role, Runtime
from proofdiff.model.errors import ProofdiffError
from proofdiff.model.image import ImageInfo
from proofdiff.model.jobs import FlowRecord, JobSpec
from proofdiff.model.oracle_records import OracleRecord
from proofdiff.model.profile import DEFAULT_VERIFIER, Profile
from proofdiff.model.runs import RunRecord
from proofdiff.model.status import JobStatus
from proofdiff.model.workload import MIXED, Workload, WorkloadError, load_workload
from proofdiff.oracles.preflight import BLOCKING
from proofdiff.oracles.suite_table import SUITES
from proofdiff.runtime.daemon import Daemon, LaunchError, ReadyProbe, start_daemon
from proofdiff.runtime.identity import program_identity
from proofdiff.runtime.runner import Runner
from proofdiff.runtime.spec import ContainerError
from proofdiff.runtime.watchdog import Watchdog
from proofdiff.verify.served_verifier import ServedVerifier
from proofdiff.verify.tool_verifier import ToolVerifier, Verifier
from proofdiff.verify.verify_ahead import verified

__all__ = ["Session", "SuiteResult", "TIMED_FLOWS", "merge_flows"]

#: Flows whose walls are timing samples (the timing suite's, the gate's rounds,
#: benchmarks/gate_noise.py's): their proofs are verified after the flow's last answer, never
#: while its other jobs prove, so that the verifier's CPU is not taken from the daemon's.
TIMED_FLOWS = ("timing", "gate", "noise")


# gRPC's stack (grpc, the cuzk stubs: a noticeable import) is imported by the first daemon's
# readiness probe, on its start thread while the daemon boots, not with this module, so that
# no run waits for it on its critical path
def _status_probe(address: str) -> ReadyProbe:
    from proofdiff.drivers.cuzk_client import status_probe

    return status_probe(address)


class Session(PreflightLooks, DaemonReadings):
    """Computes a plan's runs and records on demand; see the module docstring.

    Args:
        plan: what to run. store: where results are kept (default in memory).
        log: progress lines (default: ignore). worker: pytest-xdist worker id ('' for none),
            part of container names.
    """

    def __init__(self, plan: Plan, *, store: Store | None = None,
                 log: Callable[[str], None] | None = None, worker: str = "") -> None:
        self.plan, self.worker = plan, worker
        self.store: Store = store or MemoryStore()
        self._log = log or (lambda _line: None)
        self.profiles: dict[str, Profile] = dict(plan.profiles)
        self.image_slot = plan.image_slot
        self.param_cache = Path(plan.param_cache)
        self.params_manifest = Path(plan.params_manifest) if plan.params_manifest else None
        self._runner: Runner | None = None
        self._watchdog: Watchdog | None = None
        self._workloads: dict[str, Workload | WorkloadError] = {}
        self._daemons: dict[str, Daemon | LaunchError] = {}
        self._drivers: dict[str, Driver] = {}
        self._identities: dict[str, ImageInfo | ContainerError] = {}
        self._param_files: dict[str, probes.ParamFiles | ProofdiffError] = {}
        self._bench_checks: dict[str, str | None] = {}
        self._library_looks: dict[str, LibraryLook | ProofdiffError] = {}
        self._flows: dict[tuple[str, str], list[FlowRecord]] = {}
        self._clocks: dict[str, AnswerClock] = {}
        self._verifiers: dict[str, ServedVerifier] = {}
        self._run_keys: list[tuple[str, str]] = []
        #: called once, on the thread that made the last one, with every planned workload run
        #: (each profile x workload, in plan order) as soon as all are made: the run's plots
        #: are drawn from them while the later suites prove (:mod:`proofdiff.report.plots_ahead`)
        self.on_runs_made: Callable[[list[RunRecord]], None] | None = None
        self._runs_made = threading.Lock()
        self.suites_done: dict[tuple[str, str], SuiteResult] = {}
        #: the schedule :meth:`evaluate` chose (``None``: suites asked one by one, as the
        #: pytest plugin does: one profile after the other, unpinned)
        self.placement: Placement | None = None

    # -- plumbing ------------------------------------------------------------------------
    def log(self, line: str) -> None:
        """One line of progress."""
        self._log(line)

    @property
    def runner(self) -> Runner:
        """The one runner, with this process's watchdog started on first use (the Docker
        engine is contacted on first docker use only)."""
        if self._runner is None:
            self._watchdog = Watchdog().start()
            self._runner = Runner(self.plan.run_id, tracker=self._watchdog, tool_dirs=[
                Path(self.plan.bin_dir)] if self.plan.bin_dir else [])
        return self._runner

    def deadlines(self, profile: str) -> Deadlines:
        """The profile's deadlines (its ``timeout_s``; the plan's verifier timeout)."""
        return deadlines_for(self.profiles[profile], verify_s=self.plan.verify_timeout_s)

    def watch(self, profile: str) -> tuple[AnswerClock, CpuProbe | None]:
        """What the hang guard observes of ``profile``'s daemon: its answers over every flow,
        and its CPU when it proves on the CPU (no GPU requested; a started daemon)."""
        d = self.daemon(profile)
        cpu = d.sampler.latest if d.sampler is not None and d.profile.gpus is None else None
        return self._clocks.setdefault(profile, AnswerClock()), cpu

    def workload(self, name: str) -> Workload:
        """The loaded workload ``name`` (cached, errors too).

        Raises:
            WorkloadError: no file for it, or the file is not a valid workload.
        """
        def load() -> Workload:
            path = self.plan.workload_files.get(name)
            if path is None:
                raise WorkloadError(f"no workload file for {name!r}; known: "
                                    f"{sorted(self.plan.workload_files)}",
                                    fix=f"build it (proofdiff build --workload {name}) or pass "
                                        f"--workload-file {name}=PATH")
            return load_workload(path)
        return once(self._workloads, name, load, WorkloadError)

    def daemon(self, profile: str) -> Daemon:
        """The profile's ready daemon, started on first use (one per process).

        Raises:
            LaunchError: it could not start (cached: later calls raise the same at once).
        """
        def start() -> Daemon:
            p = self.profiles[profile]
            self.log(f"starting {profile} ({p.runtime}: {p.program})")
            try:
                d = start_daemon(self.runner, p, self.param_cache, probe=_status_probe,
                                 name=self.runner.unique_name(profile, self.worker),
                                 cpuset=self.placement.cpusets.get(profile, ())
                                 if self.placement else ())
            except ContainerError as exc:  # no engine: as good as a daemon that did not start
                if isinstance(exc, LaunchError):
                    raise
                raise LaunchError(exc.headline, fix=exc.fix, role=Role.DAEMON, profile=profile,
                                  log_tail=exc.log_tail) from None
            self.log(f"{profile} ready in {d.start_to_ready_ms:.0f} ms at {d.address}")
            return d
        return once(self._daemons, profile, start, LaunchError)

    def driver(self, profile: str) -> Driver:
        """The profile's driver (cached).

        Raises:
            LaunchError: the daemon did not start.
        """
        if profile not in self._drivers:
            self._drivers[profile] = driver_for(self.profiles[profile], self.daemon(profile),
                                                self.runner)
        return self._drivers[profile]

    def verifier(self, profile: str) -> Verifier:
        """The independent verifier for ``profile``'s proofs: the plan's verifier image for a
        docker runtime (a container per flow), else the profile's ``verifier_binary`` (default:
        the bin dir's) as one ``verify --serve`` process for all its flows."""
        p = self.profiles[profile]
        if p.runtime is Runtime.DOCKER:
            return ToolVerifier(self.runner, self.plan.verifier_image, self.param_cache,
                                profile=profile, timeout_s=self.plan.verify_timeout_s)
        if profile not in self._verifiers:
            self._verifiers[profile] = ServedVerifier(
                self.runner, p.verifier_binary or DEFAULT_VERIFIER, self.param_cache,
                profile=profile, timeout_s=self.plan.verify_timeout_s)
        return self._verifiers[profile]

    def image(self, profile: str) -> ImageInfo:
        """What runs ``profile``'s daemon: the image tag and id, or the program's resolved
        path and ``sha256:`` of its file; digest '' when attached (cached, errors too).

        Raises:
            ContainerError: the image is not present, or the program is not an executable
                file here (with the fix).
        """
        return once(self._identities, profile,
                    lambda: program_identity(self.runner, self.profiles[profile]),
                    ContainerError)

    def identity(self, profile: str) -> ImageInfo:
        """:meth:`image`, or the program with the reason it is not known (never raises)."""
        try:
            return self.image(profile)
        except ContainerError as exc:
            return ImageInfo(tag=self.profiles[profile].program, detail=exc.headline)

    def _wait_s(self, profiles: Sequence[str]) -> float:
        return sum(self.deadlines(p).flow_s(8, 1) for p in profiles) * 3 + 600.0

    # -- runs and flows ------------------------------------------------------------------
    def run(self, profile: str, workload: str) -> RunRecord:
        """The workload run of ``profile`` (run once, then shared; never raises: what went
        wrong is in ``errors``). Its flows are the workload flow only; :meth:`runs` adds the
        other flows sent to the same daemon."""
        if (profile, workload) not in self._run_keys:
            self._run_keys.append((profile, workload))
        run = self.store.get_or_compute(self._run_key(profile, workload), RunRecord,
                                        lambda: self._execute(profile, workload),
                                        self._wait_s([profile]))
        if self.on_runs_made is not None:
            self._all_runs_made()
        return run

    def _all_runs_made(self) -> None:
        """Call :attr:`on_runs_made` once every planned workload run is made (once)."""
        with self._runs_made:
            tell = self.on_runs_made
            made = [self.store.cached(self._run_key(p, w), RunRecord)
                    for w in self.plan.workloads for p in self.profiles]
            if tell is None or any(r is None for r in made):
                return
            self.on_runs_made = None
        tell([r for r in made if r is not None])

    def _run_key(self, profile: str, workload: str) -> str:
        return f"run/{self.image_slot}/{profile}/{workload}"

    def _execute(self, profile: str, workload: str) -> RunRecord:
        p = self.profiles[profile]
        base = RunRecord(profile=profile, workload=workload, image=ImageInfo(tag=p.program),
                         partitions=0)
        try:
            wl = self.workload(workload)
            base = msgspec.structs.replace(base, partitions=wl.partitions, job_partitions={
                j.name: j.shape.partitions for j in wl.jobs} if wl.proof_kind == MIXED else {})
            daemon = self.daemon(profile)
            driver = self.driver(profile)
            specs = plan_workload(p, wl)
        except (WorkloadError, LaunchError, JobIdError) as exc:
            return msgspec.structs.replace(base, errors=(str(exc),))
        base = msgspec.structs.replace(base, image=self.identity(profile))
        if isinstance(driver, BenchCliDriver):  # a rejected command line is not a daemon result
            problem = self.bench_command_problem(profile, workload)
            if problem:
                return msgspec.structs.replace(base, errors=(problem,),
                                               daemon=daemon_facts(daemon))
        self.log(f"{profile}/{workload}: {len(specs)} jobs at concurrency {p.concurrency}")
        flow = self._prove(profile, wl, specs, name="workload", concurrency=p.concurrency)
        self.log(f"{profile}/{workload}: {len(flow.completed())}/{len(flow.jobs)} completed in "
                 f"{flow.wall_ms / 1000:.1f} s")
        cut_off = any(j.status in (JobStatus.ERROR, JobStatus.LOST) for j in flow.jobs)
        return msgspec.structs.replace(base, flows=(flow,),
                                       daemon=daemon_facts(daemon, settle_s=3.0 if cut_off else 0.0))

    def send(self, profile: str, workload: str, specs: Sequence[JobSpec], *, name: str,
             label: str = "", concurrency: int, mode: Mode = Mode.PROVE,
             cross: bool = False) -> FlowRecord:
        """Another flow on ``profile``'s daemon after its workload run, verified (``cross``:
        against every input sent); see :class:`proofdiff.oracles.evidence.Evidence`."""
        self.run(profile, workload)
        wl = self.workload(workload)
        flow = self._prove(profile, wl, specs, name=name, label=label, concurrency=concurrency,
                           mode=mode, cross=cross)
        self._flows.setdefault((profile, workload), []).append(flow)
        return flow

    def _prove(self, profile: str, wl: Workload, specs: Sequence[JobSpec], *, name: str,
               concurrency: int, label: str = "", mode: Mode = Mode.PROVE,
               cross: bool = False) -> FlowRecord:
        """One flow to ``profile``'s daemon, verified as it goes
        (:func:`~proofdiff.verify.verify_ahead.verified`), or after its last answer when it is
        timed (:data:`TIMED_FLOWS`). The first flow also starts the heavy imports
        (:mod:`proofdiff.core.preload`): from then on this thread waits on gRPC."""
        preload.start()
        clock, cpu = self.watch(profile)
        daemon = self.daemon(profile)
        return verified(lambda on_answer: prove_many(
            self.driver(profile), daemon.address, wl, specs, name=name,
            label=label, profile=profile, concurrency=concurrency, mode=mode,
            deadlines=self.deadlines(profile), log=lambda line: self.log(f"[{profile}] {line}"),
            clock=clock, cpu=cpu, probe=daemon.process, on_answer=on_answer),
            self.verifier(profile), wl, cross=cross,
            names=list(dict.fromkeys(s.job for s in specs)), ahead=name not in TIMED_FLOWS)

    def flows(self, profile: str, workload: str) -> list[FlowRecord]:
        """See :class:`proofdiff.oracles.evidence.Evidence`."""
        return [*self.run(profile, workload).flows, *self._flows.get((profile, workload), [])]

    def blocked(self, profile: str, workload: str) -> str | None:
        """Why proving checks skip ``profile``: a failed blocking preflight check, or a daemon
        that did not start or died; ``None`` when it is fine."""
        bad = [r for r in self.suite_records("preflight", workload)
               if r.profile == profile and r.oracle in BLOCKING and r.outcome.bad]
        if bad:
            return (f"preflight of profile {profile!r} failed ({', '.join(r.oracle for r in bad)}):"
                    f" {bad[0].message.splitlines()[0][:300]}")
        try:
            state = self.daemon(profile).state()
        except LaunchError as exc:
            return f"profile {profile!r} has no daemon: {exc.headline.splitlines()[0]}"
        if state.get("Status") not in ("running", None):
            return (f"the daemon of profile {profile!r} is {state.get('Status')} (exit code "
                    f"{state.get('ExitCode')}, OOMKilled={state.get('OOMKilled')})")
        return None

    # -- suites --------------------------------------------------------------------------
    def suite(self, suite: str, workload: str) -> SuiteResult:
        """One suite's records on ``workload`` for every profile (evaluated once)."""
        def compute() -> SuiteResult:
            before = {k: len(v) for k, v in self._flows.items()}
            records = SUITES[suite].evaluate(self, workload)
            flows = {p: tuple(v[before.get((p, w), 0):]) for (p, w), v in self._flows.items()
                     if w == workload and len(v) > before.get((p, w), 0)}
            return SuiteResult(suite=suite, workload=workload, records=tuple(records), flows=flows)

        got = self.store.get_or_compute(self.suite_key(suite, workload), SuiteResult, compute,
                                        self._wait_s(list(self.profiles)) * 6)
        self.suites_done[(suite, workload)] = got
        return got

    def suite_key(self, suite: str, workload: str) -> str:
        """The store key of one suite's result on ``workload``."""
        return f"suite/{self.image_slot}/{suite}/{workload}"

    def suite_records(self, suite: str, workload: str) -> list[OracleRecord]:
        """The records of :meth:`suite`."""
        return list(self.suite(suite, workload).records)

    def evaluate(self) -> None:
        """Every planned suite on every planned workload (:func:`proofdiff.core.schedule.evaluate`:
        daemons started at once, then the suites in order, or every profile's at the same time
        where the host allows)."""
        from proofdiff.core.schedule import evaluate

        evaluate(self)

    def sent_flows(self, profile: str, workload: str) -> list[FlowRecord]:
        """The flows :meth:`send` sent to ``profile``'s daemon for ``workload`` so far (the
        workload run's flow not included)."""
        return list(self._flows.get((profile, workload), []))

    def records(self) -> list[OracleRecord]:
        """Every record computed so far (preflight ones made for gating included)."""
        return [r for s in self.suites_done.values() for r in s.records]

    def runs(self) -> list[RunRecord]:
        """Every run made so far (none is started here), each with all the flows sent to its
        daemon by the suites evaluated."""
        made = [self.store.cached(self._run_key(p, w), RunRecord) for p, w in self._run_keys]
        return merge_flows([r for r in made if r is not None], list(self.suites_done.values()))

    def close(self) -> None:
        """Stop and remove this process's daemons (an attached one is left running), then end
        its watchdog, not waiting for its last sweep: everything it could find was removed
        here (idempotent)."""
        for name in list(self._daemons):
            d = self._daemons.pop(name)
            if isinstance(d, Daemon):
                d.remove()
        for v in self._verifiers.values():
            v.close()
        if self._runner is not None:
            self._runner.close()
        if self._watchdog is not None:
            self._watchdog.close(wait=False)
            self._watchdog = None
