"""The root of every error proofdiff raises on purpose: what was seen, and the fix.

Every error of ours is a :class:`ProofdiffError`: a workflow that meets one reports it (a
verdict ERROR, exit 3) with its ``fix``; anything else (a ``ValueError`` or ``KeyError`` from a
bug of ours) is a programming error and propagates with its traceback.
"""

from __future__ import annotations

__all__ = ["ProofdiffError"]


class ProofdiffError(Exception):
    """An error that names its cause and its fix.

    Attributes:
        cause: what was observed (counts, ``name=value``, the profile, the file and line).
        fix: what to do about it, as an exact command or key where there is one ('' when the
            cause says it all). ``str()`` is the cause, then ``fix: ...`` on its own line.
    """

    def __init__(self, cause: str, *, fix: str = "") -> None:
        self.cause, self.fix = cause, fix
        super().__init__(f"{cause}\n  fix: {fix}" if fix else cause)
