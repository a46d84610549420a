"""A run's own Docker network, for the containers of profiles whose ``network`` is ``bridge``
(the default): they reach each other (the bench tool its daemon) and this machine reaches the
ports they publish on 127.0.0.1, but nothing they send leaves for an outside address.

It is a bridge network with IP masquerading off (the bridge driver's
``com.docker.network.bridge.enable_ip_masquerade=false``): Docker still sets up its published
ports, but what a container sends to an address beyond this machine leaves without the
source NAT that replies need, so no connection outward completes. An ``internal`` network
would drop that traffic outright, but Docker publishes no port from one (measured on this
engine: Docker 20.10), and the daemon's published ports are how proofdiff reaches it. Neither
kind keeps a container from this machine's own addresses: a service here that listens on all
addresses is reachable from it (docs/design/security.md).

The network is made on first use (one per :class:`RunNetwork`, that is per run), carries the
reaper's labels (``proofdiff.run``, ``proofdiff.owner``, ``proofdiff.role=network``), and is
removed by :meth:`RunNetwork.remove`, by :func:`reap_networks`, or by the owner's watchdog
(:mod:`proofdiff.runtime.watchdog`) with the containers.
"""

from __future__ import annotations

import secrets
import threading
from typing import Any

import docker.errors

from proofdiff.runtime.spec import LABEL_OWNER, LABEL_ROLE, LABEL_RUN, ContainerError

__all__ = ["NETWORK_PREFIX", "NO_MASQUERADE", "ROLE", "RUN_NETWORK", "RunNetwork",
           "reap_networks"]

#: The bridge driver's option that leaves outbound traffic without source NAT.
NO_MASQUERADE = {"com.docker.network.bridge.enable_ip_masquerade": "false"}
#: The ``proofdiff.role`` label of a run's network.
ROLE = "network"
#: How a run's network's name starts (``proofdiff-net-<run id>-<6 hex>``).
NETWORK_PREFIX = "proofdiff-net-"
#: What a container's settings show for it (:func:`proofdiff.runtime.docker.inspect_view`).
RUN_NETWORK = "the run's own bridge (no outbound)"


class RunNetwork:
    """The run ``run_id``'s network on ``client``'s engine (module docstring), labelled with
    ``owner`` (the watchdog's, or ``unwatched``)."""

    def __init__(self, client: Any, run_id: str, owner: str) -> None:
        self.client, self.run_id, self.owner = client, run_id, owner
        self._name = ""
        self._lock = threading.Lock()

    def name(self) -> str:
        """The network's name, made on first call (thread-safe).

        Raises:
            ContainerError: the engine refused to make it (an exhausted address pool: the
                fix says how to free one).
        """
        with self._lock:
            if not self._name:
                name = f"{NETWORK_PREFIX}{self.run_id}-{secrets.token_hex(3)}"
                try:
                    self.client.networks.create(
                        name, driver="bridge", options=NO_MASQUERADE, check_duplicate=True,
                        labels={LABEL_RUN: self.run_id, LABEL_OWNER: self.owner,
                                LABEL_ROLE: ROLE})
                except docker.errors.DockerException as exc:
                    raise ContainerError(
                        f"docker refused to create the run's network {name}: "
                        f"{getattr(exc, 'explanation', None) or exc}",
                        fix="free an address pool: `proofdiff reap` removes the networks of "
                            "runs that ended (docker network ls --filter label=proofdiff.run "
                            "lists them), or give the profile network = \"outbound\"") from None
                self._name = name
            return self._name

    def remove(self) -> None:
        """Remove the network if it was made (its containers must be gone; a network still in
        use is left to the watchdog and the reaper)."""
        with self._lock:
            name, self._name = self._name, ""
        if not name:
            return
        try:
            self.client.networks.get(name).remove()
        except docker.errors.NotFound:
            pass
        except docker.errors.APIError:
            pass  # still in use: the watchdog's sweep removes it after the containers


def reap_networks(client: Any, label: str) -> list[str]:
    """Remove the networks that carry ``label`` (``key=value`` or a key), after their
    containers are gone; returns their names (one still in use is left)."""
    removed = []
    for net in client.networks.list(filters={"label": label}):
        try:
            net.remove()
            removed.append(str(net.name))
        except docker.errors.NotFound:
            continue
        except docker.errors.APIError:
            continue  # still has a container: the next sweep, or `proofdiff reap`
    return removed
