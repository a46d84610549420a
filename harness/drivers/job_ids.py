"""Request id schemes (the profile key ``job_ids``).

- ``uuid``: a fresh UUID v4 per job (what a benchmark does), made by the driver as it sends.
- ``curio``: deterministic ids as Curio builds them (curio e0294b0f ``lib/ffi/cuzk_funcs.go``):
  ``porep-<miner>-<sector>`` for PoRep (``fmt.Sprintf("porep-%d-%d", ...)``), so a retried
  sector reuses its id, as in production, and cuzk does not deduplicate ids; and
  ``wdpost-<miner>-<partition>-<randomness[:8]>`` for WindowPoSt
  (``fmt.Sprintf("wdpost-%d-%d-%d", minerID, partitionIdx, randomness[:8])``: Go's ``%d`` of
  a byte slice, ``[219 155 147 89 151 100 219 25]``), so only the same partition with the same
  randomness collides.
- ``fixed``: ``proofdiff-fixed`` for every job (worst case of collisions).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from proofdiff.model.errors import ProofdiffError
from proofdiff.model.choices import JobIdScheme

__all__ = ["FIXED_ID", "JobIdError", "make_job_id", "partition_request_id"]

FIXED_ID = "proofdiff-fixed"

_CURIO_PREFIX = {
    "WINDOW_POST_PARTITION": "wdpost",
    "WINNING_POST": "winning",
    "POREP_SEAL_COMMIT": "porep",
    "SNAP_DEALS_UPDATE": "snap",
}


class JobIdError(ProofdiffError):
    """Unknown scheme, or a curio id asked for without the sector ids it needs."""


def _go_bytes(data: bytes) -> str:
    """Go's ``fmt.Sprintf("%d", []byte)``: ``[1 2 3]``."""
    return "[" + " ".join(str(b) for b in data) + "]"


def make_job_id(scheme: JobIdScheme | str, *, proof_kind: str, miner_id: int, sector_ids: Sequence[int],
                randomness: bytes = b"", partition: int = 0) -> str | None:
    """Make the request id for one job.

    Args:
        scheme: a :class:`~proofdiff.model.choices.JobIdScheme` (or its value).
        proof_kind: ``ProofKind`` name, e.g. ``WINDOW_POST_PARTITION``.
        miner_id: the miner id (curio only).
        sector_ids: the job's sector numbers (curio's PoRep id uses the first).
        randomness, partition: a WindowPoSt job's randomness (curio's id uses its first 8
            bytes) and partition index (the first partition of a job sent as one request).

    Returns:
        The id, or ``None`` for ``uuid`` (the driver makes one as it sends).

    Raises:
        JobIdError: unknown scheme (lists the valid ones), unknown proof kind or no sectors for
            ``curio``.
    """
    try:
        scheme = JobIdScheme(scheme)
    except ValueError:
        raise JobIdError(f"unknown job id scheme {scheme!r}",
                         fix=f"set job_ids to a valid scheme: "
                             f"{', '.join(s.value for s in JobIdScheme)}") from None
    if scheme is JobIdScheme.UUID:
        return None  # the driver makes a fresh UUID v4 per job
    if scheme is JobIdScheme.FIXED:
        return FIXED_ID
    if scheme is JobIdScheme.CURIO:
        prefix = _CURIO_PREFIX.get(proof_kind)
        if prefix is None:
            raise JobIdError(f"curio job ids: unknown proof kind {proof_kind!r}; "
                             f"known: {', '.join(_CURIO_PREFIX)}",
                             fix="set the profile's job_ids to 'uuid' or 'fixed' for this workload")
        if not sector_ids:
            raise JobIdError(f"curio job ids need at least one sector id (proof kind "
                             f"{proof_kind}, miner {miner_id}); the workload job has none",
                             fix="regenerate the workload (proofdiff build), or set the "
                                 "profile's job_ids to 'uuid'")
        if proof_kind == "WINDOW_POST_PARTITION":
            return f"{prefix}-{miner_id}-{partition}-{_go_bytes(randomness[:8])}"
        return f"{prefix}-{miner_id}-{sector_ids[0]}"
    raise AssertionError(scheme)  # every member is handled above


_WDPOST = re.compile(r"wdpost-(\d+)-\d+-(\[[\d ]*\])")


def partition_request_id(request_id: str, partition: int) -> str:
    """The id of one partition's request of a job sent one partition per request (as curio
    sends WindowPoSt to cuzk): a curio ``wdpost-`` id with that partition index, else
    ``<request_id>-p<k>``."""
    m = _WDPOST.fullmatch(request_id)
    if m:
        return f"wdpost-{m.group(1)}-{partition}-{m.group(2)}"
    return f"{request_id}-p{partition}"
