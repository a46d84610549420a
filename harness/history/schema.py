"""The history's tables (SQLAlchemy 2 declarative models): one row per run, per machine, per
(profile, workload, image) cell of a run, per oracle record and per timing sample.

    machines  1 -- n  runs  1 -- n  cells  1 -- n  samples
                            1 -- n  run_images
                            1 -- n  oracle_records

The schema is created and upgraded only by the Alembic migrations shipped beside this module
(``migrations/versions``): a change here needs a new revision there (the unit tests compare the
two). Times are UTC; durations carry their unit in the column name (``_ms``, ``_s``) or in the
``unit`` column of a sample.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, Boolean, DateTime, Float, ForeignKey, Index, Integer, String, Text
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship

__all__ = ["Base", "Cell", "Machine", "OracleRow", "Run", "RunImage", "Sample"]


class Base(DeclarativeBase):
    """The history's metadata (``Base.metadata`` is what the migrations build)."""

    type_annotation_map = {dict[str, Any]: JSON, list[Any]: JSON}


class Machine(Base):
    """One machine fingerprint (:mod:`proofdiff.history.fingerprint`): runs are compared only
    within one.

    Columns: fingerprint (sha256 hex of the identifying facts), host, gpu_model (``2x NVIDIA
    H200``; '' = no GPU), gpu_driver, cpus (usable cores), mem_gib (MemTotal, whole GiB),
    facts (every fact the run recorded, :func:`proofdiff.runtime.host.machine_facts`).
    """

    __tablename__ = "machines"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    fingerprint: Mapped[str] = mapped_column(String(64), unique=True)
    host: Mapped[str] = mapped_column(String(255))
    gpu_model: Mapped[str] = mapped_column(String(255))
    gpu_driver: Mapped[str] = mapped_column(String(64))
    cpus: Mapped[int] = mapped_column(Integer)
    mem_gib: Mapped[int] = mapped_column(Integer)
    facts: Mapped[dict[str, Any]] = mapped_column(JSON)


class Run(Base):
    """One stored run, whatever its end: a failed, errored or interrupted run is stored with
    its verdict (``ERROR``, ``INTERRUPTED``...) and errors, never dropped.

    Columns: run_id (the report folder's name), command (``run``, ``gate``, ``nightly``,
    ``replay``, ``pytest``), created_at (when the result was made, UTC), stored_at, wall_s,
    machine_id, commit (the checkout's commit id, '' unknown) and commit_info (pytest-benchmark's
    ``get_commit_info``: id, dirty, branch...), verdict, verdict_line, exit_code, errors (run
    level, text), profiles (each resolved profile by name, the baseline first), workloads,
    suites (names).
    """

    __tablename__ = "runs"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    run_id: Mapped[str] = mapped_column(String(255), unique=True)
    command: Mapped[str] = mapped_column(String(32))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    stored_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    wall_s: Mapped[float] = mapped_column(Float)
    machine_id: Mapped[int] = mapped_column(ForeignKey("machines.id"))
    commit: Mapped[str] = mapped_column(String(64))
    commit_info: Mapped[dict[str, Any]] = mapped_column(JSON)
    verdict: Mapped[str] = mapped_column(String(32))
    verdict_line: Mapped[str] = mapped_column(Text)
    exit_code: Mapped[int] = mapped_column(Integer)
    errors: Mapped[list[Any]] = mapped_column(JSON)
    profiles: Mapped[dict[str, Any]] = mapped_column(JSON)
    workloads: Mapped[list[Any]] = mapped_column(JSON)
    suites: Mapped[list[Any]] = mapped_column(JSON)

    machine: Mapped[Machine] = relationship()

    __table_args__ = (Index("ix_runs_machine_created", "machine_id", "created_at"),)


class RunImage(Base):
    """An image (or program) a run used, with its digest. role: ``image`` (ran a daemon),
    ``verifier`` (judged the proofs), ``candidate`` / ``baseline`` (a gate's two sides)."""

    __tablename__ = "run_images"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    run_pk: Mapped[int] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), index=True)
    role: Mapped[str] = mapped_column(String(32))
    tag: Mapped[str] = mapped_column(String(512))
    digest: Mapped[str] = mapped_column(String(255))


class Cell(Base):
    """One profile x workload x image of a run (a :class:`~proofdiff.model.runs.RunRecord`, or
    one side of a gate's timing arm): what ran, how fast it came up, what went wrong.

    Columns: profile, workload, image_tag, image_digest, runtime (``docker``, ``process``,
    ``attach``), start_to_ready_ms (``None`` when the daemon never answered), errors (text).
    """

    __tablename__ = "cells"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    run_pk: Mapped[int] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"))
    profile: Mapped[str] = mapped_column(String(255))
    workload: Mapped[str] = mapped_column(String(255))
    image_tag: Mapped[str] = mapped_column(String(512))
    image_digest: Mapped[str] = mapped_column(String(255))
    runtime: Mapped[str] = mapped_column(String(32))
    start_to_ready_ms: Mapped[float | None] = mapped_column(Float, nullable=True)
    errors: Mapped[list[Any]] = mapped_column(JSON)

    __table_args__ = (Index("ix_cells_run_profile_workload", "run_pk", "profile", "workload"),)


class OracleRow(Base):
    """One oracle record of a run: its key columns, and the record itself (``record``: the
    msgspec encoding of :class:`~proofdiff.model.oracle_records.OracleRecord`, as in
    summary.json)."""

    __tablename__ = "oracle_records"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    run_pk: Mapped[int] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), index=True)
    suite: Mapped[str] = mapped_column(String(64))
    oracle: Mapped[str] = mapped_column(String(128))
    profile: Mapped[str] = mapped_column(String(255))
    workload: Mapped[str] = mapped_column(String(255))
    image: Mapped[str] = mapped_column(String(512))
    outcome: Mapped[str] = mapped_column(String(32))
    record: Mapped[dict[str, Any]] = mapped_column(JSON)


class Sample(Base):
    """One timing (or utilization) sample of a cell, with its metric and unit.

    Columns: metric (:data:`proofdiff.history.metrics.SAMPLE_METRICS`: ``latency``,
    ``per_proof_cost``, ``daemon_total``, ``queue_wait``, ``srs_load``, ``synthesis``,
    ``gpu_compute``, ``gpu_util``...), unit (``ms``, ``%``...), value, flow (``workload``,
    ``timing``, ``isolation``..., ``gpu`` for NVML readings), label (a timing batch's
    ``bench:A1#2``), seq (the job's index in its flow, or the reading's order), job (the
    workload job; a GPU's UUID for a reading), status (a
    job's :class:`~proofdiff.model.status.JobStatus`; '' for a sample that is not a job), valid
    (the verifier's verdict on the job's proof; ``None`` when not verified), warmup (the flow's
    first job, which loads the SRS, or a flow that contains it), t_unix_s (when it was taken).
    """

    __tablename__ = "samples"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    cell_id: Mapped[int] = mapped_column(ForeignKey("cells.id", ondelete="CASCADE"))
    metric: Mapped[str] = mapped_column(String(64))
    unit: Mapped[str] = mapped_column(String(16))
    value: Mapped[float] = mapped_column(Float)
    flow: Mapped[str] = mapped_column(String(64))
    label: Mapped[str] = mapped_column(String(255))
    seq: Mapped[int] = mapped_column(Integer)
    job: Mapped[str] = mapped_column(String(255))
    status: Mapped[str] = mapped_column(String(32))
    valid: Mapped[bool | None] = mapped_column(Boolean, nullable=True)
    warmup: Mapped[bool] = mapped_column(Boolean)
    t_unix_s: Mapped[float | None] = mapped_column(Float, nullable=True)

    __table_args__ = (Index("ix_samples_cell_metric", "cell_id", "metric"),)
