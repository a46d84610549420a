"""What the bench tool is given and how it schedules: cuzk-bench's ``-t`` type of a proof kind,
the input file of a job (``--c1`` / ``--vanilla``) and where the tool finds it, and the start
times its ``-j`` workers give a batch (cuzk-bench's flags: curio e0294b0f
``extern/cuzk/cuzk-bench``)."""

from __future__ import annotations

import base64
import json
from collections.abc import Sequence

from proofdiff.model.errors import ProofdiffError
from proofdiff.model.workload import POREP, WorkloadJob

__all__ = ["IN_DIR", "BenchToolError", "bench_input", "bench_type", "input_path", "starts"]

#: Where a tool run finds its input files.
IN_DIR = "/in"
_TYPES = {"POREP_SEAL_COMMIT": "porep", "WINDOW_POST_PARTITION": "wpost",
          "SNAP_DEALS_UPDATE": "snap", "WINNING_POST": "winning"}

class BenchToolError(ProofdiffError):
    """The bench tool cannot be run at all (missing in the image, no network path to the
    daemon, docker refused it); the message names the profile and the fix."""


def bench_type(proof_kind: str) -> str:
    """cuzk-bench's ``-t`` value for a ``ProofKind`` name (``POREP_SEAL_COMMIT`` -> ``porep``).

    Raises:
        BenchToolError: a kind cuzk-bench has no type for.
    """
    try:
        return _TYPES[proof_kind]
    except KeyError:
        raise BenchToolError(f"cuzk-bench has no -t type for proof kind {proof_kind!r}; "
                             f"known: {', '.join(_TYPES)}",
                             fix="run this workload with driver 'grpc'") from None


def bench_input(job: WorkloadJob, partition: int | None = None) -> bytes:
    """The file the tool reads: PoRep, the C1 envelope itself (``--c1``); WindowPoSt, a JSON
    array of base64 vanilla proofs (``--vanilla``, as cuzk-bench reads it), every sector's or
    one ``partition``'s."""
    if job.shape.proof_kind == POREP:
        return job.c1
    vanilla = job.vanilla_proofs if partition is None else job.partition_inputs()[partition][1]
    return json.dumps([base64.b64encode(v).decode("ascii") for v in vanilla]).encode("utf-8")


def input_path(job: WorkloadJob, partition: int | None = None) -> str:
    """Where the tool finds :func:`bench_input` (``/in/<job>.c1``, ``/in/<job>[.p<k>].vanilla``)."""
    if job.shape.proof_kind == POREP:
        return f"{IN_DIR}/{_safe(job.name)}.c1"
    return f"{IN_DIR}/{_safe(job.name)}{'' if partition is None else f'.p{partition}'}.vanilla"


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name)


def starts(walls_ms: Sequence[float], workers: int) -> list[float]:
    """Start offsets (ms) of proofs run in index order by ``workers`` workers, each proof taken
    by the first worker to be free: how cuzk-bench's ``-j`` schedules a batch."""
    free = [0.0] * max(1, workers)
    out = []
    for w in walls_ms:
        i = min(range(len(free)), key=free.__getitem__)
        out.append(free[i])
        free[i] += w
    return out
