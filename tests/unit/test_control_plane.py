"""The control plane under load: the hang guard keeps every status poll's latency and every poll
that failed, against a real gRPC server (grpcio, the cuzk service) whose GetStatus is prompt,
then slow, then failing, and reads a real process's memory, handles and CPU at each poll; and
behaviour/control-plane (proofdiff.oracles.control_plane) judges them per flow."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Any

import grpc

from proofdiff.drivers.hang_guard import guarded
from proofdiff.model.jobs import FlowRecord, PollFailure, StatusSample
from proofdiff.model.status import Outcome
from proofdiff.oracles import control_plane
from proofdiff.oracles.evidence import Recorder
from proofdiff.proto import cuzk_pb2, cuzk_pb2_grpc
from proofdiff.runtime.process_probe import ProcessProbe
from tests.conftest import job, run
from tests.unit.fakes import FakeEvidence, refprover_profiles
from tests.unit.grpc_server import serving


class _Status(cuzk_pb2_grpc.ProvingEngineServicer):  # type: ignore[misc]
    """GetStatus answers at once for its first calls, then after 0.4 s, then fails."""

    def __init__(self) -> None:
        self.calls = 0
        self.lock = threading.Lock()

    def GetStatus(self, request: Any, context: Any) -> Any:  # noqa: N802 - the service's name
        with self.lock:
            self.calls += 1
            n = self.calls
        if 3 <= n <= 4:
            time.sleep(0.4)
        if n >= 5:
            context.abort(grpc.StatusCode.UNAVAILABLE, "status unavailable")
        return cuzk_pb2.GetStatusResponse()


def test_the_guard_keeps_each_polls_latency_its_failures_and_the_process() -> None:
    probe = ProcessProbe(os.getpid(), "this test's process")  # it serves the calls: CPU
    servicer = _Status()
    with serving(servicer) as port, guarded(f"127.0.0.1:{port}", deadline_s=30, poll_s=0.1,
                                            probe=probe) as guard:
        guard.add(1)
        t_end = time.monotonic() + 10
        while len(guard.poll_failures) < 2 and time.monotonic() < t_end:
            time.sleep(0.05)
        guard.done(1)
    lat = [s.latency_ms for s in guard.samples]
    assert len(lat) == 4 and all(x is not None for x in lat), guard.samples
    assert max(lat[:2]) < 300 and min(lat[2:]) >= 390, lat  # type: ignore[type-var]
    assert {(f.rpc, f.code) for f in guard.poll_failures} == {("GetStatus", "UNAVAILABLE")}
    # the process: before the first request, every poll period, after the block; CPU counts up
    use = guard.usage
    assert use[0].answered == 0 and use[0].t_ms < 50 and len(use) >= 6, use
    assert all(u.rss_bytes > 0 and u.threads >= 1 for u in use)
    assert use[-1].cpu_s > use[0].cpu_s
    assert use[0].fds is not None  # its own process: readable


def _flow(name: str, latencies: list[float], failures: tuple[PollFailure, ...] = ()) -> FlowRecord:
    return FlowRecord(name=name, jobs=(job(0),), samples=tuple(
        StatusSample(250.0 * (i + 1), 0, 1, None, x) for i, x in enumerate(latencies)),
        poll_failures=failures)


def _judge(workload_file: Path, *flows: FlowRecord) -> Any:
    r = run("prod", [job(i) for i in range(4)])
    ev = FakeEvidence(profiles=refprover_profiles(), workload_file=workload_file,
                      runs={"prod": r}, sent={f.name: f for f in flows})
    ev.calls = [(f.name, []) for f in flows]
    rec = Recorder(ev, "behaviour", "wpost-2k")  # type: ignore[arg-type]
    control_plane.check(ev, rec, "prod", "wpost-2k")  # type: ignore[arg-type]
    return rec.records[0]


def test_prompt_status_passes_and_one_slow_poll_is_no_failure(workload_file: Path) -> None:
    ok = _judge(workload_file, _flow("burst", [2.1, 3.5, 1800.0, 2.2, 4.0]),
                _flow("lone", [1.5, 1.7, 2.0]))
    assert ok.outcome is Outcome.PASS, ok.message
    assert "every poll answered; median 2.2 ms, longest 1800.0 ms" in ok.message


def test_status_that_waits_for_the_work_fails_per_flow(workload_file: Path) -> None:
    slow = _judge(workload_file, _flow("burst", [2.1, 3.0]),
                  _flow("lone", [900.0, 1400.0, 1700.0, 300.0]))
    assert slow.outcome is Outcome.FAIL
    assert "lone: its median status poll took 1150 ms (bound 1000 ms) over 4 poll(s)" in \
        slow.message
    dead = _judge(workload_file, _flow("burst", [2.0, 5001.0, 3.0], (PollFailure(
        1500.0, 5000.2, "GetStatus", "DEADLINE_EXCEEDED"),)))
    assert dead.outcome is Outcome.FAIL
    assert "1 poll(s) took 5 s or more" in dead.message
    assert "1 poll(s) got no answer (first: GetStatus DEADLINE_EXCEEDED after 5000 ms" in \
        dead.message
    assert dead.evidence["flows"][1]["failures"][0]["code"] == "DEADLINE_EXCEEDED"


def test_no_poll_at_all_is_nothing_to_judge(workload_file: Path) -> None:
    err = _judge(workload_file)
    assert err.outcome is Outcome.ERROR and "no status poll" in err.message
