"""A Ctrl-C at any moment is never a normal result: the executors on a real Dask
``LocalCluster`` (worker processes on 127.0.0.1) and on threads, each given a real SIGINT
while units wait to start, while they run, and while a unit that ignores it comes back
whole; the interrupt reaching the threads of a flow (its hang guard); a Ctrl-C while a report
is written held until it is whole. The commands' whole paths (a run on a worker, a gate whose
daemon wedges) are tests/e2e/test_fleet.py's and tests/e2e/test_gate.py's."""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from proofdiff.drivers.hang_guard import INTERRUPTED, Guard
from proofdiff.fleet.executor import ThreadExecutor, UnitsInterrupted, open_executor
from proofdiff.model import interrupt
from proofdiff.model.run_options import RunOptions

pytestmark = pytest.mark.unit


@pytest.fixture(scope="module")
def cluster() -> Iterator[str]:
    """A LocalCluster: 2 worker processes, 1 thread each, on 127.0.0.1; its address."""
    from distributed import LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                      dashboard_address=None, worker_dashboard_address=None,
                      scheduler_kwargs={"dashboard_address": "127.0.0.1:0"}) as lc:
        yield str(lc.scheduler_address)


def _ctrl_c_once(*markers: Path, timeout_s: float = 120.0) -> threading.Thread:
    """A thread that sends this process a SIGINT (a terminal's Ctrl-C) once every marker
    file exists (the units it waits for have started)."""
    def send() -> None:
        deadline = time.monotonic() + timeout_s
        while not all(m.exists() for m in markers):
            if time.monotonic() > deadline:
                return  # the test's assertion says what did not start
            time.sleep(0.02)
        os.kill(os.getpid(), signal.SIGINT)

    t = threading.Thread(target=send, daemon=True)
    t.start()
    return t


def test_a_ctrl_c_stops_the_running_units_cancels_the_queued_and_is_raised(
        cluster: str, tmp_path: Path) -> None:
    def waits_for_its_interrupt(marker: str) -> str:  # nested: pickled by value
        from proofdiff.model import interrupt as stop  # as a flow's waits poll it

        Path(marker).touch()
        deadline = time.monotonic() + 60
        while not stop.requested():
            if time.monotonic() > deadline:
                return "never told to stop"
            time.sleep(0.02)
        return "stopped"

    markers = [tmp_path / f"started-{i}" for i in range(3)]
    with open_executor(RunOptions(cluster=cluster, insecure=True), connect_timeout_s=60) as ex:
        _ctrl_c_once(markers[0], markers[1])  # both workers busy, the third unit queued
        t0 = time.monotonic()
        with pytest.raises(UnitsInterrupted) as err:
            ex.map_placed(waits_for_its_interrupt, [str(m) for m in markers], name="waits")
    got = err.value.got
    assert [g[1] if g else None for g in got] == ["stopped", "stopped", None], got
    assert {g[0] for g in got[:2] if g} and not markers[2].exists()
    assert time.monotonic() - t0 < 60


def test_a_unit_that_comes_back_whole_after_a_ctrl_c_is_still_no_normal_result(
        cluster: str, tmp_path: Path) -> None:
    # the unit ends normally while the interrupt is on its way: it must not come back as a
    # normal result, nor a run so interrupted exit 0
    def ends_whatever(marker: str) -> str:  # ignores any interrupt, ends a moment later
        Path(marker).touch()
        time.sleep(1.0)
        return "ended whole"

    marker = tmp_path / "started"
    with open_executor(RunOptions(cluster=cluster, insecure=True), connect_timeout_s=60) as ex:
        _ctrl_c_once(marker)
        with pytest.raises(UnitsInterrupted) as err:
            ex.map_placed(ends_whatever, [str(marker)], name="whole")
        workers = ex.workers()
    [(where, value)] = [g for g in err.value.got if g is not None]
    assert value == "ended whole" and where in workers


def test_threads_stop_at_a_ctrl_c_a_unit_swallowed(tmp_path: Path) -> None:
    ran: list[str] = []

    def swallows(name: str) -> str:  # a unit that turns a Ctrl-C into a result of its own
        ran.append(name)
        if name == "first":
            try:
                os.kill(os.getpid(), signal.SIGINT)
                time.sleep(5)
            except KeyboardInterrupt:
                return "interrupted, said as a result"
        return "ran after the Ctrl-C"

    with interrupt.installed():
        with pytest.raises(UnitsInterrupted) as err:
            ThreadExecutor(1).map_placed(swallows, ["first", "second"], name="u")
    assert err.value.got == [("local", "interrupted, said as a result"), None]
    assert ran == ["first"]  # nothing after the Ctrl-C
    assert not interrupt.requested()  # the next command in this process starts clean


def test_the_interrupt_reaches_a_flows_guard_on_any_thread() -> None:
    stop = threading.Event()
    with interrupt.unit_scope(stop):
        guard = Guard(deadline_s=600.0)  # made in the unit's work: keeps its interrupt
    seen: list[bool] = []
    waiter = threading.Thread(target=lambda: seen.append(guard.wait(30) or guard.expired()))
    waiter.start()
    assert not guard.expired()
    stop.set()
    assert guard.expired() and guard.interrupted and guard.reason == INTERRUPTED
    waiter.join(timeout=30)
    assert seen == [True]


def test_a_ctrl_c_while_a_report_is_written_is_held_until_it_is_whole(tmp_path: Path) -> None:
    written: list[str] = []
    with interrupt.installed():
        with pytest.raises(KeyboardInterrupt):
            with interrupt.deferred():
                os.kill(os.getpid(), signal.SIGINT)
                time.sleep(0.2)  # a signal is handled between two bytecodes: long since
                written.append("summary.json")
                written.append("index.html")
        assert interrupt.received()
    assert written == ["summary.json", "index.html"]


def test_a_ctrl_c_before_any_unit_started_ends_the_run_with_130_and_its_report(
        tmp_path: Path) -> None:
    # `run --cluster` while it joins a "scheduler" that accepts the connection and never
    # answers: the Ctrl-C comes before any unit is placed. It must not escape as an uncaught
    # KeyboardInterrupt (no report, and no 130)
    import json
    import socket
    import subprocess
    import sys

    rid = "ctrl-c-joining"
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(1)
        silent.settimeout(120)
        port = silent.getsockname()[1]
        proc = subprocess.Popen(
            [sys.executable, "-m", "proofdiff", "run", "--insecure", "--cluster", f"tcp://127.0.0.1:{port}",
             "--report-dir", str(tmp_path), "--run-id", rid],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        try:
            conn, _ = silent.accept()  # it is joining now
            with conn:
                proc.send_signal(signal.SIGINT)
                out, _ = proc.communicate(timeout=120)
        finally:
            if proc.poll() is None:
                proc.kill()
    assert proc.returncode == 130, out
    doc = json.loads((tmp_path / rid / "summary.json").read_text())
    assert doc["verdict"] == "INTERRUPTED" and doc["exit_code"] == 130, doc
