"""A night over a fleet (``proofdiff nightly --cluster`` / ``--hosts``): the (host, workload)
matrix, one row per host.

The matrix is over the hosts file: every host that can run units runs the night's
differential (every configured workload, as on one machine) as one unit pinned to it
(:func:`~proofdiff.fleet.differential.differential_per_host`: the artifacts shipped to each
host once, the units side by side). Each host's night is then judged against that host's own
series in the history (the machine fingerprint names the fleet's host), bisected and
written as a complete night of its own, ``<report_dir>/<run id>-<host>/``, exactly as a night on
one machine (:func:`~proofdiff.nightly.nightly.judge_night`). The fleet's night,
``<report_dir>/<run id>/``, holds each host's decision with a link to its page; its decision
is the worst of theirs (:func:`~proofdiff.nightly.nightly_result.worst`). A host of the hosts
file that ran nothing (it failed its SSH check, its worker never joined, the fleet could not
start) is a row too, ERROR with the cause, in the decision, the page and summary.json: a night
is never judged on the hosts that happened to answer.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import msgspec

from proofdiff.fleet.differential import differential_per_host
from proofdiff.model.run_options import RunOptions
from proofdiff.nightly.nightly_result import HostNight, NightlyResult, worst

__all__ = ["fleet_night", "host_run_id"]


def host_run_id(run_id: str, host: str) -> str:
    """The run id (and report folder) of ``host``'s night within the fleet's night
    ``run_id``."""
    return f"{run_id}-{host}"


def _prefixed(log: Callable[[str], None], host: str) -> Callable[[str], None]:
    """``log`` with each line prefixed by ``host``."""
    return lambda line: log(f"{host}: {line}")


def fleet_night(opts: RunOptions, *, log: Callable[[str], None], write_report: bool,
                bisect_budget_s: float | None, allure_history: str, t0: float,
                started: float) -> NightlyResult:
    """The fleet's night of ``opts`` (module docstring; ``opts.run_id`` set, the nightly's
    defaults applied).

    Returns:
        The fleet's :class:`NightlyResult`: ``hosts`` holds each host's decision, a host
        that did not run included (ERROR, with why); a joined scheduler (``--cluster``) that
        cannot be used is one ERROR host night named ``fleet``, with the cause.
    """
    from proofdiff.nightly.nightly import judge_night

    rid = opts.run_id
    per_host = differential_per_host(
        msgspec.structs.replace(opts, run_id="differential"),
        report_dir_of=lambda host: opts.report_root / host_run_id(rid, host), log=log)
    nights: list[HostNight] = []
    errors: list[str] = []
    for host, diff in per_host:
        host_rid = host_run_id(rid, host)
        night = judge_night(diff, msgspec.structs.replace(opts, run_id=host_rid),
                            log=_prefixed(log, host),
                            write_report=write_report, bisect_budget_s=bisect_budget_s,
                            allure_history=allure_history, t0=t0, started=started)
        nights.append(HostNight(host=host, run_id=host_rid, decision=night.decision,
                                decision_line=night.decision_line,
                                exit_code=night.exit_code, machine=night.machine))
        errors += [f"{host}: {e}" for e in night.errors]
    decision = worst(n.decision for n in nights)
    first = next(n for n in nights if n.decision is decision)
    line = (f"{len(nights)} host(s): " + ", ".join(f"{n.host} {n.decision.value}"
                                                      for n in nights)
            + f"; {first.host}: {first.decision_line}")
    result = NightlyResult(
        run_id=rid, created_unix_s=time.time(), decision=decision, decision_line=line,
        exit_code=decision.exit_code, hosts=tuple(nights), errors=tuple(errors),
        wall_s=round(time.monotonic() - t0, 3), started_unix_s=started,
        machine=f"fleet of {len(nights)} host(s)")
    if write_report:
        from proofdiff.nightly.nightly_view import write_nightly_report

        write_nightly_report(result, opts.report_root / rid, history="")
    return result
