"""A unit made concrete on the host it landed on: the hosts file's runtime and programs, its
artifacts shipped beforehand, and GPUs by UUID.

* **Artifacts** (:func:`ship_run`, on the caller): the run's binaries, param cache, workload
  files, profile file, params manifest and allowlist are found or built here
  (``pin_artifacts``), shipped to every worker
  (:mod:`proofdiff.fleet.shipping`), and the options name them by reference; the images the
  units run go to each ``docker`` host that lacks them (:mod:`proofdiff.fleet.images`).
* **The host's runtime** (:func:`on_host`, on the worker): a ``process`` host runs every
  profile as a process (``*.runtime=process``), with its own ``bin_dir`` where the hosts file
  names one (cuzk's programs, say), else the shipped binaries.
* **GPUs**: a unit holds Dask's ``GPU`` resource for the GPUs its profiles ask for
  (:func:`gpus_wanted`), so a host runs side by side only what its GPUs hold; on the host, each
  profile's count becomes that many device UUIDs from the host's ``gpu_uuids`` (leased from a
  per-process pool, disjoint between the units and the profiles of one unit), which the
  runtimes pass by UUID (a process's ``CUDA_VISIBLE_DEVICES``, a container's device request
  by id): never an index, whose meaning changes with the host's device order.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import msgspec

from proofdiff.fleet.hosts import Host
from proofdiff.fleet.shipping import Bundle, ShipReport, bundle_of, ship, walk
from proofdiff.model.choices import Runtime
from proofdiff.model.errors import ProofdiffError
from proofdiff.model.profile import Profile
from proofdiff.model.run_options import RunOptions

__all__ = ["GPU_LEASE_TIMEOUT_S", "gpus_wanted", "on_host", "ship_run"]

#: How long a unit waits on its host for GPUs that Dask's resources said were free, s.
GPU_LEASE_TIMEOUT_S = 600.0


def _structs_in(item: Any, kind: type) -> list[Any]:
    found: list[Any] = []

    def keep(s: Any) -> Any:
        if isinstance(s, kind):
            found.append(s)
        return s

    walk(item, lambda s: s, keep)
    return found


def _count(gpus: str | int | tuple[str, ...] | None) -> int:
    """A profile's GPU request as a count (a list of ids: its length; ``all`` and none: 0,
    the host's own devices as they are)."""
    return len(gpus) if isinstance(gpus, tuple) else gpus if isinstance(gpus, int) else 0


def _profile_gpus(options: RunOptions) -> dict[str, int]:
    """GPUs each profile that ``options`` select asks for."""
    from proofdiff.core.plan import load_selected

    return {name: _count(p.gpus) for name, p in load_selected(options).items()}


def gpus_wanted(item: Any) -> int:
    """GPUs a unit holds at once: the sum over its profiles (they may run side by side): the
    profiles it carries (a bisection probe's), else those its options select; 0 when none
    asks, or the options do not load (the unit reports that itself)."""
    explicit = _structs_in(item, Profile)
    if explicit:
        return sum(_count(p.gpus) for p in explicit)
    total = 0
    for opts in _structs_in(item, RunOptions):
        try:
            total = max(total, sum(_profile_gpus(opts).values()))
        except ProofdiffError:
            continue
    return total


class _GpuPool:
    """The free device UUIDs of one host, in this worker process."""

    def __init__(self, uuids: tuple[str, ...]) -> None:
        self.free = list(uuids)
        self.cond = threading.Condition()

    @contextmanager
    def lease(self, n: int, timeout_s: float) -> Iterator[list[str]]:
        deadline = time.monotonic() + timeout_s
        with self.cond:
            while len(self.free) < n:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise ProofdiffError(
                        f"{n} GPU(s) were not free on this host within {timeout_s:.0f} s "
                        f"({len(self.free)} free)",
                        fix="give the host's worker as many GPU resources as gpu_uuids lists "
                            "(the hosts file does), so Dask never oversubscribes it")
                self.cond.wait(left)
            got, self.free = self.free[:n], self.free[n:]
        try:
            yield got
        finally:
            with self.cond:
                self.free.extend(got)
                self.cond.notify_all()


_pools: dict[str, _GpuPool] = {}
_pools_lock = threading.Lock()


def _pool(host: Host) -> _GpuPool:
    with _pools_lock:
        return _pools.setdefault(host.name, _GpuPool(host.gpu_uuids))


class _Placer:
    """Rewrites the structs of one unit for ``host``, handing out ``uuids`` in order."""

    def __init__(self, host: Host, uuids: list[str], explicit: bool) -> None:
        self.host, self.uuids, self.explicit = host, list(uuids), explicit

    def take(self, n: int) -> tuple[str, ...]:
        got, self.uuids = self.uuids[:n], self.uuids[n:]
        return tuple(got)

    def __call__(self, s: Any) -> Any:
        if isinstance(s, Profile):
            changes: dict[str, Any] = {}
            if self.host.runtime == "process":
                changes["runtime"] = Runtime.PROCESS
            if self.host.gpu_uuids and _count(s.gpus):
                changes["gpus"] = self.take(_count(s.gpus))
            return msgspec.structs.replace(s, **changes) if changes else s
        if not isinstance(s, RunOptions):
            return s
        sets = list(s.overrides)
        if self.host.runtime == "process":
            sets.append("*.runtime=process")
        if self.host.gpu_uuids and not self.explicit:
            for name, n in _profile_gpus(s).items():
                if n:
                    sets.append(f"{name}.gpus=[{', '.join(repr(u) for u in self.take(n))}]")
        return msgspec.structs.replace(s, overrides=tuple(sets),
                                       bin_dir=self.host.bin_dir or s.bin_dir)


@contextmanager
def on_host(item: Any, host: Host) -> Iterator[Any]:
    """``item`` with its profiles and :class:`RunOptions` made ``host``'s (module
    docstring), its GPUs leased for as long as the block runs.

    Raises:
        ProofdiffError: the GPUs were not free within :data:`GPU_LEASE_TIMEOUT_S`.
    """
    explicit = bool(_structs_in(item, Profile))
    n = gpus_wanted(item) if host.gpu_uuids else 0
    if not n:
        yield walk(item, lambda s: s, _Placer(host, [], explicit))
        return
    with _pool(host).lease(n, GPU_LEASE_TIMEOUT_S) as uuids:
        yield walk(item, lambda s: s, _Placer(host, uuids, explicit))


def ship_run(client: Any, options: RunOptions, hosts: Mapping[str, Host], *,
             log: Callable[[str], None] = lambda _l: None,
             ) -> tuple[RunOptions, list[ShipReport]]:
    """``options`` with its artifacts found or built here and shipped to every worker of
    ``client``, named by reference (module docstring); the images its units run loaded on
    each ``docker`` host that lacks them (:mod:`proofdiff.fleet.images`). With ``hosts`` that
    all run processes, nothing of Docker is built.

    Raises:
        proofdiff.artifacts.build_errors.BuildError: an artifact could not be built here.
        ProofdiffError: the profiles do not load.
    """
    from proofdiff.core.plan import load_selected, pin_artifacts

    profiles = load_selected(options)
    wls = list(options.workloads or dict.fromkeys(p.workload for p in profiles.values()))
    processes = bool(hosts) and all(h.runtime == "process" for h in hosts.values())
    docker = not processes and any(p.runtime is Runtime.DOCKER for p in profiles.values())
    docker_hosts = {n: h for n, h in hosts.items() if h.runtime == "docker"}
    # a profile without an image runs the reference one: found here, to be shipped
    need_ref = docker and bool(docker_hosts) and not options.images and any(
        p.image is None for p in profiles.values() if p.runtime is Runtime.DOCKER)
    opts, ref = pin_artifacts(options, wls, docker=docker, reference=need_ref, log=log)
    bundles: dict[str, Bundle] = {}
    if opts.bin_dir and not (hosts and all(h.bin_dir for h in hosts.values())):
        bundles["bin_dir"] = bundle_of("binaries", opts.bin_dir, programs=True)
    if opts.param_cache:
        bundles["param_cache"] = bundle_of("params", opts.param_cache)
    for name in ("profiles", "params_manifest", "allowlist"):
        value = getattr(opts, name)
        if value and Path(value).is_file():
            bundles[name] = bundle_of(name, value)
    files = {w: bundle_of(f"workload {w}", f) for w, f in opts.workload_files.items()}
    reports = ship(client, [*bundles.values(), *files.values()], log=log)
    if docker and docker_hosts:
        from proofdiff.fleet.images import images_here, ship_images

        tags = list(opts.images) or [p.image or (ref.tag if ref else "")
                                     for p in profiles.values() if p.runtime is Runtime.DOCKER]
        reports += ship_images(client, images_here([*tags, opts.verifier_image]), docker_hosts,
                               cache_root=Path(opts.cache_root), log=log)
    refs = {k: b.ref for k, b in bundles.items()}
    return msgspec.structs.replace(
        opts, workload_files={w: b.ref for w, b in files.items()}, **refs), reports
