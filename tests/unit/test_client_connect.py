"""The gRPC client against a daemon slow to take a new connection, as on a loaded host: a call
waits for the connection within its own deadline instead of failing UNAVAILABLE.

A real gRPC server (grpcio, the cuzk service's GetStatus) behind a TCP relay that holds each new
connection for a while before joining it to the server, so that the server's first HTTP/2
frame (its SETTINGS) reaches the client that much later. Seen on three fleet hosts sharing 2
cores: "connection attempt timed out before receiving SETTINGS frame" when the client gave each
attempt 100 ms (``grpc.min_reconnect_backoff_ms`` is gRPC core's connect timeout)."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from proofdiff.drivers.cuzk_client import ProverClient, StatusProbe
from proofdiff.proto import cuzk_pb2, cuzk_pb2_grpc

from tests.unit.grpc_server import serving

#: How long the relay holds a new connection, s: far past 100 ms, far under the call's deadline.
HOLD_S = 0.6


class _Status(cuzk_pb2_grpc.ProvingEngineServicer):  # type: ignore[misc]
    def GetStatus(self, request: Any, context: Any) -> Any:  # noqa: N802 - the service's name
        return cuzk_pb2.GetStatusResponse(total_proofs_completed=7)


def _pump(src: socket.socket, dst: socket.socket) -> None:
    try:
        while data := src.recv(65536):
            dst.sendall(data)
    except OSError:
        pass
    finally:
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


@pytest.fixture
def slow_daemon() -> Iterator[str]:
    """``127.0.0.1:PORT`` of a relay that joins each connection to the server after HOLD_S."""
    with serving(_Status()) as port:
        yield from _relayed(port)


def _relayed(port: int) -> Iterator[str]:
    relay = socket.create_server(("127.0.0.1", 0))

    def serve() -> None:
        while True:
            try:
                conn, _ = relay.accept()
            except OSError:
                return
            time.sleep(HOLD_S)
            up = socket.create_connection(("127.0.0.1", port), timeout=5)
            up.settimeout(None)
            for a, b in ((conn, up), (up, conn)):
                threading.Thread(target=_pump, args=(a, b), daemon=True).start()

    threading.Thread(target=serve, daemon=True).start()
    try:
        yield f"127.0.0.1:{relay.getsockname()[1]}"
    finally:
        relay.close()


def test_a_call_waits_for_a_connection_slower_than_100_ms(slow_daemon: str) -> None:
    t0 = time.monotonic()
    with ProverClient(slow_daemon) as client:
        status = client.get_status(timeout_s=10)
    assert status.total_proofs_completed == 7
    assert time.monotonic() - t0 >= HOLD_S  # it did wait for the held connection


def test_a_daemon_that_binds_after_the_first_look_answers_the_very_next_one() -> None:
    """The readiness probe: a look at a port that refuses connections leaves the gRPC
    channel alone, so the first look after the daemon binds gets its answer, not a
    reconnect backoff (gRPC core's >= 100 ms) to wait out while the daemon is ready."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # free now: nothing listens there until `serving`
    probe = StatusProbe(f"127.0.0.1:{port}")
    try:
        said = probe.ask(0.5)
        assert said is not None and said.startswith("UNAVAILABLE"), said
        with serving(_Status(), port=port):
            assert probe.ask(0.5) is None
    finally:
        probe.close()
