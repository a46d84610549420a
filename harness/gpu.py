"""GPU requests: can this Docker engine give containers GPUs, and what to say when it cannot.

A profile's ``gpus`` becomes a ``DeviceRequest(capabilities=[['gpu']])`` (launcher). Without
the NVIDIA Container Toolkit the engine refuses such a container at start with HTTP 400
``could not select device driver "" with capabilities: [[gpu]]`` (DESIGN.md section 7); the
helpers here recognise that answer and turn it into an error that says what to do.
"""

from __future__ import annotations

import docker
import docker.errors
from docker.types import DeviceRequest

from .launcher import LABEL_ROLE, LABEL_RUN, hardening

__all__ = ["NO_GPU_DRIVER", "gpu_hint", "probe_gpu_support"]

#: What the engine says when no runtime can satisfy a GPU device request.
NO_GPU_DRIVER = "could not select device driver"

_FIX = ("the Docker engine cannot give containers GPUs (no NVIDIA runtime): install the NVIDIA "
        "Container Toolkit and run `nvidia-ctk runtime configure --runtime=docker && systemctl "
        "restart docker`, or run without GPUs with --set '*.gpus=none' (a GPU image then fails "
        "or falls back to its CPU path)")


def gpu_hint(error_text: str) -> str | None:
    """The fix for a start failure caused by a GPU request, or ``None`` when ``error_text`` is
    not the engine's "could not select device driver" answer."""
    return _FIX if NO_GPU_DRIVER in error_text else None


def probe_gpu_support(client: docker.DockerClient, image: str, *,
                      run_id: str = "gpu-probe", timeout_s: float = 60.0) -> str | None:
    """Start ``true`` in ``image`` with ``DeviceRequest(count=-1, capabilities=[['gpu']])``.

    Args:
        client: docker client. image: a local image with a ``true`` binary (never pulled).
        run_id: value of the ``proofdiff.run`` label (so a reaper finds a leftover).
        timeout_s: deadline for the probe container to exit, seconds (default 60).

    Returns:
        ``None`` when the engine gave the container GPUs; otherwise the reason, starting with
        the engine's own words (e.g. ``could not select device driver "" with capabilities:
        [[gpu]]``) and ending with the fix.

    Raises:
        docker.errors.DockerException: the engine failed for a reason unrelated to GPUs (the
            image is missing, the engine is down).
    """
    container = client.containers.create(
        image=image, entrypoint=["true"], command=[], detach=True, network_disabled=True,
        labels={LABEL_RUN: run_id, LABEL_ROLE: "gpu-probe"},
        device_requests=[DeviceRequest(count=-1, capabilities=[["gpu"]])], **hardening())
    try:
        try:
            container.start()
        except docker.errors.APIError as exc:
            said = str(exc.explanation or exc)
            if NO_GPU_DRIVER in said:
                return f"{said.strip()}; {_FIX}"
            raise
        container.wait(timeout=timeout_s)
        return None
    finally:
        try:
            container.remove(force=True, v=True)
        except docker.errors.DockerException:
            pass
