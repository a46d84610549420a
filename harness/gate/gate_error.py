"""The gate's one error: it cannot run (an image missing, no Docker, a verifier that disagrees)."""

from __future__ import annotations

from proofdiff.model.errors import ProofdiffError

__all__ = ["GateError"]


class GateError(ProofdiffError):
    """The gate cannot run (an image missing, no Docker): names the cause and the fix."""
