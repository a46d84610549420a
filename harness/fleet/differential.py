"""A differential as one unit of the fleet: every profile of the run on one host (bench and
prod must share a host and its GPU model), the result back here, the report written here."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path

import msgspec

from proofdiff.fleet.executor import Executor, open_executor
from proofdiff.model.errors import ProofdiffError, unexpected
from proofdiff.model.profile import Profile
from proofdiff.model.result import DifferentialResult
from proofdiff.model.run_options import RunOptions

__all__ = ["ProfilesUnit", "differential_on_fleet", "differential_per_host", "differential_unit",
           "differential_via", "lost_result"]


def differential_unit(options: RunOptions) -> DifferentialResult:
    """The unit: :func:`~proofdiff.core.differential.run_differential` of ``options`` where the
    executor puts it, its report left to the caller."""
    from proofdiff.core.differential import run_differential

    return run_differential(options, write_report=False)


class ProfilesUnit(msgspec.Struct, frozen=True):
    """A differential of ``options`` on ``profiles`` given whole (a gate's sides), as a unit."""

    options: RunOptions
    profiles: dict[str, Profile]


def profiles_unit(unit: ProfilesUnit) -> DifferentialResult:
    """The unit of a :class:`ProfilesUnit`, its report left to the caller."""
    from proofdiff.core.differential import run_differential

    return run_differential(unit.options, profiles=unit.profiles, write_report=False)


def _lost_profiles(unit: ProfilesUnit, message: str) -> DifferentialResult:
    return lost_result(unit.options, message)


def differential_via(ex: Executor, options: RunOptions, profiles: dict[str, Profile],
                     ) -> tuple[str, DifferentialResult]:
    """``(where, result)``: the differential of ``options`` (shipped by ``ex`` already) on
    ``profiles`` as one unit of ``ex``, its result naming its fleet host; a unit lost with
    its host is an ERROR result naming it; a Ctrl-C is an INTERRUPTED result (what the unit
    did, when it came back)."""
    try:
        [(where, r)] = ex.map_placed(profiles_unit, [ProfilesUnit(options, profiles)],
                                     name="differential", lost=_lost_profiles)
    except KeyboardInterrupt as exc:
        [(where, r)] = _interrupted(options, getattr(exc, "got", [None]), ["fleet"])
    return where, msgspec.structs.replace(r, machine={**r.machine, "fleet_host": where})


def _interrupted(opts: RunOptions, got: Sequence[tuple[str, DifferentialResult] | None],
                 where: Sequence[str]) -> list[tuple[str, DifferentialResult]]:
    """The results of units a Ctrl-C stopped (``got``: each that came back, else ``None``;
    ``where``: the host each was meant for): each INTERRUPTED, what came back kept."""
    from proofdiff.core.differential import assemble, interrupted_result

    return [(back[0], interrupted_result(back[1])) if back is not None
            else (host, assemble(run_id=opts.run_id, profiles={}, records=[], runs=[],
                                 interrupted=True))
            for back, host in zip(got, where, strict=True)]


def lost_result(options: RunOptions, message: str) -> DifferentialResult:
    """The result of a run whose unit was lost with its host (``message``: which, and the fix):
    verdict ERROR, no records (nothing came back), the run id of ``options``."""
    from proofdiff.core.differential import assemble

    return assemble(run_id=options.run_id, profiles={}, records=[], runs=[], errors=[message])


def _did_not_run(opts: RunOptions, host: str, why: str, wall_s: float
                 ) -> tuple[str, DifferentialResult]:
    """``(host, an ERROR result)`` for a host of the hosts file that ran no unit: a row of the
    per-host matrix, never left out of it."""
    from proofdiff.runtime.host import machine_facts

    return host, msgspec.structs.replace(
        lost_result(opts, f"host {host} did not run: {why}"), wall_s=round(wall_s, 3),
        machine={**machine_facts(), "fleet_host": host})


def _hosts_of(opts: RunOptions) -> list[str]:
    """The host names of ``opts.hosts`` in file order ([] without one, or where it does not
    load: its error is the fleet's)."""
    if not opts.hosts:
        return []
    from proofdiff.fleet.hosts import load_hosts

    try:
        return [h.name for h in load_hosts(opts.hosts).hosts]
    except ProofdiffError:
        return []


def _on_fleet(opts: RunOptions, *, per_host: bool, log: Callable[[str], None],
              ) -> list[tuple[str, DifferentialResult]]:
    """``(where, result)`` of the differential of ``opts`` as units of its executor: one unit
    wherever the executor puts it, or (``per_host``) one pinned to each worker, side by side;
    the artifacts shipped to each host once, before any unit. Each result names its fleet host
    (its machine facts are that host's own) and its allowlist by the caller's path, not the
    shipped copy's. A cluster that cannot be used is one ERROR result, as ``fleet``.

    ``per_host`` is a matrix over the hosts file (``opts.hosts``): each host that did not run
    (it failed its check, its worker is not in the cluster, or the cluster could not be used
    at all) is an ERROR result of its own, naming why, in name order with the others.

    A Ctrl-C at any moment (joining the cluster, shipping, while the units run, as they come
    back) ends in INTERRUPTED results, what each unit did kept where it came back: never a
    normal result, so the caller writes the reports and exits 130."""
    from proofdiff.runtime.host import machine_facts

    t0 = time.monotonic()
    unit = msgspec.structs.replace(opts, cluster="", hosts="")
    hosts: list[str] | None = None
    got: list[tuple[str, DifferentialResult]] = []
    try:
        with open_executor(opts, log=log) as ex:
            hosts = ex.workers() if per_host else None
            unit = ex.ship(unit)
            got = ex.map_placed(differential_unit, [unit] * (len(hosts) if hosts else 1),
                                name="differential", lost=lost_result, on=hosts)
            dark = ex.missing() if per_host else {}
    except KeyboardInterrupt as exc:  # before a unit started, while they ran, or after
        where = hosts or (sorted(_hosts_of(opts)) if per_host else []) or ["fleet"]
        # what came back: the units stopped (UnitsInterrupted), or all of them, whole, when
        # the Ctrl-C came while the cluster was closed after them
        back: list[tuple[str, DifferentialResult] | None] = list(
            getattr(exc, "got", None) or got) or [None] * len(where)
        where = [b[0] if b is not None else w for b, w in zip(back, where, strict=True)]
        return [(w, msgspec.structs.replace(r, machine={**machine_facts(), **r.machine,
                                                        "fleet_host": w},
                                            wall_s=round(time.monotonic() - t0, 3)))
                for w, r in _interrupted(opts, back, where)]
    except Exception as exc:  # noqa: BLE001 - ours with its fix, else with its traceback
        why = str(exc) if isinstance(exc, ProofdiffError) else unexpected(exc, "the fleet")
        if per_host and (names := _hosts_of(opts)):
            return [_did_not_run(opts, n, why, time.monotonic() - t0) for n in sorted(names)]
        return [("fleet", msgspec.structs.replace(
            lost_result(opts, why), wall_s=round(time.monotonic() - t0, 3),
            machine=machine_facts()))]
    ran = [(where, msgspec.structs.replace(
        r, machine={**r.machine, "fleet_host": where},
        allowlist=opts.allowlist if r.allowlist else "")) for where, r in got]
    seen = {where for where, _r in ran}
    ran += [_did_not_run(opts, n, why, time.monotonic() - t0)
            for n, why in dark.items() if n not in seen]
    return sorted(ran, key=lambda x: x[0]) if per_host else ran


def differential_on_fleet(options: RunOptions, *, log: Callable[[str], None] = lambda _l: None,
                          write_report: bool = True) -> DifferentialResult:
    """The differential of ``options`` as one unit of its executor (``cluster`` or ``hosts``:
    a Dask worker; else this machine's thread), the report written here.

    Returns:
        The worker's :class:`DifferentialResult`; a cluster that cannot be used (unreachable,
        no worker, another proofdiff on a worker) or a unit lost with its host comes back as
        verdict ERROR with the cause and the fix, as every bad input of
        :func:`run_differential` does. The worker's progress lines are not relayed (only this
        side's).
    """
    from proofdiff.core.plan import new_run_id

    opts = options.with_env()
    opts = msgspec.structs.replace(opts, run_id=opts.run_id or new_run_id())
    [(where, result)] = _on_fleet(opts, per_host=False, log=log)
    if where != "fleet":
        log(f"the differential ran on {where}")
    if write_report:
        from proofdiff.report.writer import write_report as write

        write(result, opts.report_root)
    return result


def differential_per_host(options: RunOptions, *, report_dir_of: Callable[[str], Path],
                          log: Callable[[str], None] = lambda _l: None,
                          ) -> list[tuple[str, DifferentialResult]]:
    """The differential of ``options`` on every host of its executor (``cluster`` or
    ``hosts``), one unit pinned to each, side by side, the artifacts shipped to each once;
    each report written here, into ``report_dir_of(host) / options.run_id``.

    Returns:
        ``(host, result)`` per host, in name order; each result's machine names its fleet host.
        A unit lost with its host is an ERROR result naming it, and so is each host of the
        hosts file that ran nothing (it failed its check, its worker never joined); a fleet
        that cannot be used (no host passes its check, ``--all-hosts`` not met, an
        unreachable scheduler) is an ERROR result for every host of the hosts file with the
        cause and the fix, or, without a hosts file (``--cluster``), one as host ``fleet``.
    """
    from proofdiff.report.writer import write_report as write

    results = _on_fleet(options.with_env(), per_host=True, log=log)
    for host, r in results:
        write(r, report_dir_of(host))
    return results
