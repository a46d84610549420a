"""The root of every error proofdiff raises on purpose: what was seen, and the fix.

Every error of ours is a :class:`ProofdiffError`: a workflow that meets one reports it (a
verdict ERROR, exit 3) with its ``fix``. Anything else (a ``ValueError`` or ``KeyError`` from a
bug of ours, a library's error nobody turned into one of ours) is unexpected: a workflow that
writes a report records it as an error with its traceback (:func:`unexpected`) and the
command exits 3 (ERROR), never 1, which means DIVERGED, FAIL or NEW.
"""

from __future__ import annotations

import traceback

__all__ = ["ProofdiffError", "unexpected"]


def unexpected(exc: BaseException, where: str) -> str:
    """The error text of an unexpected exception ``exc`` met while ``where`` (``"the
    differential"``): what it is, that it is a bug of proofdiff's to report, and its traceback
    (the report and the console show it whole)."""
    trace = "".join(traceback.format_exception(exc)).rstrip()
    return (f"{where} ended with an unexpected error, {type(exc).__name__}: {exc} (a bug of "
            "proofdiff's, or an error it does not yet explain: report it with this traceback)"
            f"\n{trace}")


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
