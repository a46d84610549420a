"""What a session reads of a started daemon for the oracles: its facts (with the SRS its API
reports loaded) and its process as the kernel counts it. A mixin of
:class:`proofdiff.core.session.Session`, the ``Evidence`` methods ``facts`` and ``look``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from proofdiff.runtime.daemon import LaunchError

if TYPE_CHECKING:
    from proofdiff.model.runs import DaemonFacts
    from proofdiff.runtime.daemon import Daemon
    from proofdiff.runtime.process_probe import Reading

__all__ = ["DaemonReadings", "daemon_facts"]


class _Session(Protocol):
    """What the readings use of the session they are mixed into."""

    def daemon(self, profile: str) -> Daemon: ...


def _loaded_srs(address: str) -> tuple[str, ...]:
    # gRPC's stack is imported by the first call, not with the session
    from proofdiff.drivers.cuzk_client import loaded_srs

    return loaded_srs(address)


def daemon_facts(daemon: Daemon, settle_s: float = 0.0) -> DaemonFacts:
    """``daemon``'s facts, with the SRS its API reports loaded (none asked of a daemon without
    an address); ``settle_s``: seconds to let its state settle first."""
    return daemon.facts(settle_s, srs_loaded=_loaded_srs(daemon.address) if daemon.address
                        else ())


class DaemonReadings:
    """The readings, each made when an oracle asks."""

    def facts(self: _Session, profile: str) -> DaemonFacts | None:
        """See :class:`proofdiff.oracles.evidence.Evidence`."""
        try:
            return daemon_facts(self.daemon(profile))
        except LaunchError:
            return None

    def look(self: _Session, profile: str) -> Reading | None:
        """See :class:`proofdiff.oracles.evidence.Evidence`."""
        try:
            probe = self.daemon(profile).process
        except LaunchError:
            return None
        return probe.read() if probe is not None else None
