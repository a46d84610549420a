"""gRPC client for ``cuzk.v1.ProvingEngine`` with a deadline on every call.

Plaintext HTTP/2 (as cuzk serves it), messages up to 128 MiB. Every method takes ``timeout_s``;
a transport failure raises :class:`ClientError` carrying the gRPC code, the address and a hint.
"""

from __future__ import annotations

import socket
import time
from types import TracebackType
from typing import Any

import grpc

from proofdiff.model.errors import ProofdiffError
from proofdiff.proto import cuzk_pb2, cuzk_pb2_grpc

__all__ = ["MAX_MESSAGE_BYTES", "ClientError", "ProverClient", "StatusProbe", "loaded_srs",
           "status_probe"]

#: cuzk's server limit; the client matches it both ways.
MAX_MESSAGE_BYTES = 128 * 1024 * 1024

#: How much earlier than the call's deadline a server may end it, s: ``grpc-timeout`` is sent
#: in whole units (gRPC's HTTP/2 protocol: at most 8 digits), so the server's deadline can
#: be a little short of the client's.
_DEADLINE_SLACK_S = 0.05

_HINTS = {
    "UNAVAILABLE": "is the daemon running and listening there? check the container log "
                   "(docker logs) and the profile's ports/daemon.listen",
    "DEADLINE_EXCEEDED": "the daemon did not answer in time; raise the profile's timeout_s or "
                         "look for a stuck queue in the container log",
    "NOT_FOUND": "the daemon has no job with that id (already claimed, or never submitted)",
    "UNIMPLEMENTED": "the daemon does not implement this RPC; is the image a cuzk-compatible "
                     "prover (check --image)?",
    "RESOURCE_EXHAUSTED": "a message exceeded a size limit (128 MiB)",
}


class ClientError(ProofdiffError):
    """A gRPC call failed at the transport level.

    Attributes:
        code: gRPC status code name (``UNAVAILABLE``, ``DEADLINE_EXCEEDED``, ...).
        details: the server's or channel's details text.
        address: ``host:port`` called. method: RPC name.
    """

    def __init__(self, method: str, address: str, code: str, details: str) -> None:
        self.method, self.address, self.code, self.details = method, address, code, details
        super().__init__(f"{method} on {address} failed: {code}: {details}",
                         fix=_HINTS.get(code, "see the daemon's log"))


class ProverClient:
    """A client for one daemon address (``host:port``); use as a context manager or ``close()``.

    Args:
        address: ``127.0.0.1:PORT`` (no scheme).
        default_timeout_s: deadline for calls that do not pass one (default 10 s).
    """

    def __init__(self, address: str, default_timeout_s: float = 10.0) -> None:
        self.address = address
        self.default_timeout_s = default_timeout_s
        self._channel = grpc.insecure_channel(address, options=[
            ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
            ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
            # Fast reconnects while polling a starting daemon (default backoff starts at 1 s,
            # which would quantise start-to-ready time; gRPC core clamps both to >= 100 ms).
            # Never grpc.min_reconnect_backoff_ms: gRPC core reads it as the *connect timeout*
            # of every attempt (subchannel.cc ParseArgsForBackoffValues: min_connect_timeout,
            # default 20 s), so a low one gives each connection 100 ms to get the daemon's
            # SETTINGS frame, and a loaded host fails calls with UNAVAILABLE "connection
            # attempt timed out before receiving SETTINGS frame".
            ("grpc.initial_reconnect_backoff_ms", 20),
            ("grpc.max_reconnect_backoff_ms", 100),
        ])
        self._stub = cuzk_pb2_grpc.ProvingEngineStub(self._channel)  # type: ignore[no-untyped-call]

    def _call(self, method: str, request: object, timeout_s: float | None) -> object:
        fn = getattr(self._stub, method)
        timeout = self.default_timeout_s if timeout_s is None else timeout_s
        t0 = time.monotonic()
        try:
            return fn(request, timeout=timeout)
        except grpc.RpcError as exc:
            raise self.rpc_error(method, exc, elapsed_s=time.monotonic() - t0,
                                 timeout_s=timeout) from None

    def prove(self, request: cuzk_pb2.SubmitProofRequest,
              timeout_s: float | None = None) -> cuzk_pb2.AwaitProofResponse:
        """Submit and wait for one proof (``Prove``); returns the ``AwaitProofResponse``.

        Raises:
            ClientError: transport failure or deadline (``code='DEADLINE_EXCEEDED'``).
        """
        resp = self._call("Prove", cuzk_pb2.ProveRequest(submit=request), timeout_s)
        assert isinstance(resp, cuzk_pb2.ProveResponse)
        return resp.result

    def prove_future(self, request: cuzk_pb2.SubmitProofRequest, timeout_s: float) -> Any:
        """Start ``Prove`` without blocking; returns the grpc future (``result(timeout=...)``
        raises ``grpc.RpcError``; :func:`rpc_error` turns it into a :class:`ClientError`;
        ``cancel()`` gives the call up). The call's deadline is ``timeout_s`` seconds."""
        return self._stub.Prove.future(cuzk_pb2.ProveRequest(submit=request), timeout=timeout_s)

    def rpc_error(self, method: str, exc: grpc.RpcError, *, elapsed_s: float | None = None,
                  timeout_s: float | None = None) -> ClientError:
        """The :class:`ClientError` for a failed call of ``method``; given the call's deadline
        ``timeout_s`` and the seconds ``elapsed_s`` it ran, a server's CANCELLED at or past that
        deadline is the deadline (``DEADLINE_EXCEEDED``), as the client's own timer would say.

        Why: a tonic server (cuzk's, refprover's) enforces the call's ``grpc-timeout`` header
        itself and answers ``CANCELLED: Timeout expired`` when it passes (tonic's server timeout
        layer), and that answer can reach the client before its own deadline fires, so the
        same missed deadline can come back as one code or the other (the oracle-bounds
        records of docs/measurements.md count how often)."""
        code = exc.code().name if hasattr(exc, "code") and exc.code() else "UNKNOWN"
        details = (exc.details() if hasattr(exc, "details") else str(exc)) or ""
        if (code == "CANCELLED" and elapsed_s is not None and timeout_s is not None
                and elapsed_s >= timeout_s - _DEADLINE_SLACK_S):
            code = "DEADLINE_EXCEEDED"
            details = (f"{details} (the server's answer when the call's {timeout_s:g} s deadline "
                       f"passed, after {elapsed_s:.2f} s)")
        return ClientError(method, self.address, code, details)

    def submit(self, request: cuzk_pb2.SubmitProofRequest,
               timeout_s: float | None = None) -> cuzk_pb2.SubmitProofResponse:
        """``SubmitProof``: queue a job; returns its job id and queue position."""
        resp = self._call("SubmitProof", request, timeout_s)
        assert isinstance(resp, cuzk_pb2.SubmitProofResponse)
        return resp

    def await_proof(self, job_id: str, timeout_s: float | None = None,
                    server_timeout_ms: int = 0) -> cuzk_pb2.AwaitProofResponse:
        """``AwaitProof``: block until the job ends (server-side ``timeout_ms``, 0 = none; the
        client deadline ``timeout_s`` always applies). Unknown id: ``ClientError`` NOT_FOUND."""
        req = cuzk_pb2.AwaitProofRequest(job_id=job_id, timeout_ms=server_timeout_ms)
        resp = self._call("AwaitProof", req, timeout_s)
        assert isinstance(resp, cuzk_pb2.AwaitProofResponse)
        return resp

    def get_status(self, timeout_s: float | None = None) -> cuzk_pb2.GetStatusResponse:
        """``GetStatus``: GPUs, SRS, queues and counters."""
        resp = self._call("GetStatus", cuzk_pb2.GetStatusRequest(), timeout_s)
        assert isinstance(resp, cuzk_pb2.GetStatusResponse)
        return resp

    def get_metrics(self, timeout_s: float | None = None) -> str:
        """``GetMetrics``: the Prometheus text exposition."""
        resp = self._call("GetMetrics", cuzk_pb2.GetMetricsRequest(), timeout_s)
        assert isinstance(resp, cuzk_pb2.GetMetricsResponse)
        return resp.prometheus_text

    def close(self) -> None:
        """Close the channel (idempotent)."""
        self._channel.close()

    def __enter__(self) -> ProverClient:
        return self

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()


class StatusProbe:
    """A daemon's readiness as cuzk defines it: ``GetStatus`` answers
    (:class:`proofdiff.runtime.daemon.ReadyProbe`).

    Until the daemon's port first accepts a TCP connection, each :meth:`ask` only tries that
    connection, and the gRPC channel is left alone: a channel whose first connection is
    refused waits out gRPC core's reconnect backoff (clamped to >= 100 ms) before it tries
    again, so a daemon that binds its port milliseconds after its start would often answer a
    backoff later, on the critical path of every run.
    A port that accepts is not yet an answer (Docker's userland proxy accepts for a container
    whose daemon is not listening yet): only ``GetStatus`` says ready."""

    def __init__(self, address: str) -> None:
        self._client = ProverClient(address)
        host, _, port = address.rpartition(":")
        self._tcp = (host.strip("[]"), int(port)) if port.isdigit() else None

    def ask(self, timeout_s: float) -> str | None:
        """``None`` when ``GetStatus`` answered within ``timeout_s`` seconds, else
        ``CODE: details`` (``UNAVAILABLE: ...`` while the port refuses connections)."""
        if self._tcp is not None:
            try:
                socket.create_connection(self._tcp, timeout=max(0.01, timeout_s)).close()
            except OSError as exc:
                return f"UNAVAILABLE: {self._tcp[0]}:{self._tcp[1]}: {exc.strerror or exc}"
            self._tcp = None  # it accepts: from now on the channel, which connects at once
        try:
            self._client.get_status(timeout_s=timeout_s)
        except ClientError as exc:
            return f"{exc.code}: {exc.details}"
        return None

    def close(self) -> None:
        """Close the channel."""
        self._client.close()


def status_probe(address: str) -> StatusProbe:
    """The readiness probe of a cuzk-compatible daemon at ``address`` (``127.0.0.1:PORT``)."""
    return StatusProbe(address)


def loaded_srs(address: str, timeout_s: float = 5.0) -> tuple[str, ...]:
    """The circuits whose SRS the daemon reports loaded (``GetStatus.srs``); empty when it does
    not answer within ``timeout_s`` seconds (evidence only: never raises)."""
    try:
        with ProverClient(address) as client:
            return tuple(s.circuit_id for s in client.get_status(timeout_s=timeout_s).srs)
    except ClientError:
        return ()
