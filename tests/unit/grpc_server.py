"""A real gRPC server (grpcio) of the cuzk service on 127.0.0.1, for the client's tests: the
servicer answers as the test needs; the port is the kernel's pick."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent import futures
from contextlib import contextmanager
from typing import Any

import grpc

from proofdiff.proto import cuzk_pb2_grpc


@contextmanager
def serving(servicer: Any, workers: int = 2, port: int = 0) -> Iterator[int]:
    """Serve ``servicer`` (a ``ProvingEngineServicer``) on 127.0.0.1 (``port``; 0: the
    kernel's pick); yields its port, then stops the server."""
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=workers))
    cuzk_pb2_grpc.add_ProvingEngineServicer_to_server(servicer, server)  # type: ignore[no-untyped-call]
    port = server.add_insecure_port(f"127.0.0.1:{port}")
    server.start()
    try:
        yield port
    finally:
        server.stop(grace=None)
