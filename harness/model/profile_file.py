"""Profile files: TOML with ``[defaults]`` and ``[profiles.NAME]`` tables, plus ``--set`` overrides.

Each profile is ``defaults`` deep-merged with its own table, then with the command-line overrides
(``--set prod.env.REFPROVER_FAULTS=partition-race``), then validated into a frozen
:class:`~proofdiff.model.profile.Profile`. Profile sets ship with the package
(``harness/profiles/*.toml``) and are named by their stem: ``refprover`` (the default) and
``cuzk``; any other value is a path.

Errors: every problem is a :class:`ProfileError` naming the file, the profile and the key, and
saying how to fix it.
"""

from __future__ import annotations

import copy
import importlib.resources
import re
import tomllib
from collections.abc import Iterable, Mapping
from enum import StrEnum
from pathlib import Path
from typing import Any, TypeVar

import msgspec

from proofdiff.model.errors import ProofdiffError
from proofdiff.model.choices import DriverKind, JobIdScheme, Runtime
from proofdiff.model.profile import (DAEMON_DEFAULTS, MOUNT_NAMES, NETWORKS, PROFILE_KEYS,
                                     TIMING_METRICS, Profile, deep_merge)

__all__ = ["ALL_PROFILES", "DEFAULT_PROFILE_SET", "Override", "ProfileError", "build_profiles",
           "load_profiles", "parse_override", "profile_file", "profile_table", "select_profiles",
           "shipped_profile_sets", "toml_error_where"]

#: The profile name of an override that applies to every profile: ``--set '*.image=TAG'``.
ALL_PROFILES = "*"
#: The profile set used when none is named.
DEFAULT_PROFILE_SET = "refprover"


class ProfileError(ProofdiffError):
    """A profile file or override is wrong; the message names the file, profile, key and fix."""


class Override(msgspec.Struct, frozen=True, kw_only=True):
    """One ``--set PROFILE.KEY.PATH=VALUE`` override; ``value`` is the TOML literal when
    ``VALUE`` parses as one (``true``, ``4``, ``"x"``, ``[1, 2]``), else the raw string."""

    profile: str
    path: tuple[str, ...]
    value: Any
    text: str


def shipped_profile_sets() -> dict[str, Path]:
    """The profile sets shipped with proofdiff, by name (``cuzk``, ``refprover``, ...), sorted
    (the order of ``--help`` and the errors does not hang on the file system's)."""
    root = importlib.resources.files("proofdiff") / "profiles"
    return {p.name.removesuffix(".toml"): Path(str(p))
            for p in sorted(root.iterdir(), key=lambda p: p.name) if p.name.endswith(".toml")}


def profile_file(name_or_path: str | Path | None) -> Path:
    """The file of a profile set: a shipped set's name, or a path (``None`` = the default set).

    Raises:
        ProfileError: neither a shipped set nor an existing file (lists the shipped sets).
    """
    text = str(name_or_path or DEFAULT_PROFILE_SET)
    shipped = shipped_profile_sets()
    if text in shipped:
        return shipped[text]
    path = Path(text)
    if path.is_file():
        return path
    raise ProfileError(f"profile file {text!r} does not exist",
                       fix=f"pass an existing file or a shipped profile set "
                           f"({', '.join(sorted(shipped))}) with --profiles / --proofdiff-profiles")


def parse_override(text: str) -> Override:
    """Parse ``prod.env.REFPROVER_FAULTS=partition-race`` into an :class:`Override`; the profile
    ``*`` means every profile of the file (``*.gpus=none``).

    Raises:
        ProfileError: no ``=``, or fewer than two dotted parts before it.
    """
    key, sep, raw = text.partition("=")
    parts = tuple(p.strip() for p in key.strip().split("."))
    if not sep or len(parts) < 2 or any(not p for p in parts):
        raise ProfileError(f"--set {text!r}: expected PROFILE.KEY[.SUBKEY...]=VALUE",
                           fix="write it as PROFILE.KEY[.SUBKEY...]=VALUE, e.g. "
                               "--set prod.env.REFPROVER_FAULTS=partition-race")
    try:
        value: Any = tomllib.loads(f"v = {raw}")["v"]
    except tomllib.TOMLDecodeError:
        value = raw
    return Override(profile=parts[0], path=parts[1:], value=value, text=text)


def toml_error_where(path: str | Path, exc: tomllib.TOMLDecodeError) -> str:
    """``path:LINE`` of a TOML parse error (Python 3.11's tomllib has no lineno attribute; its
    message ends with "(at line L, column C)"), or ``path`` when it names no line."""
    m = re.search(r"at line (\d+)", str(exc))
    return f"{path}:{m.group(1)}" if m else str(path)


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ProfileError(f"profile file {str(path)!r} cannot be read ({exc.strerror})",
                           fix="pass an existing file (--profiles / --proofdiff-profiles)"
                           ) from None
    except tomllib.TOMLDecodeError as exc:
        raise ProfileError(f"{toml_error_where(path, exc)}: malformed TOML: {exc}",
                           fix="fix the file and rerun") from None


def _expect(cond: bool, where: str, key: str, want: str, got: Any) -> None:
    if not cond:
        raise ProfileError(f"{where}: key {key!r} must be {want}, got {got!r}",
                           fix=f"correct {key!r} in the profile (or its [defaults]), or override "
                               f"it with --set PROFILE.{key}=VALUE")


E = TypeVar("E", bound=StrEnum)


def _choice(raw: Mapping[str, Any], key: str, enum: type[E], default: E, where: str) -> E:
    """``raw[key]`` as a member of ``enum`` (default when unset).

    Raises:
        ProfileError: a value that is no member (lists the valid ones).
    """
    value = raw.get(key, default)
    try:
        return enum(value)
    except ValueError:
        raise ProfileError(f"{where}: key {key!r} must be one of "
                           f"{tuple(m.value for m in enum)}, got {value!r}",
                           fix=f"set {key} to one of those in the profile, or with --set "
                               f"PROFILE.{key}=VALUE") from None


def _is_int(v: Any, minimum: int) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= minimum


def _env(raw: Any, where: str) -> dict[str, str]:
    _expect(isinstance(raw, Mapping), where, "env", "a table of strings", raw)
    return {str(k): v if isinstance(v, str) else str(v).lower() if isinstance(v, bool) else str(v)
            for k, v in raw.items()}


def _gpus(raw: Any, where: str) -> str | int | tuple[str, ...] | None:
    if raw in (0, "none"):  # an explicit "no GPU request" (what --set X.gpus=none types)
        return None
    _expect(raw is None or raw == "all" or _is_int(raw, 0)
            or (isinstance(raw, list) and all(isinstance(g, str) for g in raw)),
            where, "gpus", "'all', a count, a list of device ids, or 'none'", raw)
    return tuple(raw) if isinstance(raw, list) else raw


def _build(name: str, raw: Mapping[str, Any], source: str, overrides: tuple[str, ...]) -> Profile:
    where = f"{source} [profiles.{name}]"
    if "target" in raw:
        raise ProfileError(f"{where}: key 'target' is now called 'runtime' (how the daemon runs; "
                           "'target' means only the prover under test)",
                           fix=f"write runtime = {raw['target']!r} in the file, or --set "
                               f"{name}.runtime={raw['target']} on the command line")
    unknown = sorted(set(raw) - set(PROFILE_KEYS))
    if unknown:
        valid = "\n".join(f"  {k}: {v}" for k, v in PROFILE_KEYS.items())
        raise ProfileError(f"{where}: unknown key {unknown[0]!r}"
                           + (f" (also {unknown[1:]})" if len(unknown) > 1 else ""),
                           fix=f"use one of the valid keys:\n{valid}")
    workload, image = raw.get("workload"), raw.get("image")
    runtime = _choice(raw, "runtime", Runtime, Runtime.DOCKER, where)
    daemon = raw.get("daemon", "refprover")
    _expect(daemon in DAEMON_DEFAULTS, where, "daemon", f"one of {tuple(DAEMON_DEFAULTS)}", daemon)
    for key in ("binary", "verifier_binary"):
        _expect(raw.get(key) is None or (isinstance(raw[key], str) and bool(raw[key].strip())),
                where, key, "a program path or name", raw.get(key))
    address, status_url = raw.get("address", ""), raw.get("status_url", "")
    _expect(isinstance(address, str) and (not address or re.fullmatch(r"[\w.\-\[\]:]+:\d+",
                                                                      address) is not None),
            where, "address", "HOST:PORT, e.g. '127.0.0.1:9820'", address)
    _expect(isinstance(status_url, str) and (not status_url or status_url.startswith("http")),
            where, "status_url", "an http URL, e.g. 'http://127.0.0.1:9821/status'", status_url)
    if runtime is Runtime.ATTACH:
        _expect(bool(address), where, "address", "set for runtime 'attach' (HOST:PORT of the "
                "running daemon)", address)
    _expect(isinstance(workload, str) and bool(workload), where, "workload",
            "a non-empty string (set it in [defaults] or the profile)", workload)
    _expect(image is None or (isinstance(image, str) and bool(image)), where, "image",
            "a non-empty image tag", image)
    driver = _choice(raw, "driver", DriverKind, DriverKind.GRPC, where)
    job_ids = _choice(raw, "job_ids", JobIdScheme, JobIdScheme.UUID, where)
    if driver is DriverKind.BENCH_CLI:
        _expect(job_ids is JobIdScheme.UUID, where, "job_ids", "'uuid' with driver 'bench-cli' (the bench "
                "tool makes a fresh UUID per proof; use driver 'grpc' for curio or fixed ids)",
                job_ids)
    conc = raw.get("concurrency", 1)
    _expect(_is_int(conc, 1), where, "concurrency", "an int >= 1", conc)
    miner = raw.get("miner_id")
    _expect(miner is None or _is_int(miner, 0), where, "miner_id", "an int >= 0", miner)
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
    _expect(isinstance(ports, Mapping) and all(_is_int(v, 1) for v in ports.values()),
            where, "ports", "a table of container port numbers, e.g. {grpc = 9820}", ports)
    if driver is DriverKind.GRPC and "grpc" not in ports:
        ports = {**ports, "grpc": 9820}
    network = raw.get("network", "bridge")
    _expect(network in NETWORKS, where, "network", f"one of {NETWORKS}", network)
    cpus = raw.get("cpus")
    _expect(cpus is None or (isinstance(cpus, (int, float)) and cpus > 0), where, "cpus",
            "a positive number of cores", cpus)
    mem = raw.get("mem_limit")
    _expect(mem is None or isinstance(mem, (str, int)), where, "mem_limit",
            "docker syntax like '4g'", mem)
    jobs = raw.get("jobs")
    _expect(jobs is None or _is_int(jobs, 1), where, "jobs", "an int >= 1", jobs)
    bench_tool = raw.get("bench_tool", "bench")
    _expect(isinstance(bench_tool, str) and bool(bench_tool.strip()), where, "bench_tool",
            "a non-empty string naming the bench client in the image", bench_tool)
    bench_args = raw.get("bench_args", [])
    _expect(isinstance(bench_args, list) and all(isinstance(a, str) for a in bench_args),
            where, "bench_args", "a list of strings, e.g. ['--timeout', '1800']", bench_args)
    artifacts = raw.get("first_run_artifacts")
    _expect(artifacts is None or (isinstance(artifacts, list) and all(
        isinstance(a, str) and a.strip() for a in artifacts)), where, "first_run_artifacts",
        "a list of names or globs, e.g. ['pce-porep-32g.bin'] ([] = none)", artifacts)
    floor = raw.get("timing_floor", {})
    floor = {m: floor for m in TIMING_METRICS} if isinstance(floor, (int, float)) else floor
    _expect(isinstance(floor, Mapping) and set(floor) <= set(TIMING_METRICS) and all(
        isinstance(v, (int, float)) and not isinstance(v, bool) and 0 < v < 1
        for v in floor.values()), where, "timing_floor", "a fraction in (0, 1) such as 0.05, "
            f"or a table of them by metric {TIMING_METRICS}", raw.get("timing_floor"))
    for key, default in (("timeout_s", 600.0), ("ready_timeout_s", 60.0), ("stall_s", 15.0)):
        val = raw.get(key, default)
        _expect(isinstance(val, (int, float)) and not isinstance(val, bool) and val > 0,
                where, key, "a positive number of seconds", val)
    return Profile(
        name=name, runtime=runtime, daemon=daemon, image=image, binary=raw.get("binary"),
        verifier_binary=raw.get("verifier_binary"), address=address, status_url=status_url,
        workload=str(workload), driver=driver, concurrency=conc,
        job_ids=job_ids, miner_id=miner, env=_env(raw.get("env", {}), where),
        config=copy.deepcopy(dict(config)), command=tuple(command), mounts=dict(mounts),
        ports={str(k): int(v) for k, v in ports.items()}, gpus=_gpus(raw.get("gpus"), where),
        network=network, cpus=float(cpus) if cpus is not None else None,
        mem_limit=str(mem) if mem is not None else None, jobs=jobs,
        timeout_s=float(raw.get("timeout_s", 600.0)),
        ready_timeout_s=float(raw.get("ready_timeout_s", 60.0)),
        stall_s=float(raw.get("stall_s", 15.0)), bench_tool=bench_tool,
        bench_args=tuple(bench_args),
        first_run_artifacts=None if artifacts is None else tuple(artifacts), timing_floor={str(k): float(v) for k, v in floor.items()},
        source=source, overrides=overrides)


def _set_path(table: dict[str, Any], path: tuple[str, ...], value: Any, where: str) -> None:
    node = table
    for i, part in enumerate(path[:-1]):
        nxt = node.setdefault(part, {})
        if not isinstance(nxt, dict):
            raise ProfileError(f"{where}: cannot set {'.'.join(path)}: "
                               f"{'.'.join(path[:i + 1])} is {nxt!r}, not a table",
                               fix=f"set {'.'.join(path[:i + 1])} itself, not a key under it")
        node = nxt
    node[path[-1]] = value


def load_profiles(path: str | Path | None = None,
                  overrides: Iterable[str | Override] = ()) -> dict[str, Profile]:
    """Load every profile of a profile set, with ``--set`` overrides applied.

    Args:
        path: a shipped set's name (``refprover``, ``cuzk``) or a TOML file; ``None`` = the
            default set.
        overrides: ``PROFILE.KEY...=VALUE`` strings or parsed :class:`Override` objects,
            applied in order; ``*`` as PROFILE applies to every profile.

    Returns:
        Profiles by name, in file order (the first is the baseline).

    Raises:
        ProfileError: missing file, malformed TOML (with file:line), unknown top-level table,
            unknown key (listing the valid keys), bad value, or an override naming an unknown
            profile (listing the known ones).
    """
    file = profile_file(path)
    doc = _read_toml(file)
    extra = sorted(set(doc) - {"defaults", "profiles"})
    if extra:
        raise ProfileError(f"{file}: unknown top-level table {extra[0]!r}",
                           fix="a profile file has [defaults] and [profiles.NAME] tables only: "
                               "move its keys into one of them")
    return build_profiles(doc.get("profiles", {}), str(file), overrides,
                          defaults=doc.get("defaults", {}))


def build_profiles(tables: Any, source: str, overrides: Iterable[str | Override] = (), *,
                   defaults: Mapping[str, Any] | None = None) -> dict[str, Profile]:
    """Profiles from ``[profiles.NAME]`` tables already read (a profile file's, or a regression
    case's pinned ones), each merged over ``defaults``, with ``--set`` overrides applied.

    Raises:
        ProfileError: as :func:`load_profiles` (``source`` names where the tables came from).
    """
    if not isinstance(tables, dict) or not tables:
        raise ProfileError(f"{source}: no profiles",
                           fix="add at least one [profiles.NAME] table")
    parsed = [o if isinstance(o, Override) else parse_override(o) for o in overrides]
    for o in parsed:
        if o.profile != ALL_PROFILES and o.profile not in tables:
            raise ProfileError(f"--set {o.text!r}: unknown profile {o.profile!r}",
                               fix=f"name one of the known profiles in {source}: "
                                   f"{', '.join(tables)} (or {ALL_PROFILES} for every profile)")
    out: dict[str, Profile] = {}
    for name, table in tables.items():
        if not isinstance(table, dict):
            raise ProfileError(f"{source}: [profiles.{name}] must be a table, got {table!r}",
                               fix=f"write it as a [profiles.{name}] table of keys")
        raw = deep_merge(defaults or {}, table)
        mine = [o for o in parsed if o.profile in (name, ALL_PROFILES)]
        for o in mine:
            _set_path(raw, o.path, o.value, f"--set {o.text!r}")
        out[name] = _build(name, raw, source, tuple(o.text for o in mine))
    return out


def profile_table(profile: Profile) -> dict[str, Any]:
    """``profile`` as a ``[profiles.NAME]`` table with every key explicit (unset ones left out):
    what a regression case pins, so that it never depends on a profile file that can change.
    :func:`build_profiles` reads it back to an equal profile."""
    def plain(v: Any) -> Any:
        if isinstance(v, (list, tuple)):
            return [plain(x) for x in v]
        if isinstance(v, dict):
            return {k: plain(x) for k, x in v.items()}
        return v
    raw = msgspec.to_builtins(profile)
    return {k: plain(v) for k, v in raw.items() if k in PROFILE_KEYS and v is not None}


def select_profiles(profiles: Mapping[str, Profile], names: Iterable[str]) -> dict[str, Profile]:
    """Pick profiles by name, in the order given (the first is the baseline); no names = all.

    Raises:
        ProfileError: an unknown name (listing the known ones).
    """
    names = list(names)
    for n in names:
        if n not in profiles:
            raise ProfileError(f"unknown profile {n!r}",
                               fix=f"name one of the known profiles: {', '.join(profiles)}")
    return {n: profiles[n] for n in names} if names else dict(profiles)
