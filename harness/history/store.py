"""Appending a run to the history: one transaction per run, whatever the run's end.

:func:`store_result` writes a :class:`~proofdiff.model.result.DifferentialResult` (``run``,
``nightly``, a regression replay, the pytest plugin, a gate's own differential): the run row,
its machine, images, every oracle record, one cell per (profile, workload, image) run and
every sample of it (:func:`samples_of`). :func:`record_run` is what a command calls: open,
store, close, and say what happened, never raising for a history that fails (the run's own
report is already written; the caller puts the failure in its exit status).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import insert, select
from sqlalchemy.exc import DBAPIError, IntegrityError, SQLAlchemyError
from sqlalchemy.orm import Session as DbSession

from proofdiff.history.database import History, HistoryError, describe_failure, history_url, open_history
from proofdiff.history.fingerprint import machine_key
from proofdiff.history.schema import Cell, Machine, OracleRow, Run, RunImage, Sample
from proofdiff.model import serde
from proofdiff.model.result import DifferentialResult
from proofdiff.model.runs import RunRecord
from proofdiff.model.status import JobStatus

__all__ = ["DAEMON_FIGURES", "GPU_FIGURES", "IDLE_FIGURES", "StoreOutcome", "commit_info", "record_run", "samples_of",
           "store_result"]

#: NVML readings stored per sample, where the run sampled a GPU: metric -> (GpuSample field,
#: unit) (harness/model/gpu_telemetry.py).
GPU_FIGURES = {"gpu_util": ("util_pct", "%"), "gpu_mem_used": ("mem_used_bytes", "bytes"),
               "gpu_sm_clock": ("sm_clock_mhz", "MHz"), "gpu_temp": ("temp_c", "C"),
               "gpu_power": ("power_w", "W")}

#: The daemon's process at rest in each flow (the floor of its memory and handles, as the
#: operating system counts them), stored per flow: metric -> (UsageSample field, unit)
#: (harness/model/jobs.py).
IDLE_FIGURES = {"daemon_rss": ("rss_bytes", "bytes"), "daemon_fds": ("fds", "count"),
                "daemon_threads": ("threads", "count")}

#: The daemon's own timing figures stored per completed job: metric -> DaemonTimings field (ms).
DAEMON_FIGURES = {"queue_wait": "queue_wait_ms", "srs_load": "srs_load_ms",
                  "synthesis": "synthesis_ms", "gpu_compute": "gpu_compute_ms",
                  "daemon_total": "total_ms"}


def commit_info() -> dict[str, Any]:
    """The current checkout's commit (pytest-benchmark's ``get_commit_info``: id, time, dirty,
    project, branch; ``id`` is '' outside a git checkout)."""
    from pytest_benchmark.utils import get_commit_info

    info = dict(get_commit_info())  # type: ignore[no-untyped-call]
    info.setdefault("id", "")
    return info


def samples_of(run: RunRecord) -> Iterator[dict[str, Any]]:
    """The sample rows of one run (without ``cell_id``), in flow and job order.

    Per job of every flow (await-only probes left out): ``latency`` (the client's wall time,
    ms) with its status and the verifier's verdict; and, for a job the daemon reported timings
    for, its five figures (:data:`DAEMON_FIGURES`, ms: a claim, kept beside the observation).
    Per flow whose every job completed: ``per_proof_cost`` (flow wall / jobs, ms; 60000 / it =
    proofs per minute). The workload flow's first job loads the SRS: it and that flow's cost
    are ``warmup``. Per flow whose daemon was read, the floor of its memory and handles
    (:data:`IDLE_FIGURES`). Per NVML reading of the daemon's GPUs, where sampled:
    :data:`GPU_FIGURES` (flow ``gpu``).
    """
    for flow in run.flows:
        jobs = [j for j in flow.jobs if not j.await_only]
        warm_flow = flow.name == "workload"
        for job in jobs:
            base = {"flow": flow.name, "label": flow.label, "seq": job.index, "job": job.job,
                    "status": job.status.value,
                    "valid": job.verdict.valid if job.verdict is not None else None,
                    "warmup": warm_flow and job.index == 0,
                    "t_unix_s": job.started_unix_s or None}
            yield {**base, "metric": "latency", "unit": "ms", "value": float(job.wall_ms)}
            if job.status is JobStatus.COMPLETED and job.timings.total_ms:
                for metric, field in DAEMON_FIGURES.items():
                    yield {**base, "metric": metric, "unit": "ms",
                           "value": float(getattr(job.timings, field))}
        if jobs and all(j.completed for j in jobs) and flow.wall_ms > 0:
            yield {"flow": flow.name, "label": flow.label, "seq": 0, "job": "", "status": "",
                   "valid": None, "warmup": warm_flow, "t_unix_s": None,
                   "metric": "per_proof_cost", "unit": "ms", "value": flow.wall_ms / len(jobs)}
    yield from _idle_samples(run)
    yield from _gpu_samples(run)


def _idle_samples(run: RunRecord) -> Iterator[dict[str, Any]]:
    """The daemon's process at rest in each flow, where it was read: the floor (the least read
    during the flow, before its first request or between jobs) of each of :data:`IDLE_FIGURES`,
    ``seq`` the flow's place in the run; the first flow's (before the SRS load) is ``warmup``."""
    for seq, flow in enumerate(run.flows):
        if not flow.usage:
            continue
        for metric, (field, unit) in IDLE_FIGURES.items():
            got = [getattr(u, field) for u in flow.usage]
            value = None if any(v is None for v in got) else min(got)
            if value is not None:
                yield {"flow": flow.name, "label": flow.label, "seq": seq, "job": "",
                       "status": "", "valid": None, "warmup": seq == 0,
                       "t_unix_s": flow.started_unix_s or None, "metric": metric, "unit": unit,
                       "value": float(value)}


def _gpu_samples(run: RunRecord) -> Iterator[dict[str, Any]]:
    """The daemon's NVML readings (``DaemonFacts.gpu``, where the run sampled a GPU), one row
    per reading and figure; ``job`` is the GPU's UUID."""
    gpu = run.daemon.gpu if run.daemon is not None else None
    if gpu is None:
        return
    for seq, g in enumerate(gpu.samples):
        for metric, (field, unit) in GPU_FIGURES.items():
            value = getattr(g, field)
            if value is not None:
                yield {"flow": "gpu", "label": "", "seq": seq, "job": g.uuid, "status": "",
                       "valid": None, "warmup": False, "t_unix_s": gpu.started_unix_s + g.t_s,
                       "metric": metric, "unit": unit, "value": float(value)}


def _machine(db: DbSession, facts: Mapping[str, Any]) -> int:
    key = machine_key(facts)
    found = db.scalar(select(Machine.id).where(Machine.fingerprint == key.fingerprint))
    if found is not None:
        return found
    row = Machine(fingerprint=key.fingerprint, host=key.host, gpu_model=key.gpu_model,
                  gpu_driver=key.gpu_driver, cpus=key.cpus, mem_gib=key.mem_gib,
                  facts=dict(facts))
    db.add(row)
    db.flush()
    return row.id


def _utc(unix_s: float) -> datetime:
    return datetime.fromtimestamp(unix_s, tz=UTC)


def store_result(history: History, result: DifferentialResult, *, command: str,
                 commit: Mapping[str, Any] | None = None, verdict: str = "") -> int:
    """Append ``result`` as one run (module docstring) in one transaction; returns its row id.

    Args:
        command: what made it (``run``, ``nightly``, ``replay``, ``pytest``, ``gate``).
        commit: the checkout's commit info (default :func:`commit_info`).
        verdict: the run's conclusion as stored, when it is not the differential's verdict
            (a gate's decision, ``pass`` ... ``interrupted``); default ``result.verdict``.

    Raises:
        HistoryError: the run id is already stored, or the database failed (locked, gone).
    """
    info = dict(commit if commit is not None else commit_info())
    try:
        with DbSession(history.engine) as db, db.begin():
            run = Run(run_id=result.run_id, command=command,
                      created_at=_utc(result.created_unix_s), stored_at=datetime.now(UTC),
                      wall_s=result.wall_s, machine_id=_machine(db, result.machine),
                      commit=str(info.get("id") or ""), commit_info=info,
                      verdict=verdict or result.verdict.value, verdict_line=result.verdict_line,
                      exit_code=result.exit_code, errors=list(result.errors),
                      profiles=dict(result.profiles), workloads=list(result.workloads),
                      suites=list(result.suites))
            db.add(run)
            db.flush()
            images = [{"run_pk": run.id, "role": "image", "tag": i.tag, "digest": i.digest}
                      for i in result.images]
            if result.verifier is not None:
                images.append({"run_pk": run.id, "role": "verifier", "tag": result.verifier.tag,
                               "digest": result.verifier.digest})
            if images:
                db.execute(insert(RunImage), images)
            records = [{"run_pk": run.id, "suite": r.suite, "oracle": r.oracle,
                        "profile": r.profile, "workload": r.workload, "image": r.image,
                        "outcome": r.outcome.value, "record": serde.to_builtins(r)}
                       for r in result.records]
            if records:
                db.execute(insert(OracleRow), records)
            rows: list[dict[str, Any]] = []
            for rr in result.runs:
                cell = Cell(run_pk=run.id, profile=rr.profile, workload=rr.workload,
                            image_tag=rr.image.tag, image_digest=rr.image.digest,
                            runtime=rr.daemon.runtime.value if rr.daemon else "",
                            start_to_ready_ms=rr.daemon.start_to_ready_ms if rr.daemon else None,
                            errors=list(rr.errors))
                db.add(cell)
                db.flush()
                rows.extend({**s, "cell_id": cell.id} for s in samples_of(rr))
            if rows:
                db.execute(insert(Sample), rows)
            return run.id
    except IntegrityError as exc:
        if "run_id" in str(exc.orig) or "runs" in str(exc.orig):
            raise HistoryError(f"history {history.url} already holds run {result.run_id!r}",
                               fix="give the run a new --run-id (or none: a new one is made)"
                               ) from None
        raise describe_failure(exc, history.url) from None
    except (DBAPIError, SQLAlchemyError) as exc:
        raise describe_failure(exc, history.url) from None


@dataclass(frozen=True)
class StoreOutcome:
    """What :func:`record_run` did: ``ok``, the line to print, and the error when not ok."""

    ok: bool
    line: str
    error: HistoryError | None = None


def record_run(value: str, report_root: Path, result: DifferentialResult, *,
               command: str, commit: Mapping[str, Any] | None = None,
               verdict: str = "") -> StoreOutcome:
    """Store ``result`` in the history that ``--history VALUE`` names (module docstring;
    ``commit`` and ``verdict`` as for :func:`store_result`).

    Returns:
        ``ok`` with ``history: stored run R (#N) in URL``, or not ok with the
        :class:`HistoryError` (locked, corrupt, newer schema, unreachable) and its text.
    """
    url = history_url(value, report_root)
    try:
        history = open_history(url)
        try:
            pk = store_result(history, result, command=command, commit=commit, verdict=verdict)
        finally:
            history.close()
    except HistoryError as exc:
        return StoreOutcome(False, f"history: NOT STORED: {exc}", exc)
    return StoreOutcome(True, f"history: stored run {result.run_id} (#{pk}) in {history.url}")
