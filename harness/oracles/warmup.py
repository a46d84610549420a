"""Warmup and liveness, per profile.

``first-proof``: the first job of the workload run (index 0; the workload run is the first
proving a fresh daemon does, so that job pays the SRS load) must come back COMPLETED (a FAILED
warmup is a failure carrying the daemon's error text and its warning/error log lines, never a
pass), must verify (a client that hands out no proof bytes, real cuzk-bench's ``batch``: judged
on the rest, with a ``warning`` naming why it was not verified), and must have taken plausibly
long: not less than its own reported SRS load, and not less than max(250 ms, 0.5 x the
steady-state median). A warmup faster than half a steady-state proof did not do the work a
proof needs, whatever it says. Steady state is the run's jobs after its first wave; a run with
none (prod: 4 jobs at concurrency 4, all in the first wave) sends one solo proof of the same
profile after the run (flow ``warmup-solo``) and takes the floor from it: 250 ms alone is no
bound on a proof that takes seconds. When neither gives a sample, the plausibility is not
judged and the record is an ERROR saying so.

``first-run-artifacts``: what the daemon's first run must leave behind is there, fresh and
non-empty (:mod:`proofdiff.oracles.first_run`).

``liveness``: the daemon is still running after the run, or its death is explained from
``docker inspect`` (exit code, OOMKilled, error) with the jobs lost with it, instead of a wall
of connection errors.
"""

from __future__ import annotations

from typing import Any

from proofdiff.model.choices import Runtime
from proofdiff.model.jobs import FlowRecord, JobSpec
from proofdiff.model.oracle_records import OracleRecord
from proofdiff.model.runs import RunRecord
from proofdiff.model.serde import to_builtins
from proofdiff.model.status import JobStatus, Outcome
from proofdiff.stats.unpaired import summarize

from proofdiff.oracles import first_run as first_run_check
from proofdiff.oracles.evidence import Evidence, Recorder
from proofdiff.oracles.suite_table import SUITES

__all__ = ["DEFAULT_FLOOR_MS", "DEFAULT_FLOOR_REL", "ORACLES", "evaluate", "first_proof",
           "liveness", "steady_walls"]

#: The oracles of this suite, stated once in the suite table.
ORACLES = SUITES["warmup"].oracles
#: No real Groth16 proof, SRS load included, takes less than this (ms).
DEFAULT_FLOOR_MS = 250.0
#: A warmup faster than this fraction of the steady-state median is implausible.
DEFAULT_FLOOR_REL = 0.5
LOG_LINES = 12


def _log_evidence(log_tail: str) -> str:
    lines = [x for x in log_tail.splitlines() if " WARN " in x or " ERROR " in x
             or "error" in x.lower()]
    return "\n".join(lines[-LOG_LINES:])


def steady_walls(run: RunRecord, concurrency: int) -> list[float]:
    """Client walls (ms) of the run's COMPLETED jobs after its first wave (index >=
    ``concurrency``): the steady state, [] when every job was in the first wave."""
    flow = run.workload_flow
    return [j.wall_ms for j in flow.completed() if j.index >= max(1, concurrency)] if flow else []


def first_proof(rec: Recorder, run: RunRecord, concurrency: int, *,
                solo: FlowRecord | None = None, floor_ms: float = DEFAULT_FLOOR_MS,
                floor_rel: float = DEFAULT_FLOOR_REL) -> None:
    """The ``first-proof`` record of one run (module docstring); steady state = the run's
    COMPLETED jobs after its first wave (index >= ``concurrency``), else the COMPLETED jobs of
    ``solo`` (one proof of the same profile sent alone after the run)."""
    flow = run.workload_flow
    first = next((j for j in flow.jobs if j.index == 0), None) if flow else None
    if flow is None or first is None:
        why = "; ".join(run.errors) or "the run has no jobs"
        rec("first-proof", run.profile, Outcome.ERROR, f"warmup of profile {run.profile!r} on "
            f"{run.workload}: no warmup proof: {why}")
        return
    walls, basis = steady_walls(run, concurrency), "steady median"
    if not walls and solo is not None:
        walls, basis = [j.wall_ms for j in solo.completed()], "solo proof"
    steady = summarize(walls)
    floor = max(floor_ms, floor_rel * steady.median if steady.n else 0.0)
    v = first.verdict
    fig: dict[str, Any] = {
        "job": first.job, "request_id": first.request_id, "status": first.status.value,
        "wall_ms": round(first.wall_ms, 3), "total_ms": first.timings.total_ms,
        "srs_load_ms": first.timings.srs_load_ms, "gpu_compute_ms": first.timings.gpu_compute_ms,
        "queue_wait_ms": first.timings.queue_wait_ms, "verified": None if v is None else v.valid}
    problems = []
    log = run.daemon.log_tail if run.daemon else ""
    if first.status is not JobStatus.COMPLETED:
        ev = _log_evidence(log)
        problems.append(f"the warmup proof came back {first.status.value}: "
                        f"{first.error or '(no error text)'}"
                        + ("\n  daemon log:\n    " + ev.replace("\n", "\n    ") if ev else ""))
    elif v is None and first.unverifiable and not first.proof:
        pass  # the client hands out no proof (validity says so): judged on the rest, warned
    elif v is None:
        problems.append("the warmup proof was not verified (no verdict): "
                        + ("; ".join(flow.errors) or first.unverifiable or "the verifier gave none"))
    elif not v.valid:
        problems.append(f"the warmup proof does not verify: bad partitions {v.bad_partitions()} "
                        f"({v.error or 'no verifier text'})")
    if first.status is JobStatus.COMPLETED:
        if first.timings.srs_load_ms and first.wall_ms < first.timings.srs_load_ms:
            problems.append(f"implausible: the warmup took {first.wall_ms:.0f} ms on the client "
                            f"but reports an SRS load of {first.timings.srs_load_ms} ms")
        if first.wall_ms < floor:
            problems.append(f"implausibly fast warmup: {first.wall_ms:.0f} ms < floor {floor:.0f} "
                            f"ms (max of {floor_ms:.0f} ms and {floor_rel} x {basis}); a "
                            "first proof loads its SRS and proves, so a cached or canned answer "
                            "is suspected")
    unjudged = not problems and not steady.n
    head = f"warmup of profile {run.profile!r} on {run.workload}: " + (
        "FAILED" if problems else "plausibility NOT JUDGED" if unjudged else "ok")
    figs = (f"  first proof {first.job} (id={first.request_id}): {first.status.value}, wall "
            f"{first.wall_ms:.0f} ms, SRS load {first.timings.srs_load_ms} ms, verified={fig['verified']}"
            f"; {basis} {steady.render() if steady.n else 'not measured'}; plausibility "
            f"floor {floor:.0f} ms")
    evidence = {"warmup": fig, "steady": to_builtins(steady), "floor_ms": floor,
                "floor_basis": basis, "problems": problems}
    if unjudged:
        why = ("; ".join(f"{j.status.value}: {j.error or '(no text)'}" for j in solo.jobs[:2])
               if solo is not None and solo.jobs else "no solo proof was sent")
        rec("first-proof", run.profile, Outcome.ERROR, f"{head}\n{figs}\n  no steady-state "
            f"proof (every job was in the first wave) and no completed solo proof ({why}): "
            "nothing to set the plausibility floor from", evidence=evidence)
        return
    rec("first-proof", run.profile, Outcome.FAIL if problems else Outcome.PASS,
        "\n".join([head, figs, *(f"  {p}" for p in problems)]),
        evidence={**evidence, **({"warning": "the warmup proof was not verified: "
                                  f"{first.unverifiable}"} if v is None and
                                 first.unverifiable and not problems else {})})


def liveness(rec: Recorder, run: RunRecord) -> None:
    """The ``liveness`` record of one run (module docstring)."""
    facts = run.daemon
    if facts is None:
        rec("liveness", run.profile, Outcome.SKIPPED, f"profile {run.profile!r} ran no daemon: "
            f"{'; '.join(run.errors)[:300] or 'it never started'}")
        return
    flow = run.workload_flow
    lost = [j.render() for j in (flow.jobs if flow else ())
            if j.status in (JobStatus.ERROR, JobStatus.LOST, JobStatus.STUCK)]
    st = facts.state
    ev = {"state": st, "lost": lost, "container_id": facts.container_id}
    if facts.alive and st:
        rec("liveness", run.profile, Outcome.PASS, f"daemon {facts.container_id} of profile "
            f"{run.profile!r} is still running after the run", evidence=ev)
        return
    if facts.runtime is Runtime.ATTACH:
        rec("liveness", run.profile, Outcome.FAIL, f"the attached daemon at {facts.address} of "
            f"profile {run.profile!r} no longer answers GetStatus after the run "
            f"({st.get('Error', 'no answer')}); proofdiff cannot see why: read its own log"
            + (f"; jobs lost with it: {', '.join(lost)}" if lost else ""), evidence=ev)
        return
    if not st:
        rec("liveness", run.profile, Outcome.ERROR, f"daemon {facts.container_id} of "
            f"profile {run.profile!r} could not be inspected after the run (removed while the "
            "run went on?)", evidence=ev)
        return
    code, oom = st.get("ExitCode"), bool(st.get("OOMKilled"))
    why = (f"daemon {facts.container_id} of profile {run.profile!r} is "
           f"{st.get('Status')} with exit code {code}" + (" and OOMKilled=true" if oom else "")
           + (f" ({st.get('Error')})" if st.get("Error") else ""))
    use = facts.resources
    seen = (f" (its memory reached {use.peak_mem_bytes / 2 ** 20:.0f} MiB of the "
            f"{(use.mem_limit_bytes or 0) / 2 ** 20:.0f} MiB limit in the last sample "
            "before the kill)" if use and use.samples else "")
    fix = (f"the kernel killed it for memory{seen}: raise the profile's mem_limit, or find why "
           "the daemon needs more than its limit (behaviour/resources)" if oom else
           "read the log tail below for a panic or fatal error" if code not in (0, None) else
           "it stopped cleanly: something sent it SIGTERM or the entrypoint returned")
    msg = (f"{why}: {fix}" + (f"; jobs lost with it: {', '.join(lost)}" if lost else "")
           + (f"\n--- last log lines ---\n{facts.log_tail.rstrip()[-3000:]}"
              if facts.log_tail else ""))
    rec("liveness", run.profile, Outcome.FAIL, msg, evidence=ev)


def _solo(ev: Evidence, name: str, workload: str, run: RunRecord,
          concurrency: int) -> FlowRecord | None:
    """One proof of the workload's first job, alone on ``name``'s daemon (flow ``warmup-solo``),
    when the run has no steady-state sample and its warmup proof completed; else ``None``."""
    flow = run.workload_flow
    first = next((j for j in flow.jobs if j.index == 0), None) if flow else None
    if first is None or first.status is not JobStatus.COMPLETED or steady_walls(run, concurrency):
        return None
    job = ev.workload(workload).jobs[0].name
    return ev.send(name, workload, [JobSpec(index=0, job=job)], name="warmup-solo", concurrency=1)


def evaluate(ev: Evidence, workload: str) -> list[OracleRecord]:
    """The warmup records of every profile on ``workload`` (a profile whose run has no
    steady-state sample gets one solo proof after it: the module docstring)."""
    rec = Recorder(ev, "warmup", workload)
    for name, profile in ev.profiles.items():
        run = ev.run(name, workload)
        if profile.runtime is Runtime.ATTACH:
            rec("first-proof", name, Outcome.SKIPPED, f"profile {name!r} is attached to the "
                f"daemon at {profile.address}: proofdiff did not start it, so its first proof "
                "after start (the SRS load) is not this run's; use target 'process' or "
                "'docker' to check warmup")
        else:
            first_proof(rec, run, profile.concurrency,
                        solo=_solo(ev, name, workload, run, profile.concurrency))
        first_run_check.judge(ev, rec, run)
        liveness(rec, run)
    return rec.records
