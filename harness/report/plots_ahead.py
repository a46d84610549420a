"""The run page's plots drawn while the run still proves, off the harness's fixed cost.

The latency and jobs-in-flight plots (:func:`proofdiff.report.run_plots.run_plots`) read only
the profile order and each profile's workload flow, which are final once every profile's
workload run is made, long before the warmup, isolation and behaviour suites end. Drawn at the
report, they would cost matplotlib time on the main thread after the last proof (the figures
are most of the report's time). :func:`draw` starts them on a thread as soon as those
inputs exist (the session's ``on_runs_made``), while the main thread waits on gRPC; the report
takes them with :func:`plots`, which uses them only when its own inputs are exactly those
(compared by their msgspec encoding), and otherwise draws them itself. So a drawing made
ahead can make the report earlier, never different.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Sequence
from concurrent.futures import Future

import msgspec

from proofdiff.model.runs import RunRecord
from proofdiff.report.run_plots import WORKLOAD_FLOW, run_plots

__all__ = ["draw", "plots"]

#: Drawings kept for a later :func:`plots` (a run that never writes its report leaves one).
_KEEP = 4
#: Longest wait for a drawing under way, in seconds, before the report draws its own.
_WAIT_S = 60.0

_lock = threading.Lock()
_drawn: dict[bytes, Future[dict[str, str]]] = {}


def _key(profiles: Sequence[str], workloads: Sequence[str], runs: Sequence[RunRecord]) -> bytes:
    """What the plots read, as a digest: the profile and workload order and every run's
    workload flow (the only flow :func:`run_plots` draws)."""
    flows = [(r.profile, r.workload, [f for f in r.flows if f.name == WORKLOAD_FLOW])
             for r in runs]
    flows.sort(key=lambda x: (x[0], x[1]))
    doc = msgspec.json.encode([list(profiles), list(workloads), flows])
    return hashlib.sha256(doc).digest()


def draw(profiles: Sequence[str], workloads: Sequence[str], runs: Sequence[RunRecord]) -> None:
    """Draw the run page's plots of these inputs on a daemon thread (once per inputs)."""
    key = _key(profiles, workloads, runs)
    done: Future[dict[str, str]] = Future()
    with _lock:
        if key in _drawn:
            return
        _drawn[key] = done
        while len(_drawn) > _KEEP:
            _drawn.pop(next(iter(_drawn)))

    def work() -> None:
        try:
            done.set_result(run_plots(profiles, workloads, runs))
        except BaseException as exc:  # noqa: BLE001 - the report draws again, and shows it
            done.set_exception(exc)

    threading.Thread(target=work, name="proofdiff-plots", daemon=True).start()


def plots(profiles: Sequence[str], workloads: Sequence[str],
          runs: Sequence[RunRecord]) -> dict[str, str]:
    """:func:`run_plots` of these inputs: the drawing :func:`draw` made of exactly these, else
    drawn now (also when that drawing failed or is still under way after ``_WAIT_S``)."""
    with _lock:
        ahead = _drawn.pop(_key(profiles, workloads, runs), None)
    if ahead is not None:
        try:
            return ahead.result(timeout=_WAIT_S)
        except Exception:  # noqa: BLE001 - drawn again here, where its error is raised
            pass
    return run_plots(profiles, workloads, runs)
