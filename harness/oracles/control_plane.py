"""A control plane that answers under load: status polls answered promptly while the daemon
proves.

Property (every correct cuzk-compatible daemon): ``GetStatus`` reads counters the daemon keeps
in memory (cuzk's ``get_status`` copies its tracker's counters and queue lengths:
curio ``extern/cuzk/cuzk-server/src/service.rs``, ``Engine::get_status`` in
``cuzk-core/src/engine.rs``); it waits for no proving work, so a daemon busy proving answers it
as promptly as an idle one. A scheduler depends on it: curio's backpressure query
(``HasCapacity``, ``lib/cuzk/client.go``) calls ``GetStatus`` with a 5 s deadline and takes no
proving task when it fails, and its task scheduler keeps its decisions to milliseconds
(``harmony/harmonytask/doc.go``). A status RPC that blocks for seconds under load is a liveness
failure for that scheduler, though every proof completes.

Measured by proofdiff itself: the hang guard polls ``GetStatus`` every 0.25 s during every flow
(:mod:`proofdiff.drivers.hang_guard`), each poll with its latency from the call to its answer,
and a poll that got no answer is kept with its gRPC code. Per flow, it fails when:

* a poll got no answer, or none within :data:`~proofdiff.drivers.deadlines.STATUS_DEADLINE_S`
  (curio's deadline); or
* the flow's median poll took longer than :data:`TYPICAL_BOUND_S`: a fifth of curio's
  deadline, beyond which the status waits on work, not on a busy CPU (a correct daemon's
  median is milliseconds even on a shared 2-core machine; cuzk also runs ``nvidia-smi`` on
  every ``GetStatus``, which takes tens to hundreds of ms). The median, so that one slow poll
  (the client's own thread held up) never fails a flow.
"""

from __future__ import annotations

import statistics
from typing import Any

from proofdiff.drivers.deadlines import STATUS_DEADLINE_S
from proofdiff.model.jobs import FlowRecord
from proofdiff.model.status import Outcome

from proofdiff.oracles.evidence import Evidence, Recorder

__all__ = ["TYPICAL_BOUND_S", "check", "flow_problems"]

#: The most a flow's median status poll may take, seconds (module docstring).
TYPICAL_BOUND_S = 1.0
CONTROL_KEYS = ("config.pipeline.enabled", "concurrency", "config.pipeline.max_parallel_synthesis")


def flow_problems(flow: FlowRecord) -> tuple[list[str], dict[str, Any]]:
    """What went wrong with the status polls of one flow, and its figures."""
    lat = [s.latency_ms for s in flow.samples if s.latency_ms is not None]
    where = f"{flow.name}{' ' + flow.label if flow.label else ''}"
    figs: dict[str, Any] = {"flow": where, "polls": len(lat), "failed": len(flow.poll_failures)}
    out = []
    if lat:
        med = float(statistics.median(lat))
        figs.update(median_ms=round(med, 1), max_ms=round(max(lat), 1),
                    over_deadline=sum(x >= STATUS_DEADLINE_S * 1000 for x in lat))
        if med > TYPICAL_BOUND_S * 1000:
            out.append(f"{where}: its median status poll took {med:.0f} ms (bound "
                       f"{TYPICAL_BOUND_S * 1000:.0f} ms) over {len(lat)} poll(s)")
        if figs["over_deadline"]:
            out.append(f"{where}: {figs['over_deadline']} poll(s) took {STATUS_DEADLINE_S:g} s "
                       f"or more (curio's deadline), the longest {max(lat):.0f} ms")
    if flow.poll_failures:
        first = flow.poll_failures[0]
        figs["failures"] = [{"t_ms": round(p.t_ms), "latency_ms": round(p.latency_ms),
                             "rpc": p.rpc, "code": p.code} for p in flow.poll_failures[:20]]
        out.append(f"{where}: {len(flow.poll_failures)} poll(s) got no answer (first: {first.rpc} "
                   f"{first.code} after {first.latency_ms:.0f} ms, {first.t_ms / 1000:.1f} s into "
                   "the flow)")
    return out, figs


def check(ev: Evidence, rec: Recorder, name: str, workload: str) -> None:
    """Record ``control-plane`` for ``name`` over every flow sent to its daemon so far."""
    flows = ev.flows(name, workload)
    problems, per_flow = [], []
    for f in flows:
        got, figs = flow_problems(f)
        problems += got
        per_flow.append(figs)
    polls = sum(p["polls"] + p["failed"] for p in per_flow)
    all_lat = [s.latency_ms for f in flows for s in f.samples if s.latency_ms is not None]
    head = (f"status polls of profile {name!r} while it proved ({workload}, {len(flows)} "
            f"flow(s), {polls} poll(s))")
    ev_: dict[str, Any] = {"flows": per_flow, "bound_ms": TYPICAL_BOUND_S * 1000,
                           "deadline_s": STATUS_DEADLINE_S}
    if not polls:
        rec("control-plane", name, Outcome.ERROR, f"{head}: nothing to judge: no status poll "
            "was made while it proved (every flow ended within one poll period)", evidence=ev_)
    elif problems:
        rec("control-plane", name, Outcome.FAIL, "\n".join(
            [f"{head}: the daemon's status did not answer promptly under load: a scheduler "
             "polling it (curio's backpressure, 5 s deadline) stalls", *(f"  {p}" for p in
                                                                         problems[:8])]),
            evidence=ev_, names=CONTROL_KEYS)
    else:
        med = statistics.median(all_lat) if all_lat else 0.0
        rec("control-plane", name, Outcome.PASS, f"{head}: every poll answered; median "
            f"{med:.1f} ms, longest {max(all_lat, default=0.0):.1f} ms (bound: median per flow "
            f"{TYPICAL_BOUND_S * 1000:.0f} ms, every poll {STATUS_DEADLINE_S:g} s)", evidence=ev_)
