"""The machine fingerprint: which runs may be compared with each other.

Two runs share a fingerprint when they ran on the same host (a fleet's host by its name in
the hosts file) with the same GPU models and driver, the same usable cores and the same memory (whole GiB). A run that moved to another GPU
model, driver or host starts a new series instead of making a change point. Memory is rounded
to whole GiB because MemTotal moves by a few MiB between boots (and, on some GPU hosts, grows
as memory is used: :mod:`proofdiff.runtime.host`).
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["MachineKey", "machine_key"]


@dataclass(frozen=True)
class MachineKey:
    """The identifying facts of a machine and their fingerprint.

    Attributes:
        fingerprint: sha256 hex of the other fields. host: its hostname. gpu_model: ``2x
        NVIDIA H200`` ('' = no GPU seen). gpu_driver: the NVIDIA driver version(s). cpus: usable
        cores. mem_gib: MemTotal in whole GiB.
    """

    fingerprint: str
    host: str
    gpu_model: str
    gpu_driver: str
    cpus: int
    mem_gib: int

    @property
    def label(self) -> str:
        """``host, 2x NVIDIA H200 (driver 570.86), 16 cores, 128 GiB [3f2a9c1d]``."""
        gpu = f"{self.gpu_model} (driver {self.gpu_driver})" if self.gpu_model else "no GPU"
        return (f"{self.host}, {gpu}, {self.cpus} cores, {self.mem_gib} GiB "
                f"[{self.fingerprint[:8]}]")


def machine_key(facts: Mapping[str, Any]) -> MachineKey:
    """The :class:`MachineKey` of a run's ``machine`` facts
    (:func:`proofdiff.runtime.host.machine_facts`; missing facts read as unknown)."""
    gpus = [g for g in facts.get("gpus") or () if isinstance(g, Mapping)]
    names = Counter(str(g.get("name", "?")) for g in gpus)
    model = ", ".join(f"{n}x {name}" if n > 1 else name for name, n in sorted(names.items()))
    driver = ", ".join(sorted({str(g.get("driver_version", "?")) for g in gpus}))
    cpus = int(facts.get("cpus_usable") or facts.get("cpus") or 0)
    mem_gib = round(int(facts.get("mem_total_bytes") or 0) / 2 ** 30)
    # a fleet's host by its name in the hosts file: two hosts on one machine (containers, a
    # rented box's slices) are two series, and a rented host keeps its name across hostnames
    host = str(facts.get("fleet_host") or facts.get("hostname", "") or "unknown")
    ident = "|".join((host, model, driver, str(cpus), str(mem_gib)))
    return MachineKey(fingerprint=hashlib.sha256(ident.encode()).hexdigest(), host=host,
                      gpu_model=model, gpu_driver=driver, cpus=cpus, mem_gib=mem_gib)
