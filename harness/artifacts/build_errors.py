"""The one exception the build raises, and the record of what each step did."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal
from proofdiff.model.errors import ProofdiffError


class BuildError(ProofdiffError):
    """A build step failed.

    Attributes:
        step: the step that failed (``docker``, ``binaries``, ``rootfs``, ``image``, ``params``,
            ``workloads``).
        cause: what was observed: the command, its exit code and the last lines of its output.
        fix: what to do about it, as an exact command where there is one.
    """

    def __init__(self, step: str, cause: str, fix: str) -> None:
        self.step = step
        super().__init__(f"build step {step!r} failed: {cause}", fix=fix)
        self.cause = cause


@dataclass(frozen=True)
class StepReport:
    """What one build step did.

    Attributes:
        step: the step name (see BuildError.step).
        action: ``built`` when the step produced something new, ``reused`` when a cached result
            with the same content key was found, ``given`` for binaries built elsewhere.
        elapsed_s: wall time of the step in seconds, cache checks included.
        detail: a short human-readable note (tag, path, size).
    """

    step: str
    action: Literal["built", "reused", "given"]
    elapsed_s: float
    detail: str
