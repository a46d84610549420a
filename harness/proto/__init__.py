"""Generated gRPC stubs for cuzk.v1.ProvingEngine (from targets/refprover/proto/cuzk.proto).

Regenerate with ``bash harness/proto/regen.sh``; never edit the generated files by hand.
"""

from . import cuzk_pb2, cuzk_pb2_grpc

__all__ = ["cuzk_pb2", "cuzk_pb2_grpc"]
