"""The run history on a real SQLite file: a run stored whatever its end, read back as the
metrics ``proofdiff history`` shows, series kept apart by machine, the migrations equal to the
models, and each bad database (locked, corrupt, newer schema, a run stored twice) refused with
its cause and fix."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import msgspec
import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext

from proofdiff.history.database import HistoryError, history_url, open_history, schema_head
from proofdiff.history.query import load_series, recorded_metrics, run_count
from proofdiff.history.schema import Base
from proofdiff.gate.gate_history import gate_run_record
from proofdiff.gate.gate_result import Decision, GateResult
from proofdiff.history.store import store_result
from proofdiff.model.image import ImageInfo
from proofdiff.model.jobs import FlowRecord
from proofdiff.model.result import DifferentialResult
from proofdiff.model.runs import RunRecord
from proofdiff.model.status import JobStatus, Verdict
from tests.conftest import job, run

MACHINE = {"hostname": "runner-1", "cpus": 16, "cpus_usable": 16,
           "mem_total_bytes": 128 * 2 ** 30 + 5_000_000,
           "gpus": [{"name": "NVIDIA H200", "driver_version": "570.86.15"}]}
COMMIT = {"id": "c0ffee", "dirty": False}


def result(rid: str, runs: tuple[RunRecord, ...] = (), *, verdict: Verdict = Verdict.SAME,
           t: float = 1_764_000_000.0, machine: dict[str, object] | None = None,
           errors: tuple[str, ...] = ()) -> DifferentialResult:
    return DifferentialResult(run_id=rid, created_unix_s=t, verdict=verdict,
                              verdict_line=f"{verdict.value} line", exit_code=verdict.exit_code,
                              runs=runs, machine=machine if machine is not None else MACHINE,
                              profiles={"bench": {"concurrency": 1}}, workloads=("wpost-2k",),
                              suites=("validity",), errors=errors)


def timed_run(wall_ms: float, *, bad: int = 0, failed: int = 0) -> RunRecord:
    """A bench run: a workload flow of 4 jobs (the first the warmup) and one timing batch of
    4 jobs at ``wall_ms`` each; ``bad`` of the timing jobs invalid, ``failed`` FAILED."""
    wl = run("bench", [job(i, wall_ms=wall_ms) for i in range(4)])
    timing = [job(i, wall_ms=wall_ms, parts=(True, i >= bad)) for i in range(4 - failed)] + [
        job(i, JobStatus.FAILED, wall_ms=50.0) for i in range(4 - failed, 4)]
    batch = FlowRecord(name="timing", label="bench:A1#0", jobs=tuple(timing),
                       wall_ms=4 * wall_ms)
    return msgspec.structs.replace(wl, flows=(*wl.flows, batch))


@pytest.fixture
def db(tmp_path: Path):  # type: ignore[no-untyped-def]
    h = open_history(history_url(str(tmp_path / "h.sqlite"), tmp_path))
    yield h
    h.close()


def test_a_stored_run_reads_back_as_each_metric(db) -> None:  # type: ignore[no-untyped-def]
    store_result(db, result("r1", (timed_run(1000.0, bad=1, failed=1),)), command="run",
                 commit=COMMIT)
    [lat] = load_series(db, "latency")
    assert (lat.profile, lat.workload, lat.machine.gpu_model) == ("bench", "wpost-2k",
                                                                  "NVIDIA H200")
    assert lat.machine.mem_gib == 128
    p = lat.points[0]
    assert (p.run_id, p.commit, p.verdict, p.image_tag) == ("r1", "c0ffee", "SAME",
                                                            "proofdiff/refprover:test")
    assert p.value == 1000.0  # the warmup and the FAILED job are not latency samples
    [fail] = load_series(db, "failure-rate")
    assert fail.points[0].value == pytest.approx(100 * 1 / 8)  # 1 of 8 workload+timing jobs
    [inv] = load_series(db, "invalid-rate")
    assert inv.points[0].value == pytest.approx(100 * 1 / 7)  # 1 of 7 verified proofs
    [ready] = load_series(db, "start-to-ready")
    assert ready.points[0].value == 180.0
    [thr] = load_series(db, "throughput")
    assert thr.points[0].value is None  # the only full-completion flow is the warmup's
    assert set(recorded_metrics(db)) >= {"latency", "throughput", "start-to-ready"}


def test_throughput_is_from_the_steady_flows_cost(db) -> None:  # type: ignore[no-untyped-def]
    store_result(db, result("r1", (timed_run(1500.0),)), command="run", commit=COMMIT)
    [thr] = load_series(db, "throughput")
    assert thr.points[0].value == pytest.approx(60000 / 1500.0)


def test_failed_and_interrupted_runs_are_stored_as_such(db) -> None:  # type: ignore[no-untyped-def]
    store_result(db, result("err", verdict=Verdict.ERROR, errors=("no Docker engine",)),
                 command="run", commit=COMMIT)
    store_result(db, result("int", (run("bench", [job(0)]),), verdict=Verdict.INTERRUPTED,
                            t=1_764_000_100.0), command="run", commit=COMMIT)
    assert run_count(db) == 2
    with sqlite3.connect(db.url[len("sqlite:///"):]) as conn:
        rows = conn.execute("SELECT run_id, verdict, errors FROM runs ORDER BY id").fetchall()
    assert rows == [("err", "ERROR", '["no Docker engine"]'), ("int", "INTERRUPTED", "[]")]
    [lat] = load_series(db, "latency")
    assert [(p.run_id, p.verdict, p.value) for p in lat.points] == [("int", "INTERRUPTED", None)]


def test_series_never_mix_machines(db) -> None:  # type: ignore[no-untyped-def]
    other = {**MACHINE, "gpus": [{"name": "NVIDIA L4", "driver_version": "570.86.15"}]}
    for i in range(3):
        store_result(db, result(f"h{i}", (timed_run(1000.0),), t=1_764_000_000.0 + i),
                     command="run", commit=COMMIT)
        store_result(db, result(f"l{i}", (timed_run(3000.0),), t=1_764_000_010.0 + i,
                                machine=other), command="run", commit=COMMIT)
    series = load_series(db, "latency")
    assert sorted((s.machine.gpu_model, [p.value for p in s.points]) for s in series) == [
        ("NVIDIA H200", [1000.0] * 3), ("NVIDIA L4", [3000.0] * 3)]


def test_the_migrations_build_exactly_the_models(db) -> None:  # type: ignore[no-untyped-def]
    with db.engine.connect() as conn:
        ctx = MigrationContext.configure(conn)
        assert ctx.get_current_heads() == (schema_head(),)
        assert compare_metadata(ctx, Base.metadata) == []


def test_a_run_stored_twice_is_refused(db) -> None:  # type: ignore[no-untyped-def]
    store_result(db, result("r1"), command="run", commit=COMMIT)
    with pytest.raises(HistoryError, match="already holds run 'r1'") as exc:
        store_result(db, result("r1"), command="run", commit=COMMIT)
    assert "--run-id" in exc.value.fix


@pytest.mark.parametrize("lock", ["EXCLUSIVE", "IMMEDIATE"])
def test_a_locked_database_is_a_clear_error(tmp_path: Path, lock: str) -> None:
    """EXCLUSIVE: another writer mid-commit (nobody may read); IMMEDIATE: another writer's open
    transaction (reads go on, the append waits and gives up)."""
    path = tmp_path / "h.sqlite"
    open_history(history_url(str(path), tmp_path)).close()
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute(f"BEGIN {lock}")
    try:
        with pytest.raises(HistoryError, match="is locked") as exc:
            h = open_history(history_url(str(path), tmp_path), lock_timeout_s=0.2)
            try:
                store_result(h, result("r1"), command="run", commit=COMMIT)
            finally:
                h.close()
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert "--history" in exc.value.fix


def test_a_corrupt_file_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "h.sqlite"
    path.write_bytes(b"this is not a database, just text " * 200)
    with pytest.raises(HistoryError, match="not a readable SQLite database") as exc:
        open_history(history_url(str(path), tmp_path))
    assert "move the file aside" in exc.value.fix


def test_a_newer_schema_is_refused_and_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "h.sqlite"
    open_history(history_url(str(path), tmp_path)).close()
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE alembic_version SET version_num = '9999_from_the_future'")
    with pytest.raises(HistoryError, match="'9999_from_the_future', newer than") as exc:
        open_history(history_url(str(path), tmp_path))
    assert "upgrade proofdiff" in exc.value.fix
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT version_num FROM alembic_version").fetchall() == [
            ("9999_from_the_future",)]


def test_history_values_become_urls(tmp_path: Path) -> None:
    assert history_url("", tmp_path) == f"sqlite:///{tmp_path}/history.sqlite"
    assert history_url("default", tmp_path) == f"sqlite:///{tmp_path}/history.sqlite"
    assert history_url("postgresql://u@h:5/d", tmp_path) == "postgresql+psycopg://u@h:5/d"
    assert history_url("postgres://u@h/d", tmp_path) == "postgresql+psycopg://u@h/d"


def test_nvml_readings_are_stored_and_read_as_gpu_utilization(db) -> None:  # type: ignore[no-untyped-def]
    from proofdiff.model.gpu_telemetry import GpuSample, GpuTelemetry
    readings = tuple(GpuSample(t_s=float(i), uuid="GPU-1", util_pct=u, mem_used_bytes=2 ** 30,
                               power_w=300.0) for i, u in enumerate((10, 90, 95, 97)))
    r = timed_run(1000.0)
    r = msgspec.structs.replace(r, daemon=msgspec.structs.replace(r.daemon, gpu=GpuTelemetry(
        source="nvml", started_unix_s=1_764_000_000.0, gpus={"GPU-1": "NVIDIA H200"},
        samples=readings)))
    store_result(db, result("g1", (r,)), command="run", commit=COMMIT)
    [util] = load_series(db, "gpu-util")
    assert util.points[0].value == 92.5 and util.points[0].n == 4
    with sqlite3.connect(db.url[len("sqlite:///"):]) as conn:
        got = conn.execute("SELECT metric, unit, count(*) FROM samples WHERE flow = 'gpu' "
                           "GROUP BY metric ORDER BY metric").fetchall()
    assert got == [("gpu_mem_used", "bytes", 4), ("gpu_power", "W", 4), ("gpu_util", "%", 4)]


def test_a_series_can_hold_one_command_s_runs(db) -> None:  # type: ignore[no-untyped-def]
    store_result(db, result("dev", (timed_run(900.0),)), command="run", commit=COMMIT)
    store_result(db, result("night", (timed_run(1000.0),), t=1_764_000_100.0),
                 command="nightly", commit=COMMIT)
    [every] = load_series(db, "latency")
    [nights] = load_series(db, "latency", command=["nightly"])
    assert [p.run_id for p in every.points] == ["dev", "night"]
    assert [(p.run_id, p.command) for p in nights.points] == [("night", "nightly")]


def test_a_new_history_file_gets_its_folder(tmp_path: Path) -> None:
    path = tmp_path / "runner" / "history" / "h.sqlite"
    h = open_history(history_url(str(path), tmp_path))
    h.close()
    assert path.is_file()


def gate(decision: Decision, *, errors: tuple[str, ...] = ()) -> GateResult:
    return GateResult(run_id=f"gate-{decision.value}", created_unix_s=1_764_000_500.0,
                      decision=decision, decision_line=f"{decision.value.upper()}: line",
                      exit_code=decision.exit_code,
                      candidate=ImageInfo(tag="cand:1", digest="sha256:" + "cd" * 32),
                      baseline=ImageInfo(tag="base:1", digest="sha256:" + "ba" * 32),
                      profiles={"bench": {"concurrency": 1}}, workloads=("wpost-2k",),
                      errors=errors, machine=MACHINE, commit=COMMIT, wall_s=42.0)


def test_a_gate_is_stored_with_its_differential_its_timing_samples_and_its_decision(
        db) -> None:  # type: ignore[no-untyped-def]
    diff = result("differential", (timed_run(1000.0),), verdict=Verdict.SAME)
    sides = [msgspec.structs.replace(timed_run(ms), profile=f"bench-{side}",
                                     image=ImageInfo(tag=f"{side[:4]}:1", digest=side))
             for side, ms in (("baseline", 1000.0), ("candidate", 1300.0))]
    store_result(db, gate_run_record(gate(Decision.FAIL), diff, sides), command="gate",
                 commit=COMMIT, verdict="fail")
    store_result(db, gate_run_record(gate(Decision.ERROR, errors=("the candidate image: "
                                                                  "absent",)), None, ()),
                 command="gate", commit=COMMIT, verdict="error")
    with sqlite3.connect(db.url[len("sqlite:///"):]) as conn:
        rows = conn.execute("SELECT run_id, command, verdict, exit_code, errors FROM runs "
                            "ORDER BY id").fetchall()
        images = conn.execute("SELECT tag FROM run_images WHERE run_pk = 1").fetchall()
    assert rows == [("gate-fail", "gate", "fail", 1, "[]"),
                    ("gate-error", "gate", "error", 3, '["the candidate image: absent"]')]
    assert sorted(t for (t,) in images) == ["base:1", "cand:1"]
    lat = {s.profile: [p.value for p in s.points]
           for s in load_series(db, "latency", command=("gate",))}
    # the differential's cell and one per side of the timing arm, each with its samples; the
    # gate that could not run has no cell
    assert lat == {"bench": [1000.0], "bench-baseline": [1000.0],
                   "bench-candidate": [1300.0]}, lat
