"""What a run is asked to do, stated once: :class:`RunOptions`, and the one table of the options
that set it (:data:`OPTIONS`, read from ``run_options.toml`` beside this module), from which
every command line (``proofdiff run``, ``gate``, ``bisect``, ``repro``, ``catch-matrix``,
``build``) and the pytest plugin (``--proofdiff-*``) declare theirs.

The environment is read once, by :meth:`RunOptions.from_env` (``PROOFDIFF_CACHE``,
``PROOFDIFF_CRATE``, ``PROOFDIFF_REGRESSIONS``, the current directory's
``targets/refprover``); nothing else in proofdiff reads those variables.
"""

from __future__ import annotations

import argparse
import os
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import msgspec

from proofdiff.model.choices import SideBySide
from proofdiff.model.profile_file import (DEFAULT_PROFILE_SET, ProfileError, parse_override,
                                          shipped_profile_sets)

__all__ = ["DEFAULT_VERIFY_TIMEOUT_S", "OPTIONS", "OptionSpec", "RunOptions", "options_from",
           "positive_count", "positive_seconds", "workload_file"]

#: Deadline of one verifier run, seconds.
DEFAULT_VERIFY_TIMEOUT_S = 300.0


class RunOptions(msgspec.Struct, frozen=True, kw_only=True):
    """Every choice of a run that a caller makes (frozen; resolved once).

    Selection:
        profiles: a shipped profile set's name (``refprover``, ``cuzk``, ``cuzk-host``) or a
            TOML file (default ``refprover``). overrides: ``--set PROFILE.KEY=VALUE`` strings,
            in order. select: profile names to keep, in order (the first is the baseline;
            none = all). workloads, suites, images: names and tags (none = each profile's
            workload, the default suites, each profile's image).
    Report:
        report_dir: the report root (``<report_dir>/<run id>/``, default ``reports``).
        run_id: the run's id ('' = a new one).
    History:
        history: where to append the run (``--history``: a SQLite file, a SQLAlchemy URL, or
            ``default`` = ``<report_dir>/history.sqlite``; '' = not stored;
            :mod:`proofdiff.history`).
    Outcome:
        allowlist: a TOML allowlist of accepted known differences (:mod:`proofdiff.model.
        allowlist`; '' = none). notify: a webhook URL the run's JSON summary is POSTed to
        when it ends (:mod:`proofdiff.report.notify`; '' = none).
    Artifacts (each '' or empty = built or found, cached by content):
        param_cache: host dir of ``.params``/``.vk``. workload_files: workload name -> file.
        verifier_image: the image whose ``verify`` judges every proof of a docker runtime.
        params_manifest: a parameters.json to check the params against. bin_dir: refprover's
        host binaries (process and attach runtimes).
    Deadlines:
        verify_timeout_s: one verifier run, seconds (default 300).
    Bisection (``proofdiff bisect``, ``repro --bisect``, ``run --bisect``):
        bisect_budget_s: no probe starts after this many seconds (default 1800).
        bisect_jobs: probes side by side (0, the default: a quarter of the cores, at least 1;
            :attr:`probe_jobs`).
    Fleet (:mod:`proofdiff.fleet`; both '' = threads on this machine):
        cluster: a Dask scheduler's address (``tls://HOST:PORT``; ``tcp://`` with
            ``insecure``) whose workers run the units.
        hosts: a hosts file (:mod:`proofdiff.fleet.hosts`) to start a Dask ``SSHCluster`` over.
        all_hosts: every host of ``hosts`` must pass its check, or nothing runs (default:
            the run goes on with those that do, each other one reported with its fix).
        retry_lost: a unit whose worker is lost mid-unit (its host went away) is run again
            on another worker, as Dask does; default: it is reported lost, its host named, and
            the run ends with what the other units gave.
        insecure: ``cluster`` may be a ``tcp://`` scheduler (no authentication, no
            encryption; default: refused).
        accept_unknown_host_keys: a host of ``hosts`` whose SSH key its known_hosts file
            does not name is let in (default: refused; a changed key is refused always).
    Schedule:
        side_by_side: whether the profiles' workload runs prove at the same time on disjoint
            CPU sets (:class:`~proofdiff.model.choices.SideBySide`; default ``auto``).
    Environment (:meth:`from_env`):
        cache_root: where heavy builds are cached (``$PROOFDIFF_CACHE``, else
        ``~/.cache/proofdiff``). crate_dir: the refprover crate to build from
        (``$PROOFDIFF_CRATE``, else ``./targets/refprover``; '' = none: the last build's
        artifacts are used). regressions_dir: the regression cases
        (``$PROOFDIFF_REGRESSIONS``, else ``./regressions``, else the checkout's).
    """

    profiles: str = DEFAULT_PROFILE_SET
    overrides: tuple[str, ...] = ()
    select: tuple[str, ...] = ()
    workloads: tuple[str, ...] = ()
    suites: tuple[str, ...] = ()
    images: tuple[str, ...] = ()
    report_dir: str = "reports"
    run_id: str = ""
    history: str = ""
    allowlist: str = ""
    notify: str = ""
    param_cache: str = ""
    workload_files: dict[str, str] = msgspec.field(default_factory=dict)
    verifier_image: str = ""
    params_manifest: str = ""
    bin_dir: str = ""
    verify_timeout_s: float = DEFAULT_VERIFY_TIMEOUT_S
    bisect_budget_s: float = 1800.0
    bisect_jobs: int = 0
    side_by_side: SideBySide = SideBySide.AUTO
    cluster: str = ""
    hosts: str = ""
    all_hosts: bool = False
    retry_lost: bool = False
    insecure: bool = False
    accept_unknown_host_keys: bool = False
    cache_root: str = ""
    crate_dir: str = ""
    regressions_dir: str = ""

    @classmethod
    def from_env(cls, **fields: Any) -> RunOptions:
        """``RunOptions(**fields)`` with the environment's paths filled in where not given
        (:meth:`with_env`)."""
        return cls(**fields).with_env()

    def with_env(self) -> RunOptions:
        """These options with ``cache_root``, ``crate_dir`` and ``regressions_dir`` read from
        the environment where they are '' (the class docstring); ``self`` when all are set."""
        if self.cache_root and self.regressions_dir and self.crate_dir:
            return self
        env = os.environ
        cache = self.cache_root or env.get("PROOFDIFF_CACHE") or str(
            Path.home() / ".cache" / "proofdiff")
        crate = self.crate_dir or _crate(env.get("PROOFDIFF_CRATE"))
        cases = self.regressions_dir or env.get("PROOFDIFF_REGRESSIONS") or _cases()
        return msgspec.structs.replace(self, cache_root=str(Path(cache).expanduser()),
                                       crate_dir=crate, regressions_dir=cases)

    @property
    def probe_jobs(self) -> int:
        """Bisection probes side by side: ``bisect_jobs``, else a quarter of the cores (at
        least 1)."""
        return self.bisect_jobs or max(1, (os.cpu_count() or 1) // 4)

    @property
    def report_root(self) -> Path:
        """``report_dir`` as an absolute path."""
        return Path(self.report_dir).absolute()


def _crate(env: str | None) -> str:
    for cand in (env, str(Path.cwd() / "targets" / "refprover")):
        if cand and (Path(cand) / "Cargo.toml").is_file():
            return str(Path(cand).resolve())
    return ""


def _cases() -> str:
    here = Path.cwd() / "regressions"
    return str(here if here.is_dir() else Path(__file__).resolve().parents[2] / "regressions")


# -- the one table of options ---------------------------------------------------------------

def positive_seconds(text: str) -> float:
    """A positive number of seconds.

    Raises:
        argparse.ArgumentTypeError: anything else (says what is expected).
    """
    try:
        val = float(text)
    except ValueError:
        val = -1.0
    if val <= 0:
        raise argparse.ArgumentTypeError(f"{text!r}: expected a positive number of seconds")
    return val


def positive_count(text: str) -> int:
    """A positive integer (a count).

    Raises:
        argparse.ArgumentTypeError: anything else (says what is expected).
    """
    try:
        val = int(text)
    except ValueError:
        val = 0
    if val < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: expected a positive integer")
    return val


def workload_file(text: str) -> tuple[str, str]:
    """``NAME=PATH`` of ``--workload-file``.

    Raises:
        argparse.ArgumentTypeError: not ``NAME=PATH`` (with an example).
    """
    name, sep, path = text.partition("=")
    if not sep or not name or not path:
        raise argparse.ArgumentTypeError(f"{text!r}: expected NAME=PATH, e.g. "
                                         "wpost-2k=/root/.cache/proofdiff/workloads/x/wpost-2k.json")
    return name, path


def override(text: str) -> str:
    """A ``--set`` override, checked for its shape (``PROFILE.KEY=VALUE``).

    Raises:
        argparse.ArgumentTypeError: the shape is wrong (the parser's words).
    """
    try:
        parse_override(text)
    except ProfileError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def side_by_side(text: str) -> SideBySide:
    """``auto``, ``on`` or ``off`` of ``--side-by-side``.

    Raises:
        argparse.ArgumentTypeError: another word (lists the three).
    """
    try:
        return SideBySide(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r}: expected one of {', '.join(m.value for m in SideBySide)}") from None


@dataclass(frozen=True)
class OptionSpec:
    """One option of :class:`RunOptions`.

    Attributes:
        flag: the long flag without dashes (``param-cache``: ``--param-cache`` on the command
            line, ``--proofdiff-param-cache`` in pytest). field: the RunOptions field it sets.
        group: ``select`` (profiles, set, workload), ``select-profile`` (``--profile``),
            ``suites``, ``images``, ``artifacts``, ``report``, ``history``, ``outcome``
            (allowlist, notify), ``deadlines``, ``bisect``, ``fleet``: a command takes the groups that
            apply to it. metavar: what the value is (``SECONDS``, ``DIR``). help: what it does and its
            default (``Default: ...``).
        parse: argparse ``type``. repeat: repeatable (``action=append``). bare: the value of
            the flag given alone (``nargs='?'``, ``const=bare``); ``None`` = a value is required.
        switch: a flag with no value, true when given (``action=store_true``).
        aliases: other spellings of the flag, without dashes, accepted on the command line as
            the same option and not listed apart in ``--help`` (the flag's help names them).
    """

    flag: str
    field: str
    group: str
    metavar: str
    help: str
    parse: Callable[[str], Any] | None = None
    repeat: bool = False
    bare: str | None = None
    switch: bool = False
    aliases: tuple[str, ...] = ()

    @property
    def dest(self) -> str:
        """The argparse destination (the field's name)."""
        return self.field


#: How an option's value is checked, by the table's ``parse`` name.
PARSERS: dict[str, Callable[[str], Any]] = {"seconds": positive_seconds,
                                            "count": positive_count,
                                            "name=path": workload_file, "override": override,
                                            "side-by-side": side_by_side}


def _load_table() -> tuple[OptionSpec, ...]:
    """The table (``run_options.toml`` beside this module: data, shipped with the package).

    Raises:
        KeyError: an entry names a field RunOptions lacks or an unknown parser (a bug of ours,
            caught by the unit tests at once).
    """
    text = resources.files("proofdiff.model").joinpath("run_options.toml").read_text("utf-8")
    fields = set(RunOptions.__struct_fields__)
    sets = ", ".join(shipped_profile_sets())
    out = []
    for e in tomllib.loads(text)["option"]:
        if e["field"] not in fields:
            raise KeyError(f"run_options.toml: option {e['flag']!r} sets no RunOptions field "
                           f"{e['field']!r}")
        out.append(OptionSpec(flag=e["flag"], field=e["field"], group=e["group"],
                              metavar=e["metavar"],
                              help=e["help"].replace("{profile_sets}", sets),
                              parse=PARSERS[e["parse"]] if "parse" in e else None,
                              repeat=bool(e.get("repeat", False)), bare=e.get("bare"),
                              switch=bool(e.get("switch", False)),
                              aliases=tuple(e.get("aliases", ()))))
    return tuple(out)


#: Every run option, in the table's order.
OPTIONS: tuple[OptionSpec, ...] = _load_table()

_DEFAULTS = RunOptions()


def _value(spec: OptionSpec, raw: Any) -> Any:
    if spec.switch:
        return bool(raw)
    if spec.field == "workload_files":
        return {n: str(p) for n, p in raw or ()}
    if spec.repeat:
        return tuple(dict.fromkeys(raw or ()))
    if spec.parse is positive_seconds:
        return float(raw)
    if spec.parse is positive_count:
        return int(raw)
    if spec.parse is side_by_side:  # the enum itself: `place` tests it by identity
        return SideBySide(raw)
    return str(raw)


def options_from(values: Mapping[str, Any], **fixed: Any) -> RunOptions:
    """RunOptions from parsed option values by field name (an argparse namespace's
    ``vars()``, or the plugin's); values that are ``None`` or absent keep their defaults;
    ``fixed`` fields win (a command's own choices). The environment is read here, once."""
    fields: dict[str, Any] = {}
    for spec in OPTIONS:
        raw = values.get(spec.dest)
        if raw is None or (spec.repeat and not raw):
            continue
        fields[spec.field] = _value(spec, raw)
    fields.update(fixed)
    return RunOptions.from_env(**fields)


def default_of(spec: OptionSpec) -> Any:
    """The parser default of one option: ``None`` (unset: the RunOptions default applies) or
    ``[]`` for a repeatable one."""
    return [] if spec.repeat else None


def shown_default(spec: OptionSpec) -> Any:
    """RunOptions' own default for the option (for help texts and checks)."""
    return getattr(_DEFAULTS, spec.field)
