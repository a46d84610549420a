#!/usr/bin/env bash
# Regenerates the Python gRPC stubs in harness/proto/ from targets/refprover/proto/cuzk.proto.
# Usage: bash harness/proto/regen.sh   (from anywhere; needs .venv with grpcio-tools)
# The generated cuzk_pb2_grpc.py imports `cuzk_pb2` as a top-level module; it is rewritten to a
# package-relative import so that `proofdiff.proto` works without touching sys.path.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
py="${PYTHON:-$root/.venv/bin/python}"
"$py" -m grpc_tools.protoc \
  -I "$root/targets/refprover/proto" \
  --python_out="$here" --pyi_out="$here" --grpc_python_out="$here" \
  "$root/targets/refprover/proto/cuzk.proto"
sed -i 's/^import cuzk_pb2 as cuzk__pb2$/from . import cuzk_pb2 as cuzk__pb2/' "$here/cuzk_pb2_grpc.py"
grep -q '^from . import cuzk_pb2 as cuzk__pb2$' "$here/cuzk_pb2_grpc.py" || {
  echo "regen.sh: could not rewrite the import in cuzk_pb2_grpc.py; fix the sed pattern" >&2; exit 1; }
echo "regenerated $here/cuzk_pb2.py, cuzk_pb2.pyi, cuzk_pb2_grpc.py"
