"""A missed deadline is one code, whoever noticed it first: a tonic server (cuzk's, refprover's)
ends a call whose ``grpc-timeout`` passed with ``CANCELLED: Timeout expired``, which can reach
the client before its own timer says ``DEADLINE_EXCEEDED``; the client reads a CANCELLED at or
past the call's deadline as the deadline, and any earlier one as what it is.

A real gRPC server (grpcio, the cuzk service's GetStatus) answers every call as tonic's timeout
layer does; the failed call's own error is then read at two elapsed times."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import grpc
import pytest

from proofdiff.drivers.cuzk_client import ClientError, ProverClient
from proofdiff.proto import cuzk_pb2, cuzk_pb2_grpc

from tests.unit.grpc_server import serving


class _TimedOut(cuzk_pb2_grpc.ProvingEngineServicer):  # type: ignore[misc]
    def GetStatus(self, request: Any, context: Any) -> Any:  # noqa: N802 - the service's name
        context.abort(grpc.StatusCode.CANCELLED, "Timeout expired")


@pytest.fixture
def timing_out() -> Iterator[str]:
    with serving(_TimedOut()) as port:
        yield f"127.0.0.1:{port}"


def test_a_servers_cancel_is_the_deadline_only_once_the_deadline_passed(timing_out: str) -> None:
    with ProverClient(timing_out) as client:
        # answered at once, long before its 10 s deadline: a cancel, not a deadline
        with pytest.raises(ClientError) as early:
            client.get_status(timeout_s=10)
        assert early.value.code == "CANCELLED" and early.value.details == "Timeout expired"
        # the same answer read at the call's deadline: the deadline, with the server's words
        channel = grpc.insecure_channel(timing_out)
        try:
            with pytest.raises(grpc.RpcError) as raw:
                cuzk_pb2_grpc.ProvingEngineStub(channel).GetStatus(  # type: ignore[no-untyped-call]
                    cuzk_pb2.GetStatusRequest(), timeout=10)
        finally:
            channel.close()
    late = client.rpc_error("Prove", raw.value, elapsed_s=3.0, timeout_s=3.0)
    assert late.code == "DEADLINE_EXCEEDED", late
    assert "Timeout expired" in late.details and "3 s deadline" in late.details, late.details
    assert "raise the profile's timeout_s" in str(late)  # the deadline's fix, not a log hunt
    assert client.rpc_error("Prove", raw.value, elapsed_s=2.0, timeout_s=3.0).code == "CANCELLED"
