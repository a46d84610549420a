"""Images to the fleet's Docker hosts with no registry: ``docker save`` here, shipped as one
blob keyed by content, ``docker load`` on each host that lacks it.

For each image a run's units need (its image slots or its profiles' images, and the pinned
verifier's), every host whose hosts-file runtime is ``docker`` is asked, on its own engine (its
``docker_socket``, else the worker's environment), whether it holds that image id. Where one
does not, the image is saved here once (``<cache>/images/<id>.tar``: the id is the digest of
the image's config, so the file never goes stale), shipped through the engine to those workers
alone (:func:`proofdiff.fleet.shipping.ship`: a second run sends nothing to a host that kept
the blob), and loaded there; the loaded image must have the id that was asked for. An image
that is not on this machine is not shipped (a unit that needs it reports it missing on its
host, with the fix).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from proofdiff.fleet.hosts import Host
from proofdiff.fleet.shipping import STEP_TIMEOUT_S, ShipReport, bundle_of, localize, ship

__all__ = ["image_tar", "images_here", "ship_images"]


def _engine(socket: str) -> Any:
    import docker

    return docker.DockerClient(base_url=f"unix://{socket}") if socket else docker.from_env()


def _lacks(image_ids: list[str], socket: str) -> list[str]:
    """On a worker: the ids of ``image_ids`` its engine does not hold."""
    import docker.errors

    engine = _engine(socket)
    out = []
    for image_id in image_ids:
        try:
            engine.images.get(image_id)
        except docker.errors.ImageNotFound:
            out.append(image_id)
    return out


def _load(ref: str, image_id: str, socket: str) -> str:
    """On a worker: ``docker load`` the shipped tar ``ref``; the id it loaded.

    Raises:
        ValueError: the tar held another image than ``image_id``.
    """
    engine = _engine(socket)
    with open(localize(ref), "rb") as fh:
        got = {img.id for img in engine.images.load(fh)}
    if image_id not in got:
        raise ValueError(f"the shipped image tar held {sorted(got)}, not {image_id}")
    return image_id


def images_here(tags: Sequence[str]) -> list[tuple[str, str]]:
    """``(tag, image id)`` of each of ``tags`` this machine's engine holds (others left out:
    not ours to ship)."""
    import docker
    import docker.errors

    engine = docker.from_env()
    out = []
    for tag in dict.fromkeys(t for t in tags if t):
        try:
            out.append((tag, str(engine.images.get(tag).id)))
        except docker.errors.ImageNotFound:
            continue
    return out


def image_tar(tag: str, image_id: str, cache_root: Path) -> Path:
    """The ``docker save`` of ``tag`` (whose id is ``image_id``), made once into the cache.

    Raises:
        docker.errors.DockerException: the engine failed to save it.
    """
    out = cache_root / "images" / f"{image_id.removeprefix('sha256:')}.tar"
    if out.is_file():
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    part = out.with_name(f"{out.name}.{os.getpid()}.part")
    import docker

    with open(part, "wb") as fh:
        for chunk in docker.from_env().images.get(tag).save(named=True):
            fh.write(chunk)
    part.rename(out)
    return out


def ship_images(client: Any, images: Sequence[tuple[str, str]], hosts: Mapping[str, Host], *,
                cache_root: Path, log: Callable[[str], None] = lambda _l: None,
                ) -> list[ShipReport]:
    """``images`` (``(tag, id)`` pairs) loaded on every ``docker`` host of ``hosts`` that is a
    worker of ``client`` and lacks them (module docstring).

    Returns:
        One :class:`ShipReport` per image shipped to a host.

    Raises:
        TimeoutError: a host's step ran past :data:`~proofdiff.fleet.shipping.STEP_TIMEOUT_S`.
        ValueError, docker.errors.DockerException: a load or save failed (from the host that
            raised it).
    """
    info = client.scheduler_info(n_workers=-1)["workers"]
    address = {str(w.get("name", a)): a for a, w in info.items()}
    reports: list[ShipReport] = []
    for name, host in sorted(hosts.items()):
        addr = address.get(name)
        if host.runtime != "docker" or addr is None or not images:
            continue

        def on(fn: Callable[..., Any], *args: Any, where: str = str(addr)) -> Any:
            return client.submit(fn, *args, workers=[where], allow_other_workers=False,
                                 pure=False).result(timeout=STEP_TIMEOUT_S)

        lacking = set(on(_lacks, [i for _t, i in images], host.docker_socket))
        for tag, image_id in images:
            if image_id not in lacking:
                continue
            bundle = bundle_of(f"image {tag}", image_tar(tag, image_id, cache_root))
            reports += ship(client, [bundle], workers={addr: name}, log=log)
            on(_load, bundle.ref, image_id, host.docker_socket)
            log(f"image {tag} ({image_id[:19]}): loaded on {name}")
    return reports
