"""Request id schemes (the profile key ``job_ids``).

- ``uuid``: a fresh UUID v4 per job (what a benchmark does), made by the driver as it sends.
- ``curio``: deterministic ids as Curio builds them: ``wpost-<miner>-<first sector id>`` for
  WindowPoSt, ``porep-<miner>-<sector>`` for PoRep. Jobs over the same sectors (retries,
  several deadlines' jobs) get the SAME id, as in production; cuzk does not deduplicate ids.
- ``fixed``: ``proofdiff-fixed`` for every job (worst case of collisions).
"""

from __future__ import annotations

from collections.abc import Sequence

from harness.model.profile import JOB_ID_SCHEMES

__all__ = ["FIXED_ID", "JobIdError", "make_job_id"]

FIXED_ID = "proofdiff-fixed"

_CURIO_PREFIX = {
    "WINDOW_POST_PARTITION": "wpost",
    "WINNING_POST": "winning",
    "POREP_SEAL_COMMIT": "porep",
    "SNAP_DEALS_UPDATE": "snap",
}


class JobIdError(ValueError):
    """Unknown scheme, or a curio id asked for without the sector ids it needs."""


def make_job_id(scheme: str, *, proof_kind: str, miner_id: int,
                sector_ids: Sequence[int]) -> str | None:
    """Make the request id for one job.

    Args:
        scheme: ``uuid`` | ``curio`` | ``fixed``.
        proof_kind: ``ProofKind`` name, e.g. ``WINDOW_POST_PARTITION``.
        miner_id: the miner id (curio only).
        sector_ids: the job's sector numbers (curio uses the first).

    Returns:
        The id, or ``None`` for ``uuid`` (the driver makes one as it sends).

    Raises:
        JobIdError: unknown scheme (lists the valid ones), unknown proof kind or no sectors for
            ``curio``.
    """
    if scheme == "uuid":
        return None  # the driver makes a fresh UUID v4 per job
    if scheme == "fixed":
        return FIXED_ID
    if scheme == "curio":
        prefix = _CURIO_PREFIX.get(proof_kind)
        if prefix is None:
            raise JobIdError(f"curio job ids: unknown proof kind {proof_kind!r}; "
                             f"known: {', '.join(_CURIO_PREFIX)}")
        if not sector_ids:
            raise JobIdError(f"curio job ids need at least one sector id (proof kind "
                             f"{proof_kind}, miner {miner_id}); the workload job has none")
        return f"{prefix}-{miner_id}-{sector_ids[0]}"
    raise JobIdError(f"unknown job id scheme {scheme!r}; valid: {', '.join(JOB_ID_SCHEMES)}")
