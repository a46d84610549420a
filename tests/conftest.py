"""Shared by the harness's tests: tier markers by folder, real-shaped records and files, and
the built artifacts (image, binaries, params, wpost-2k workload) for the tiers that need them.

Tiers (tests/README.md): ``unit`` (no Docker, no daemon), ``host`` (refprover binaries run on
the host), ``docker`` (a Docker engine), ``e2e`` (``proofdiff run`` and ``run_differential`` on
real containers); the marker follows the folder, so ``-m unit`` picks a tier.
"""

from __future__ import annotations

import base64
import json
import tempfile
from collections.abc import Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import docker
import pytest

from proofdiff.model.image import ImageInfo
from proofdiff.model.run_options import RunOptions
from proofdiff.model.jobs import DaemonTimings, FlowRecord, JobRecord, ProofVerdict
from proofdiff.model.runs import DaemonFacts, RunRecord
from proofdiff.model.status import JobStatus
from proofdiff.oracles.evidence import Recorder

REPO = Path(__file__).resolve().parents[1]
TIERS = ("unit", "host", "docker", "e2e")


#: Tiers whose tests start daemons, prove or time: they share the machine's cores and the
#: Docker engine, and some assert what is left running, so they run one at a time.
SERIAL_TIERS = ("host", "docker", "e2e")
#: Tests of those tiers that prove little or nothing and mostly wait on a daemon (a hang guard's
#: stall, a deadline, preflight's probes, a run interrupted or refused before any proof): the
#: worker that takes the unit tier runs them beside the tests that prove. None of them times
#: anything, and none asserts what is left on the whole machine; each has a temp dir of its own
#: (:func:`beside_temp_dir`), so the serial tiers' checks for daemons left behind (their dirs
#: under the temp dir, their command lines) never see theirs, and containers are told apart by
#: run id or owner. A test renamed out of this list only goes back to the serial tiers.
BESIDE = frozenset({
    "tests/host/test_driver_grpc.py::"
    "test_a_wedged_daemon_that_claims_work_in_progress_is_stalled_long_before_its_deadline",
    "tests/host/test_driver_grpc.py::test_a_job_past_its_deadline_is_lost_with_the_deadline_named",
    "tests/host/test_flows_host.py::test_queue_deadlock_names_the_stuck_ids",
    "tests/e2e/test_bench_vs_prod.py::test_daemon_never_answering_fails_within_its_deadline",
    "tests/e2e/test_bench_vs_prod.py::test_daemon_exiting_at_start_is_a_clear_error",
    "tests/e2e/test_bisect.py::test_run_bisect_replaces_the_ranking_with_the_param_path_change",
    "tests/e2e/test_bisect.py::test_a_good_profile_that_already_fails_stops_at_once_and_says_so",
    "tests/e2e/test_bisect.py::test_the_nightly_bisects_a_new_divergence_and_not_one_still_failing",
    "tests/e2e/test_behaviour_and_params.py::test_a_damaged_param_file_fails_preflight_naming_it",
    "tests/e2e/test_bad_input.py::test_a_c1_for_another_sector_size",
    "tests/e2e/test_bad_input.py::test_a_workload_file_that_does_not_parse",
    "tests/e2e/test_bench_vs_prod.py::test_missing_image_is_a_clear_error_with_a_report",
    "tests/e2e/test_bench_vs_prod.py::test_interrupt_removes_containers_and_keeps_the_report",
    "tests/e2e/test_bench_vs_prod.py::"
    "test_sigkill_of_proofdiff_run_leaves_no_container_or_temp_dir",
    "tests/e2e/test_gate.py::test_a_missing_candidate_is_an_error_naming_it_with_a_report",
    "tests/e2e/test_bench_cli.py::"
    "test_a_flag_the_bench_tool_rejects_is_an_error_with_its_usage_line",
    "tests/e2e/test_bench_cli.py::test_gpu_request_without_an_nvidia_runtime_says_what_to_do",
    "tests/e2e/test_regressions.py::test_an_open_case_is_an_xfail_and_its_fix_a_strict_xpass",
    "tests/e2e/test_regressions.py::test_proofdiff_run_suite_regressions_judges_as_the_suite",
    "tests/e2e/test_regressions.py::"
    "test_a_case_whose_image_is_missing_is_skipped_with_how_to_get_it",
})


def runs_beside(nodeid: str) -> bool:
    """Whether the test ``nodeid`` (any parameters) is one of :data:`BESIDE`."""
    return nodeid.split("[", 1)[0] in BESIDE


def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """With ``-n 2`` (`make test`): every test of :data:`SERIAL_TIERS` in one work unit, so one
    worker runs them in order, while the other takes the unit tier, a module at a time, and the
    tests of :data:`BESIDE` as one more unit. (xdist hands the worker of the serial unit no
    other unit before its last two tests: the others all go to the second worker.)

    The unit tier is Python on one core; beside the proving tiers it fills the time they leave
    a core idle (daemon starts, waits). A custom scope, not ``xdist_group``: pytest-xdist 3.8
    marks a group by setting ``item._nodeid``, which pytest 9.2's ``Node.nodeid`` no longer
    reads, so grouped tests were spread over both workers (tests/README.md)."""
    from xdist.scheduler import LoadScopeScheduling

    class SerialTiers(LoadScopeScheduling):  # type: ignore[misc]
        def _split_scope(self, nodeid: str) -> str:
            if runs_beside(nodeid):
                return "tests: beside the serial tiers"
            parts = nodeid.split("/")
            if len(parts) > 2 and parts[0] == "tests" and parts[1] in SERIAL_TIERS:
                return "tests: " + ", ".join(SERIAL_TIERS)
            return str(super()._split_scope(nodeid))

    return SerialTiers(config, log)


@pytest.fixture(autouse=True)
def beside_temp_dir(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory,
                    monkeypatch: pytest.MonkeyPatch) -> None:
    """A test of :data:`BESIDE` makes its temp files (daemons' dirs, also those of the
    ``proofdiff`` processes it starts, through ``TMPDIR``) in a dir of its own."""
    if runs_beside(request.node.nodeid):
        own = str(tmp_path_factory.mktemp("beside-tmp"))
        monkeypatch.setenv("TMPDIR", own)
        monkeypatch.setattr(tempfile, "tempdir", own)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        parts = Path(item.path).relative_to(REPO).parts
        if len(parts) > 2 and parts[0] == "tests" and parts[1] in TIERS:
            item.add_marker(getattr(pytest.mark, parts[1]))


@pytest.fixture(scope="session")
def artifacts() -> Any:
    """The build's artifacts (proofdiff.artifacts; `make test` builds them first, cached outside the
    clone, so this is a quick check). Skips, with the reason, where no Docker engine answers."""
    try:
        docker.from_env().ping()
    except Exception as exc:  # noqa: BLE001 - any failure means: no engine to build or test against
        pytest.skip(f"no Docker engine reachable ({exc}); start dockerd to run this tier")
    from proofdiff.artifacts import ensure_artifacts

    return ensure_artifacts(["wpost-2k"], lambda _line: None,
                            cache_root=Path(RunOptions.from_env().cache_root),
                            crate_dir=REPO / "targets" / "refprover")


def smaller_workload(src: Path, out_dir: Path, *, jobs: int, partitions: int | None = None) -> Path:
    """A copy of the build's wpost-2k workload file ``src`` in ``out_dir`` with its first
    ``jobs`` jobs and, given ``partitions``, each job's first ``partitions`` partitions' sectors
    and vanilla proofs (real sealed inputs: at api 1.2.0 a sector's challenges derive from its
    id and the randomness, not from its place in the job, so the kept vanilla proofs stay
    valid); returns its path."""
    doc = json.loads(src.read_text(encoding="utf-8"))
    doc["jobs"] = doc["jobs"][:jobs]
    if partitions is not None:
        per = len(doc["jobs"][0]["sectors"]) // doc["partitions"]  # sectors per partition
        doc["partitions"] = partitions
        doc["jobs"] = [{**j, "sectors": j["sectors"][:per * partitions],
                        "vanilla_proofs": j["vanilla_proofs"][:per * partitions]}
                       for j in doc["jobs"]]
    path = out_dir / "wpost-2k.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


@pytest.fixture(scope="session")
def two_job_workload(artifacts: Any, tmp_path_factory: pytest.TempPathFactory) -> str:
    """``wpost-2k=PATH`` for ``--workload-file``: the build's wpost-2k workload with its first
    two jobs only (real sealed inputs, 2 partitions each), for tests whose facts need jobs in
    flight together but not four of them (a validity probe of a bisection proves half as
    much). Every suite judges it: isolation reuses a unique id of its 3-slot burst."""
    path = smaller_workload(Path(artifacts.workloads["wpost-2k"]),
                            tmp_path_factory.mktemp("two-jobs"), jobs=2)
    return f"wpost-2k={path}"


@pytest.fixture(scope="session")
def three_job_workload(artifacts: Any, tmp_path_factory: pytest.TempPathFactory) -> str:
    """``wpost-2k=PATH``: the first three jobs, for a fact that needs a third distinct input.
    A daemon whose proofs of one input leak into another's (shared-witness) shows it only when
    an input's partition starts after another input's same partition has ended: with three
    inputs of 2 partitions, 6 items against at most 4 in progress, the third input's items
    always start after one of each earlier input's has ended; with two, only when the daemon
    happens to end them in one order."""
    path = smaller_workload(Path(artifacts.workloads["wpost-2k"]),
                            tmp_path_factory.mktemp("three-jobs"), jobs=3)
    return f"wpost-2k={path}"


@pytest.fixture(scope="session")
def one_partition_workload(artifacts: Any, tmp_path_factory: pytest.TempPathFactory) -> str:
    """``wpost-2k=PATH``: the first two jobs with one partition each (their first 2 sectors),
    half the proving of :func:`two_job_workload`'s, for tests about what a flow of jobs shows
    whatever its partitions: the gates of bench (monolithic) profiles."""
    path = smaller_workload(Path(artifacts.workloads["wpost-2k"]),
                            tmp_path_factory.mktemp("one-partition"), jobs=2, partitions=1)
    return f"wpost-2k={path}"


@pytest.fixture
def run_opts(artifacts: Any, tmp_path: Path) -> RunOptions:
    """Run options over the build's artifacts (nothing is built again), reports in
    ``tmp_path``; a test replaces what it needs (``msgspec.structs.replace``)."""
    return RunOptions.from_env(
        param_cache=str(artifacts.param_cache),
        workload_files={n: str(p) for n, p in artifacts.workloads.items()},
        verifier_image=artifacts.verifier_image, bin_dir=str(artifacts.bin_dir),
        report_dir=str(tmp_path))


def workload_doc(jobs: int = 4, sectors: int = 4) -> dict[str, Any]:
    """A workload file in the refprover `seal` format (bytes made up, shapes real)."""
    return {
        "schema": 1, "workload": "wpost-2k", "proof_kind": "WINDOW_POST_PARTITION",
        "sector_size": 2048, "registered_proof": 10, "api_version": "1.2.0", "partitions": 2,
        "jobs": [{
            "name": f"wpost-{j}", "miner_id": 1000, "randomness": bytes([j] * 32).hex(),
            "sectors": [{"sector_id": s + 1, "comm_r": bytes([s + 16] * 32).hex()}
                        for s in range(sectors)],
            "vanilla_proofs": [base64.b64encode(bytes([j, s]) * 50).decode()
                               for s in range(sectors)],
        } for j in range(jobs)],
    }


@pytest.fixture
def workload_file(tmp_path: Path) -> Path:
    path = tmp_path / "wpost-2k.json"
    path.write_text(json.dumps(workload_doc()), encoding="utf-8")
    return path


def job(i: int, status: JobStatus = JobStatus.COMPLETED, nbytes: int = 384, rid: str = "",
        error: str = "", wall_ms: float = 1000.0, parts: Sequence[bool] | None = (True, True),
        name: str = "", owners: Sequence[str] = ()) -> JobRecord:
    """A job record; a COMPLETED one carries ``nbytes`` of proof and the verifier's partition
    verdicts ``parts`` (``None``: not verified)."""
    done = status is JobStatus.COMPLETED
    verdict = (ProofVerdict(valid=all(parts), partitions=tuple(parts), owners=tuple(owners),
                            error=None if all(parts) else "partition did not verify")
               if done and parts is not None else None)
    return JobRecord(index=i, job=name or f"wpost-{i}", request_id=rid or f"id-{i}",
                     job_id=rid or f"id-{i}", status=status,
                     proof=bytes([i + 1]) * nbytes if done else b"", error=error,
                     timings=DaemonTimings(queue_wait_ms=5, srs_load_ms=200 if i == 0 else 0,
                                           synthesis_ms=40, gpu_compute_ms=700,
                                           total_ms=int(wall_ms) - 10), wall_ms=wall_ms,
                     started_unix_s=1_700_000_000.0 + i, verdict=verdict)


def run(profile: str, jobs: Sequence[JobRecord], *, errors: Sequence[str] = (),
        flow_errors: Sequence[str] = (), state: dict[str, Any] | None = None,
        workload: str = "wpost-2k") -> RunRecord:
    """A run of ``jobs`` on a daemon whose final state is ``state`` (default: running)."""
    flow = FlowRecord(name="workload", jobs=tuple(jobs), concurrency=1, wall_ms=4000.0,
                      errors=tuple(flow_errors))
    return RunRecord(profile=profile, workload=workload, image=ImageInfo(
        tag="proofdiff/refprover:test", digest="sha256:" + "ab" * 32), partitions=2,
                     flows=(flow,) if not errors else (),
                     daemon=DaemonFacts(container_id="abc123", address="127.0.0.1:40000",
                                        start_to_ready_ms=180.0,
                                        state=state if state is not None else {"Status": "running"},
                                        log_tail="INFO refprover: ready\n"),
                     errors=tuple(errors))


def recorder(suite: str, workload: str = "wpost-2k") -> Recorder:
    """A Recorder for oracle functions that need no session (the image slot is '')."""
    return Recorder(SimpleNamespace(image_slot=""), suite, workload)  # type: ignore[arg-type]
