"""Profiles: named ways to run one target image (DESIGN.md section 1, 'A profile file').

A profile file is TOML with a ``[defaults]`` table and one ``[profiles.NAME]`` table per profile;
each profile is ``defaults`` deep-merged with its own table, then with the command-line
overrides (``--set prod.env.REFPROVER_FAULTS=partition-race``), then validated into a frozen
:class:`Profile`.

Errors: every problem is a :class:`ProfileError` naming the file, the profile and the key, and
saying how to fix it.
"""

from __future__ import annotations

import copy
import re
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = [
    "ALL_PROFILES",
    "DEFAULT_CONFIG_PATH",
    "DEFAULT_PARAM_PATH",
    "JOB_ID_SCHEMES",
    "DRIVERS",
    "PROFILE_KEYS",
    "REFPROVER_DEFAULTS",
    "Override",
    "Profile",
    "ProfileError",
    "deep_merge",
    "load_profiles",
    "parse_override",
    "select_profiles",
]

#: Where the merged daemon config is mounted in the container (the daemon's ``-c`` default).
DEFAULT_CONFIG_PATH = "/data/zk/cuzk.toml"
#: Where the daemon reads params unless ``srs.param_cache`` says otherwise.
DEFAULT_PARAM_PATH = "/data/zk/params"

#: The refprover daemon's defaults (targets/refprover/README.md); a profile's ``config`` is
#: merged over these to give the effective config written into the container.
REFPROVER_DEFAULTS: dict[str, Any] = {
    "daemon": {"listen": "0.0.0.0:9820"},
    "srs": {"param_cache": DEFAULT_PARAM_PATH},
    "pipeline": {"enabled": False, "self_check": False},
    "synthesis": {"partition_workers": 1},
    "scheduler": {"max_batch_size": 1},
    "logging": {"level": "info"},
}

DRIVERS = ("grpc", "bench-cli")
JOB_ID_SCHEMES = ("uuid", "curio", "fixed")
NETWORKS = ("bridge", "host", "none")
MOUNT_NAMES = ("params",)
#: The profile name of an override that applies to every profile: ``--set '*.image=TAG'``.
ALL_PROFILES = "*"

#: Every key a profile may set, with its meaning (shown in errors).
PROFILE_KEYS: dict[str, str] = {
    "image": "image tag, e.g. 'proofdiff/refprover:latest'",
    "workload": "workload name, e.g. 'wpost-2k'",
    "driver": f"client driver, one of {DRIVERS}",
    "concurrency": "jobs in flight at once (int >= 1)",
    "job_ids": f"request id scheme, one of {JOB_ID_SCHEMES}",
    "miner_id": "miner id used in curio-style job ids (int; default: the workload's)",
    "env": "container environment (table of strings)",
    "config": "daemon TOML (table), merged over the refprover defaults",
    "command": "args after the image entrypoint (list of strings)",
    "mounts": "container paths by mount name: {params = '/data/zk/params'}",
    "ports": "container ports to publish on 127.0.0.1 by name: {grpc = 9820, status = 9821}",
    "gpus": "GPU request: 'all', a count, or a list of device ids (default none)",
    "network": f"docker network mode, one of {NETWORKS} (default 'bridge')",
    "cpus": "CPU limit in cores (float; default none)",
    "mem_limit": "memory limit in docker's syntax, e.g. '4g' (default none)",
    "jobs": "how many workload jobs to run (int >= 1; default all)",
    "timeout_s": "deadline per job in seconds (default 600)",
    "ready_timeout_s": "deadline for the daemon to answer GetStatus, seconds (default 60)",
    "bench_tool": "bench-cli driver: the cuzk-bench-style client in the image, run as the "
                  "entrypoint of a short-lived container (default 'bench', refprover's; "
                  "'cuzk-bench' in a cuzk image)",
    "bench_args": "bench-cli driver: extra args appended to `<bench_tool> -a ADDR batch -t TYPE "
                  "--c1 FILE --sector-num N --miner-id M -c COUNT -j CONCURRENCY` "
                  "(list of strings; default none)",
}


class ProfileError(ValueError):
    """A profile file or override is wrong; the message names the file, profile, key and fix."""


@dataclass(frozen=True)
class Profile:
    """One named way to run the target.

    Mapping fields are plain dicts: treat them as read-only (the dataclass is frozen, so
    instances are not hashable; key them by ``name``).

    Attributes:
        name: profile name (``bench``, ``prod``).
        image: image tag.
        workload: workload name.
        driver: client driver name (``grpc``).
        concurrency: jobs in flight at once.
        job_ids: request id scheme (``uuid`` | ``curio`` | ``fixed``).
        miner_id: miner id for curio-style ids; ``None`` = the workload's.
        env: container environment.
        config: the profile's own daemon config (see :meth:`effective_config` for the merge).
        command: args after the image entrypoint.
        mounts: container path by mount name (``params``).
        ports: container port by name (``grpc`` is required for the grpc driver).
        gpus: ``None``, ``'all'``, a count or a tuple of device ids.
        network: docker network mode.
        cpus: CPU limit in cores, or ``None``.
        mem_limit: memory limit (docker syntax), or ``None``.
        jobs: how many workload jobs to run; ``None`` = all.
        timeout_s: deadline per job, seconds (default 600).
        ready_timeout_s: deadline for readiness, seconds (default 60).
        bench_tool: the bench client run by the ``bench-cli`` driver (default ``bench``).
        bench_args: extra args for the bench client (``bench-cli`` only).
        source: the file the profile came from.
        overrides: the ``--set`` overrides applied, as ``key=value`` strings.
    """

    name: str
    image: str
    workload: str
    driver: str = "grpc"
    concurrency: int = 1
    job_ids: str = "uuid"
    miner_id: int | None = None
    env: dict[str, str] = field(default_factory=dict)
    config: dict[str, Any] = field(default_factory=dict)
    command: tuple[str, ...] = ()
    mounts: dict[str, str] = field(default_factory=dict)
    ports: dict[str, int] = field(default_factory=lambda: {"grpc": 9820})
    gpus: str | int | tuple[str, ...] | None = None
    network: str = "bridge"
    cpus: float | None = None
    mem_limit: str | None = None
    jobs: int | None = None
    timeout_s: float = 600.0
    ready_timeout_s: float = 60.0
    bench_tool: str = "bench"
    bench_args: tuple[str, ...] = ()
    source: str = ""
    overrides: tuple[str, ...] = ()

    def effective_config(self) -> dict[str, Any]:
        """The daemon config written into the container: refprover defaults <- ``config``."""
        return deep_merge(REFPROVER_DEFAULTS, self.config)

    def param_read_path(self) -> str:
        """Container path the daemon reads params from (``srs.param_cache``)."""
        return str(self.effective_config().get("srs", {}).get("param_cache", DEFAULT_PARAM_PATH))

    def param_mount_path(self) -> str:
        """Container path where the host param cache is mounted (``mounts.params``).

        Defaults to :meth:`param_read_path`, so a profile that sets only ``srs.param_cache``
        gets its params where the daemon reads them.
        """
        return self.mounts.get("params", self.param_read_path())

    def grpc_port(self) -> int:
        """Container port of the gRPC listener (``ports.grpc``, default 9820)."""
        return int(self.ports.get("grpc", 9820))

    def preflight_problems(self) -> list[str]:
        """Mismatches that make the daemon fail for reasons of the profile, not the daemon.

        Returns one sentence per problem (empty when fine): params mounted somewhere the daemon
        does not read, or a gRPC port that differs from ``daemon.listen``.
        """
        problems = []
        read, mounted = self.param_read_path(), self.param_mount_path()
        if read != mounted:
            problems.append(
                f"profile {self.name!r}: params are mounted at {mounted!r} but the daemon reads "
                f"srs.param_cache={read!r}; set config.srs.param_cache = {mounted!r} or "
                f"mounts.params = {read!r} in {self.source or 'the profile file'}"
            )
        listen = str(self.effective_config().get("daemon", {}).get("listen", ""))
        if listen and not listen.startswith("unix:") and ":" in listen:
            port = listen.rsplit(":", 1)[1]
            if port.isdigit() and int(port) != self.grpc_port():
                problems.append(
                    f"profile {self.name!r}: daemon.listen={listen!r} but ports.grpc="
                    f"{self.grpc_port()}; make them the same port"
                )
        return problems


@dataclass(frozen=True)
class Override:
    """One ``--set PROFILE.KEY.PATH=VALUE`` override.

    ``value`` is the TOML literal when ``VALUE`` parses as one (``true``, ``4``, ``"x"``,
    ``[1, 2]``), else the raw string.
    """

    profile: str
    path: tuple[str, ...]
    value: Any
    text: str


def parse_override(text: str) -> Override:
    """Parse ``prod.env.REFPROVER_FAULTS=partition-race`` into an :class:`Override`.

    The profile ``*`` means every profile of the file (``*.gpus=none``).

    Raises:
        ProfileError: no ``=``, or fewer than two dotted parts before it.
    """
    key, sep, raw = text.partition("=")
    parts = tuple(p.strip() for p in key.strip().split("."))
    if not sep or len(parts) < 2 or any(not p for p in parts):
        raise ProfileError(
            f"--set {text!r}: expected PROFILE.KEY[.SUBKEY...]=VALUE, "
            "e.g. --set prod.env.REFPROVER_FAULTS=partition-race"
        )
    try:
        value: Any = tomllib.loads(f"v = {raw}")["v"]
    except tomllib.TOMLDecodeError:
        value = raw
    return Override(profile=parts[0], path=parts[1:], value=value, text=text)


def deep_merge(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    """Return ``base`` with ``over`` merged in: tables merge recursively, other values replace.

    Neither argument is modified.
    """
    out = copy.deepcopy(dict(base))
    for key, value in over.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ProfileError(
            f"profile file {str(path)!r} does not exist; pass an existing file "
            "(--profiles / --proofdiff-profiles), e.g. profiles/refprover.toml"
        ) from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        # Python 3.11's tomllib has no lineno attribute; its message ends with
        # "(at line L, column C)": keep the message and lead with file:line.
        m = re.search(r"at line (\d+), column \d+", str(exc))
        line = getattr(exc, "lineno", None) or (int(m.group(1)) if m else None)
        where = f"{path}:{line}" if line else str(path)
        raise ProfileError(f"{where}: malformed TOML: {exc}; fix the file and rerun") from None


def _expect(cond: bool, where: str, key: str, want: str, got: Any) -> None:
    if not cond:
        raise ProfileError(f"{where}: key {key!r} must be {want}, got {got!r}")


def _build(name: str, raw: Mapping[str, Any], source: str, overrides: tuple[str, ...]) -> Profile:
    where = f"{source} [profiles.{name}]"
    unknown = sorted(set(raw) - set(PROFILE_KEYS))
    if unknown:
        valid = "\n".join(f"  {k}: {v}" for k, v in PROFILE_KEYS.items())
        raise ProfileError(
            f"{where}: unknown key {unknown[0]!r}"
            + (f" (also {unknown[1:]})" if len(unknown) > 1 else "")
            + f"; valid keys:\n{valid}"
        )
    for req in ("image", "workload"):
        _expect(isinstance(raw.get(req), str) and bool(raw.get(req)), where, req,
                "a non-empty string (set it in [defaults] or the profile)", raw.get(req))
    driver = raw.get("driver", "grpc")
    _expect(driver in DRIVERS, where, "driver", f"one of {DRIVERS}", driver)
    job_ids = raw.get("job_ids", "uuid")
    _expect(job_ids in JOB_ID_SCHEMES, where, "job_ids", f"one of {JOB_ID_SCHEMES}", job_ids)
    conc = raw.get("concurrency", 1)
    _expect(isinstance(conc, int) and not isinstance(conc, bool) and conc >= 1,
            where, "concurrency", "an int >= 1", conc)
    miner = raw.get("miner_id")
    _expect(miner is None or (isinstance(miner, int) and miner >= 0), where, "miner_id",
            "an int >= 0", miner)
    env = raw.get("env", {})
    _expect(isinstance(env, Mapping), where, "env", "a table of strings", env)
    env = {str(k): v if isinstance(v, str) else str(v).lower() if isinstance(v, bool) else str(v)
           for k, v in env.items()}
    config = raw.get("config", {})
    _expect(isinstance(config, Mapping), where, "config", "a table", config)
    command = raw.get("command", [])
    _expect(isinstance(command, list) and all(isinstance(c, str) for c in command),
            where, "command", "a list of strings", command)
    mounts = raw.get("mounts", {})
    _expect(isinstance(mounts, Mapping) and set(mounts) <= set(MOUNT_NAMES)
            and all(isinstance(v, str) and v.startswith("/") for v in mounts.values()),
            where, "mounts", f"a table of absolute container paths named {MOUNT_NAMES}", mounts)
    ports = raw.get("ports", {"grpc": 9820})
    _expect(isinstance(ports, Mapping) and all(isinstance(v, int) for v in ports.values()),
            where, "ports", "a table of container port numbers, e.g. {grpc = 9820}", ports)
    if driver == "grpc" and "grpc" not in ports:
        ports = {**ports, "grpc": 9820}
    gpus = raw.get("gpus")
    if gpus in (0, "none"):  # an explicit "no GPU request" (what --set X.gpus=none types)
        gpus = None
    _expect(gpus is None or gpus == "all" or (isinstance(gpus, int) and gpus >= 0)
            or (isinstance(gpus, list) and all(isinstance(g, str) for g in gpus)),
            where, "gpus", "'all', a count, a list of device ids, or 'none'", gpus)
    network = raw.get("network", "bridge")
    _expect(network in NETWORKS, where, "network", f"one of {NETWORKS}", network)
    cpus = raw.get("cpus")
    _expect(cpus is None or (isinstance(cpus, (int, float)) and cpus > 0), where, "cpus",
            "a positive number of cores", cpus)
    mem = raw.get("mem_limit")
    _expect(mem is None or isinstance(mem, (str, int)), where, "mem_limit",
            "docker syntax like '4g'", mem)
    jobs = raw.get("jobs")
    _expect(jobs is None or (isinstance(jobs, int) and jobs >= 1), where, "jobs",
            "an int >= 1", jobs)
    bench_tool = raw.get("bench_tool", "bench")
    _expect(isinstance(bench_tool, str) and bool(bench_tool.strip()), where, "bench_tool",
            "a non-empty string naming the bench client in the image", bench_tool)
    bench_args = raw.get("bench_args", [])
    _expect(isinstance(bench_args, list) and all(isinstance(a, str) for a in bench_args),
            where, "bench_args", "a list of strings, e.g. ['--timeout', '1800']", bench_args)
    if driver == "bench-cli":
        _expect(job_ids == "uuid", where, "job_ids", "'uuid' with driver 'bench-cli' (the bench "
                "tool makes a fresh UUID per proof; use driver 'grpc' for curio or fixed ids)",
                job_ids)
    for key, default in (("timeout_s", 600.0), ("ready_timeout_s", 60.0)):
        val = raw.get(key, default)
        _expect(isinstance(val, (int, float)) and not isinstance(val, bool) and val > 0,
                where, key, "a positive number of seconds", val)
    profile = Profile(
        name=name, image=raw["image"], workload=raw["workload"], driver=driver,
        concurrency=conc, job_ids=job_ids, miner_id=miner, env=env,
        config=copy.deepcopy(dict(config)), command=tuple(command), mounts=dict(mounts),
        ports={str(k): int(v) for k, v in ports.items()},
        gpus=tuple(gpus) if isinstance(gpus, list) else gpus, network=network,
        cpus=float(cpus) if cpus is not None else None,
        mem_limit=str(mem) if mem is not None else None, jobs=jobs,
        timeout_s=float(raw.get("timeout_s", 600.0)),
        ready_timeout_s=float(raw.get("ready_timeout_s", 60.0)),
        bench_tool=bench_tool, bench_args=tuple(bench_args), source=source, overrides=overrides,
    )
    return profile


def _set_path(table: dict[str, Any], path: tuple[str, ...], value: Any, where: str) -> None:
    node = table
    for i, part in enumerate(path[:-1]):
        nxt = node.setdefault(part, {})
        if not isinstance(nxt, dict):
            raise ProfileError(f"{where}: cannot set {'.'.join(path)}: "
                               f"{'.'.join(path[:i + 1])} is {nxt!r}, not a table")
        node = nxt
    node[path[-1]] = value


def load_profiles(path: str | Path, overrides: Iterable[str | Override] = ()) -> dict[str, Profile]:
    """Load every profile of a profile file, with ``--set`` overrides applied.

    Args:
        path: the TOML file.
        overrides: ``PROFILE.KEY...=VALUE`` strings or parsed :class:`Override` objects,
            applied in order; ``*`` as PROFILE applies to every profile.

    Returns:
        Profiles by name, in file order.

    Raises:
        ProfileError: missing file, malformed TOML (with file:line), unknown top-level table,
            unknown key (listing the valid keys), bad value, or an override naming an
            unknown profile (listing the known ones).
    """
    path = Path(path)
    doc = _read_toml(path)
    extra = sorted(set(doc) - {"defaults", "profiles"})
    if extra:
        raise ProfileError(f"{path}: unknown top-level table {extra[0]!r}; a profile file has "
                           "[defaults] and [profiles.NAME] tables only")
    defaults = doc.get("defaults", {})
    tables = doc.get("profiles", {})
    if not isinstance(tables, dict) or not tables:
        raise ProfileError(f"{path}: no profiles; add at least one [profiles.NAME] table")
    parsed = [o if isinstance(o, Override) else parse_override(o) for o in overrides]
    for o in parsed:
        if o.profile != ALL_PROFILES and o.profile not in tables:
            raise ProfileError(f"--set {o.text!r}: unknown profile {o.profile!r}; known "
                               f"profiles in {path}: {', '.join(tables)}")
    out: dict[str, Profile] = {}
    for name, table in tables.items():
        if not isinstance(table, dict):
            raise ProfileError(f"{path}: [profiles.{name}] must be a table")
        raw = deep_merge(defaults, table)
        mine = [o for o in parsed if o.profile in (name, ALL_PROFILES)]
        for o in mine:
            _set_path(raw, o.path, o.value, f"--set {o.text!r}")
        out[name] = _build(name, raw, str(path), tuple(o.text for o in mine))
    return out


def select_profiles(profiles: Mapping[str, Profile], names: Iterable[str]) -> dict[str, Profile]:
    """Pick profiles by name, in the order given; no names = all.

    Raises:
        ProfileError: an unknown name (listing the known ones).
    """
    names = list(names)
    if not names:
        return dict(profiles)
    for n in names:
        if n not in profiles:
            raise ProfileError(f"unknown profile {n!r}; known profiles: {', '.join(profiles)}")
    return {n: profiles[n] for n in names}
