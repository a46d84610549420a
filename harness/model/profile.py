"""A profile: one named way to run the prover under test (docs/guide/profiles.md).

A profile is built and validated by :mod:`proofdiff.model.profile_file`; here are its shape and
what derives from it (the effective daemon config, the param paths, the gRPC port).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

import msgspec

from proofdiff.model.choices import DriverKind, JobIdScheme, Runtime

__all__ = [
    "DEFAULT_BINARY",
    "DEFAULT_CONFIG_PATH",
    "DEFAULT_PARAM_PATH",
    "DEFAULT_VERIFIER",
    "MOUNT_NAMES",
    "NETWORKS",
    "PROFILE_KEYS",
    "CUZK_DEFAULTS",
    "DAEMON_DEFAULTS",
    "REFPROVER_DEFAULTS",
    "TIMING_METRICS",
    "Profile",
    "deep_merge",
]

#: Where the merged daemon config is mounted in the container (the daemon's ``-c`` default).
DEFAULT_CONFIG_PATH = "/data/zk/cuzk.toml"
#: Where cuzk reads params unless ``srs.param_cache`` says otherwise
#: (docs/design/cuzk-interface.md).
DEFAULT_PARAM_PATH = "/data/zk/params"

#: The refprover daemon's defaults (targets/refprover/README.md).
REFPROVER_DEFAULTS: dict[str, Any] = {
    "daemon": {"listen": "0.0.0.0:9820"},
    "srs": {"param_cache": DEFAULT_PARAM_PATH},
    "pipeline": {"enabled": False, "self_check": False},
    "synthesis": {"partition_workers": 1},
    "scheduler": {"max_batch_size": 1},
    "logging": {"level": "info"},
}
#: cuzk-daemon's defaults (cuzk-core/src/config.rs of curio e0294b0f, its Default impls):
#: note pipeline mode on, and a unix socket to listen on.
CUZK_DEFAULTS: dict[str, Any] = {
    "daemon": {"listen": "unix:///run/curio/cuzk.sock", "status_listen": ""},
    "srs": {"param_cache": DEFAULT_PARAM_PATH},
    "memory": {"total_budget": "auto", "safety_margin": "5GiB"},
    "gpus": {"gpu_workers_per_device": 2},
    "pipeline": {"enabled": True, "synthesis_lookahead": 1, "synthesis_concurrency": 1,
                 "max_parallel_synthesis": 18},
    "scheduler": {"max_batch_size": 1, "max_batch_wait_ms": 10000},
    "logging": {"level": "info"},
}
#: Which daemon a profile's ``config`` is read against (``daemon`` key): its defaults give the
#: effective config that checks reason about; only the profile's own keys, the listen address
#: and the param path are written into the daemon's config file.
DAEMON_DEFAULTS: dict[str, dict[str, Any]] = {"refprover": REFPROVER_DEFAULTS,
                                              "cuzk": CUZK_DEFAULTS}

#: The gate's timing metrics (proofdiff.gate.timing_rounds).
TIMING_METRICS = ("latency", "throughput", "in-progress", "lone-latency")
#: Program names of the refprover build, found in the bin dir (``--bin-dir``) by the process
#: runtime when the profile names no path.
DEFAULT_BINARY, DEFAULT_VERIFIER = "refprover", "verify"
#: A daemon container's network: ``bridge`` (the default) is a network of the run's own whose
#: containers reach each other and the loopback ports they publish, and nothing outside
#: (proofdiff.runtime.networks); ``outbound`` is Docker's default bridge, with outbound access,
#: for a profile that needs it; ``host`` shares this machine's; ``none`` has none.
NETWORKS = ("bridge", "outbound", "host", "none")
MOUNT_NAMES = ("params",)

#: Every key a profile may set, with its meaning (shown in errors).
PROFILE_KEYS: dict[str, str] = {
    "daemon": f"which daemon the config is for, one of {tuple(DAEMON_DEFAULTS)} (default "
              "'refprover'): its defaults are what an unset key means",
    "runtime": f"how the daemon runs, one of {[r.value for r in Runtime]} (default 'docker'): 'process' starts "
              "`binary` on this host, 'attach' uses the daemon already running at `address`",
    "image": "image tag, e.g. 'proofdiff/refprover:0.1.0-91b2e8688208' (default: the reference image the "
             "build made)",
    "binary": "process runtime: the daemon program, a path or a name in the bin dir (default "
              "'refprover', the build's)",
    "verifier_binary": "process / attach runtimes: the independent verifier program (default "
                       "'verify' in the bin dir, the build's)",
    "address": "attach runtime: HOST:PORT of the running daemon's gRPC, e.g. '127.0.0.1:9820'",
    "status_url": "attach runtime: the running daemon's GET /status URL, e.g. "
                  "'http://127.0.0.1:9821/status' (default none)",
    "timing_floor": "the gate's timing floor (of SAME and DIFFERENT alike): a fraction such as "
                    "0.025 (2.5 %, the default; in-progress: 1 / concurrency) or a "
                    "table by metric, e.g. {latency = 0.05, throughput = 0.10}",
    "workload": "workload name, e.g. 'wpost-2k'",
    "driver": f"client driver, one of {[d.value for d in DriverKind]}",
    "concurrency": "jobs in flight at once (int >= 1)",
    "job_ids": f"request id scheme, one of {[j.value for j in JobIdScheme]}",
    "miner_id": "miner id used in curio-style job ids (int; default: the workload's)",
    "env": "container environment (table of strings)",
    "config": "daemon TOML (table): written into the daemon's config file, and read over the "
              "`daemon`'s defaults",
    "command": "args after the image entrypoint (list of strings)",
    "mounts": "container paths by mount name: {params = '/data/zk/params'}",
    "ports": "container ports to publish on 127.0.0.1 by name: {grpc = 9820, status = 9821}",
    "gpus": "GPU request: 'all', a count, or a list of device ids (default none)",
    "network": f"docker network, one of {NETWORKS} (default 'bridge': the run's own network, "
               "its published 127.0.0.1 ports and nothing outside; 'outbound' adds outbound "
               "access)",
    "cpus": "CPU limit in cores (float; default none)",
    "mem_limit": "memory limit in docker's syntax, e.g. '4g' (default none)",
    "jobs": "how many workload jobs to run (int >= 1; default all)",
    "timeout_s": "deadline per job in seconds (default 600)",
    "ready_timeout_s": "deadline for the daemon to answer GetStatus, seconds (default 60)",
    "stall_s": "the shortest stall, seconds: no daemon with requests outstanding is given up "
               "on as stalled sooner (no answer, no CPU, no GetStatus; default 15)",
    "bench_tool": "bench-cli driver: the cuzk-bench-style client in the image, run as the "
                  "entrypoint of a short-lived container (default 'bench', refprover's; "
                  "'cuzk-bench' in a cuzk image); a path or a bin-dir name for a process or "
                  "attach runtime",
    "first_run_artifacts": "files the daemon's first run must leave (warmup/first-run-artifacts): "
                           "names or globs relative to the param cache it reads, absolute paths, "
                           "or '{tmp}/...' in its temp dir; [] = none (default: its daemon "
                           "kind's, proofdiff.oracles.first_run.KIND_ARTIFACTS)",
    "bench_args": "bench-cli driver: extra args appended to `<bench_tool> -a ADDR batch -t TYPE "
                  "--c1 FILE --sector-num N --miner-id M -c COUNT -j CONCURRENCY` "
                  "(list of strings; default none)",
}


def deep_merge(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    """``base`` with ``over`` merged in: tables merge recursively, other values replace.

    Neither argument is modified.
    """
    out = copy.deepcopy(dict(base))
    for key, value in over.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


class Profile(msgspec.Struct, frozen=True, kw_only=True):
    """One named way to run the prover under test.

    Mapping fields are plain dicts: treat them as read-only. Build profiles with
    :func:`proofdiff.model.profile_file.load_profiles`, which validates every key.

    Attributes:
        name: profile name (``bench``, ``prod``).
        runtime: how the daemon runs (:class:`~proofdiff.model.choices.Runtime`).
        daemon: ``refprover`` | ``cuzk`` (:data:`DAEMON_DEFAULTS`): whose defaults an unset
            config key has.
        workload: workload name.
        image: image tag; ``None`` = the reference image the build made (pinned to its content
            tag when the run is planned, before anything starts).
        driver: client driver (``grpc`` | ``bench-cli``).
        concurrency: jobs in flight at once.
        job_ids: request id scheme (``uuid`` | ``curio`` | ``fixed``).
        miner_id: miner id for curio-style ids; ``None`` = the workload's.
        env: container environment. config: the profile's own daemon config (see
            :meth:`effective_config`). command: args after the image entrypoint.
        mounts: container path by mount name (``params``).
        ports: container port by name (``grpc`` is required for the grpc driver).
        gpus: ``None``, ``'all'``, a count or a tuple of device ids.
        network: docker network mode. cpus: CPU limit in cores. mem_limit: docker syntax.
        jobs: how many workload jobs to run; ``None`` = all.
        timeout_s: deadline per job, seconds (default 600).
        ready_timeout_s: deadline for readiness, seconds (default 60).
        stall_s: the stall rule's floor, seconds (default 15;
            :mod:`proofdiff.drivers.stall_rule`).
        bench_tool, bench_args: the bench client of the ``bench-cli`` driver and its extra args.
        first_run_artifacts: what the daemon's first run must leave behind (names or globs:
            :mod:`proofdiff.oracles.first_run`); ``None`` = its daemon kind's; () = none.
        binary, verifier_binary: the daemon and verifier programs of a process runtime
            (``None``: the build's, by name in the bin dir).
        address, status_url: where an attached daemon answers (attach runtime).
        timing_floor: the gate's floor by metric (:data:`TIMING_METRICS`; unset = 2.5 %, and
            1 / concurrency for in-progress): a change shown inside it is SAME, one shown
            beyond it DIFFERENT (proofdiff.gate.timing_rounds.floor_of).
        source: the file the profile came from. overrides: the ``--set`` overrides applied.
    """

    name: str
    workload: str
    runtime: Runtime = Runtime.DOCKER
    daemon: str = "refprover"
    image: str | None = None
    driver: DriverKind = DriverKind.GRPC
    concurrency: int = 1
    job_ids: JobIdScheme = JobIdScheme.UUID
    miner_id: int | None = None
    env: dict[str, str] = msgspec.field(default_factory=dict)
    config: dict[str, Any] = msgspec.field(default_factory=dict)
    command: tuple[str, ...] = ()
    mounts: dict[str, str] = msgspec.field(default_factory=dict)
    ports: dict[str, int] = msgspec.field(default_factory=lambda: {"grpc": 9820})
    gpus: str | int | tuple[str, ...] | None = None
    network: str = "bridge"
    cpus: float | None = None
    mem_limit: str | None = None
    jobs: int | None = None
    timeout_s: float = 600.0
    ready_timeout_s: float = 60.0
    stall_s: float = 15.0
    bench_tool: str = "bench"
    bench_args: tuple[str, ...] = ()
    first_run_artifacts: tuple[str, ...] | None = None
    binary: str | None = None
    verifier_binary: str | None = None
    address: str = ""
    status_url: str = ""
    timing_floor: dict[str, float] = msgspec.field(default_factory=dict)
    source: str = ""
    overrides: tuple[str, ...] = ()

    @property
    def program(self) -> str:
        """What runs the daemon, for records and messages: the image tag (docker), the
        daemon program (process) or the address (attach)."""
        if self.runtime is Runtime.PROCESS:
            return self.binary or DEFAULT_BINARY
        if self.runtime is Runtime.ATTACH:
            return f"attached {self.address}"
        return self.image_tag

    @property
    def image_tag(self) -> str:
        """The image to run; raises when the profile was never planned (image unset).

        Raises:
            ValueError: ``image`` is still ``None`` (plan the run first: proofdiff.core.plan).
        """
        if self.image is None:
            raise ValueError(f"profile {self.name!r} has no image yet: the run plan pins the "
                             "reference image before anything starts (proofdiff.core.plan)")
        return self.image

    def effective_config(self) -> dict[str, Any]:
        """The config the daemon runs with: its defaults (``daemon``) <- ``config``."""
        return deep_merge(DAEMON_DEFAULTS[self.daemon], self.config)

    def written_config(self) -> dict[str, Any]:
        """The config file proofdiff writes: ``config`` with the listen address and the param
        path made explicit (the daemon's defaults otherwise: a key proofdiff wrote that the
        daemon does not know would be flagged as the profile's)."""
        defaults = DAEMON_DEFAULTS[self.daemon]
        return deep_merge({"daemon": {"listen": defaults["daemon"]["listen"]},
                           "srs": {"param_cache": defaults["srs"]["param_cache"]}}, self.config)

    def param_read_path(self) -> str:
        """Container path the daemon reads params from (``srs.param_cache``)."""
        return str(self.effective_config().get("srs", {}).get("param_cache", DEFAULT_PARAM_PATH))

    def param_mount_path(self) -> str:
        """Container path where the host param cache is mounted (``mounts.params``); defaults
        to :meth:`param_read_path`, so a profile that sets only ``srs.param_cache`` gets its
        params where the daemon reads them."""
        return self.mounts.get("params", self.param_read_path())

    def grpc_port(self) -> int:
        """Container port of the gRPC listener (``ports.grpc``, default 9820)."""
        return int(self.ports.get("grpc", 9820))

    def launch_problems(self) -> list[tuple[str, str]]:
        """Mismatches that would make the daemon fail for reasons of the profile, not the
        daemon: params mounted where the daemon does not read, or a gRPC port that differs
        from ``daemon.listen``. One ``(cause, fix)`` per problem (empty when fine)."""
        problems = []
        if self.runtime is Runtime.ATTACH:
            return [] if self.address else [(
                f"profile {self.name!r}: runtime 'attach' needs `address` (HOST:PORT of the "
                "running daemon)", f"set address in {self.source or 'the profile file'}")]
        read, mounted = self.param_read_path(), self.param_mount_path()
        if read != mounted:
            problems.append((
                f"profile {self.name!r}: params are mounted at {mounted!r} but the daemon reads "
                f"srs.param_cache={read!r}", f"set config.srs.param_cache = {mounted!r} or "
                f"mounts.params = {read!r} in {self.source or 'the profile file'}"))
        listen = str(self.effective_config().get("daemon", {}).get("listen", ""))
        if listen and not listen.startswith("unix:") and ":" in listen:
            port = listen.rsplit(":", 1)[1]
            if port.isdigit() and int(port) != self.grpc_port():
                problems.append((f"profile {self.name!r}: daemon.listen={listen!r} but "
                                 f"ports.grpc={self.grpc_port()}", "make them the same port"))
        return problems
