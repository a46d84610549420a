"""The vocabularies of proofdiff, each stated once.

* :class:`JobStatus`: what became of one proof request (client side).
* :class:`Outcome`: what one oracle concluded about one profile on one workload.
* :class:`Comparison`: what one statistical timing comparison concluded (the field's terms);
  the timing oracles turn it into an :class:`Outcome`, the gate into a finding.
* :class:`Verdict`: what a whole differential run concluded, with its exit code.
"""

from __future__ import annotations

from enum import StrEnum

__all__ = ["Comparison", "JobStatus", "Outcome", "Verdict"]


class JobStatus(StrEnum):
    """Outcome of one job as the client saw it.

    ``COMPLETED``, ``FAILED``, ``CANCELLED`` and ``TIMEOUT`` are the daemon's own answers
    (``AwaitProofResponse.Status``, docs/design/cuzk-interface.md). The others are the client's:

    * ``ERROR``: a transport error (a gRPC status other than OK), or a driver that could not run
      the job (the bench tool rejected its command line, ...).
    * ``LOST``: no answer within the job's deadline, or the daemon no longer knows the id
      (``NOT_FOUND``).
    * ``STUCK``: the hang guard gave up: proofdiff saw the daemon stalled while the job waited
      (no answer for far longer than its proofs take, no CPU used, or ``GetStatus`` failing:
      ``proofdiff.drivers.stall_rule``), whatever it reported.
    * ``UNKNOWN``: the daemon answered with a status this client does not know.
    """

    COMPLETED = "COMPLETED"
    FAILED = "FAILED"
    CANCELLED = "CANCELLED"
    TIMEOUT = "TIMEOUT"
    ERROR = "ERROR"
    LOST = "LOST"
    STUCK = "STUCK"
    UNKNOWN = "UNKNOWN"


class Outcome(StrEnum):
    """One oracle's conclusion.

    * ``PASS``: the property holds, on evidence (never on empty input).
    * ``FAIL``: the property is violated; the message names what was seen.
    * ``ERROR``: the oracle could not judge: its input is missing or broken (no run, a verifier
      that failed, nothing to look at); the message says why.
    * ``SKIPPED``: not judged, with the reason (the profile's preflight failed, the driver cannot
      express the check, ...). A skipped record never makes a run SAME.
    * ``INCONCLUSIVE``: a statistical check that could neither pass nor fail within its sample
      budget: undecided, so, like a skipped record, it never makes a run SAME.
    """

    PASS = "pass"
    FAIL = "fail"
    ERROR = "error"
    SKIPPED = "skipped"
    INCONCLUSIVE = "inconclusive"

    @property
    def bad(self) -> bool:
        """FAIL or ERROR: the outcome that a divergence or a failed verdict is made of."""
        return self in (Outcome.FAIL, Outcome.ERROR)


class Comparison(StrEnum):
    """One timing comparison's conclusion (:class:`~proofdiff.model.timing_verdict.TimingVerdict`).

    Two-sided, where two configurations are described side by side (the timing suite's bench
    vs prod, :mod:`proofdiff.stats.unpaired`):

    * ``SAME``: the ratio's interval lies inside the effect-size floor: any change is too small
      to matter (an equivalence test).
    * ``DIFFERENT``: significant at this look's level, and beyond the floor.

    One-sided, where a candidate build is judged against its baseline (the gate,
    :mod:`proofdiff.stats.paired`: "is the candidate worse by at least the tolerance?"):

    * ``WITHIN``: the candidate is shown to be less than the tolerated slowdown worse (faster
      or the same included): this metric lets the push through.
    * ``WORSE``: the candidate is shown to be worse than the practical margin: a regression.

    And for both:

    * ``INCONCLUSIVE``: neither, within the sample budget (too few samples, or too much noise
      for the question): never read as SAME or WITHIN.
    """

    SAME = "SAME"
    DIFFERENT = "DIFFERENT"
    WITHIN = "WITHIN"
    WORSE = "WORSE"
    INCONCLUSIVE = "INCONCLUSIVE"


class Verdict(StrEnum):
    """The verdict of a differential run, worst first in :data:`EXIT_CODES` order of checks.

    * ``DIVERGED``: an oracle fails on a profile but passes on the baseline (exit 1).
    * ``ERROR``: something could not be checked (a daemon that did not start, a broken
      verifier, a profile file that does not load) and no divergence explains it (exit 3).
    * ``FAILED``: oracles failed on the baseline and the others alike: no divergence, but the
      image is broken under every profile (exit 2).
    * ``INCOMPLETE``: nothing failed, but a selected check was skipped, left undecided
      (INCONCLUSIVE) or gave no outcome (exit 2): never SAME.
    * ``SAME``: every selected check of every selected profile and workload passed (exit 0).
    * ``INTERRUPTED``: the run was interrupted; what was done is reported (exit 130).
    """

    SAME = "SAME"
    DIVERGED = "DIVERGED"
    FAILED = "FAILED"
    INCOMPLETE = "INCOMPLETE"
    ERROR = "ERROR"
    INTERRUPTED = "INTERRUPTED"

    @property
    def exit_code(self) -> int:
        """The CLI's exit code for this verdict (docs/reference/exit-codes.md)."""
        return EXIT_CODES[self]


EXIT_CODES: dict[Verdict, int] = {
    Verdict.SAME: 0, Verdict.DIVERGED: 1, Verdict.FAILED: 2, Verdict.INCOMPLETE: 2,
    Verdict.ERROR: 3, Verdict.INTERRUPTED: 130,
}
