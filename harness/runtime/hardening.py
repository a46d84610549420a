"""What every container of the one runner is started with (the docker SDK's
``containers.create`` arguments): the least a prover, its bench tool, the verifier or a probe
needs, so that a hostile image gets no more (docs/design/security.md).

* User ``65534:65534`` (nobody), every capability dropped, ``no-new-privileges``, never
  privileged, at most :data:`PIDS_LIMIT` processes and threads.
* A read-only root filesystem where the image says it runs with one: the label
  :data:`LABEL_READ_ONLY_ROOT` lists the paths it writes, each given a tmpfs
  (:data:`TMPFS_OPTIONS`). Refprover's image carries it (``/tmp /var/tmp``); an image without
  it (a vendor's cuzk) keeps a writable root, as it may need one.
* Its network: a ``bridge`` spec joins the run's own network (``network``:
  :mod:`proofdiff.runtime.networks`: its neighbours and the ports it publishes on 127.0.0.1,
  nothing outside); ``outbound`` is Docker's default bridge (outbound access, for a profile
  that asks); ``host`` this machine's; ``None`` none at all.
* Mounts read-only, but ``/out`` where asked for. The files it is given and the ``/out`` it
  writes live in a temp dir of mode 0700 (other users of this machine see neither; the engine
  makes the bind mounts, so the container needs no way into that dir); ``/out`` itself is mode
  0700 and belongs to the container's user: proofdiff, as root, gives it to ``65534``; not as
  root, it cannot give a folder away, so the container runs as proofdiff's own uid and gid.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from docker.types import DeviceRequest

from proofdiff.runtime.spec import CONTAINER_USER, OUT_DIR, LaunchSpec, Tracker

__all__ = ["LABEL_READ_ONLY_ROOT", "PIDS_LIMIT", "TMPFS_OPTIONS", "container_settings"]

#: Processes and threads a container may hold at once: a fork bomb stops there, while a
#: prover's thread pools (a thread per core of the largest GPU hosts, and then some) fit.
PIDS_LIMIT = 4096
#: An image label: its value lists the paths (space-separated) that its containers write, each
#: given a tmpfs; with it the root filesystem is mounted read-only.
LABEL_READ_ONLY_ROOT = "proofdiff.read-only-root"
#: The tmpfs options of those paths (memory is used only as files are written, up to the size).
TMPFS_OPTIONS = "rw,nosuid,nodev,size=1g"


def _gpu_request(gpus: str | int | tuple[str, ...]) -> DeviceRequest:
    if isinstance(gpus, tuple):
        return DeviceRequest(device_ids=list(gpus), capabilities=[["gpu"]])
    return DeviceRequest(count=-1 if gpus == "all" else int(gpus), capabilities=[["gpu"]])


def _out_owner(out: Path) -> str:
    """The user a container that writes ``out`` (mode 0700) runs as (module docstring)."""
    if os.geteuid() == 0:
        uid, gid = (int(x) for x in CONTAINER_USER.split(":"))
        os.chown(out, uid, gid)
        return CONTAINER_USER
    return f"{os.geteuid()}:{os.getegid()}"


def container_settings(spec: LaunchSpec, *, labels: Mapping[str, str],
                       image_labels: Mapping[str, str], network: str,
                       tracker: Tracker | None) -> tuple[Path | None, dict[str, Any]]:
    """``(temp dir or None, create() arguments)`` of ``spec`` (module docstring).

    Args:
        labels: the container's labels (the reaper's). image_labels: its image's (for
            :data:`LABEL_READ_ONLY_ROOT`). network: the run's network, for a ``bridge`` spec.
        tracker: told of the temp dir, so the owner's watchdog removes it if the owner dies.
    """
    volumes = {str(m.source.resolve()): {"bind": m.container_path,
                                         "mode": "ro" if m.read_only else "rw"}
               for m in spec.mounts}
    user = CONTAINER_USER
    workdir = None
    if spec.files or spec.want_out:
        workdir = Path(tempfile.mkdtemp(prefix=f"proofdiff-{spec.role}-"))  # mode 0700
        if tracker is not None:
            tracker.track_dir(workdir)
        for i, (target, data) in enumerate(spec.files.items()):
            src = workdir / f"{i}-{Path(target).name}"
            src.write_bytes(data)
            os.chmod(src, 0o644)
            volumes[str(src)] = {"bind": target, "mode": "ro"}
        if spec.want_out:
            out = workdir / "out"
            out.mkdir(mode=0o700)
            user = _out_owner(out)
            volumes[str(out)] = {"bind": OUT_DIR, "mode": "rw"}
    kwargs: dict[str, Any] = {
        "image": spec.image, "command": list(spec.command), "environment": dict(spec.env),
        "labels": dict(labels), "volumes": volumes, "detach": True, "user": user,
        "privileged": False, "cap_drop": ["ALL"], "security_opt": ["no-new-privileges"],
        "pids_limit": PIDS_LIMIT,
    }
    writable = str(image_labels.get(LABEL_READ_ONLY_ROOT, "")).split()
    if writable:
        kwargs["read_only"] = True
        kwargs["tmpfs"] = {path: TMPFS_OPTIONS for path in writable}
    if spec.entrypoint is not None:
        kwargs["entrypoint"] = list(spec.entrypoint)
    if spec.name:
        kwargs["name"] = spec.name
    if spec.network is None:
        kwargs["network_disabled"] = True
    else:
        kwargs["network_mode"] = {"bridge": network, "outbound": "bridge"}.get(spec.network,
                                                                            spec.network)
        if spec.network in ("bridge", "outbound") and spec.ports:
            kwargs["ports"] = {f"{p}/tcp": ("127.0.0.1", None) for p in spec.ports.values()}
    if spec.cpus is not None:
        kwargs["nano_cpus"] = int(spec.cpus * 1e9)
    if spec.cpuset:
        kwargs["cpuset_cpus"] = ",".join(str(c) for c in spec.cpuset)
    if spec.mem_limit is not None:
        kwargs["mem_limit"] = spec.mem_limit
    if spec.gpus is not None:
        kwargs["device_requests"] = [_gpu_request(spec.gpus)]
    return workdir, kwargs
