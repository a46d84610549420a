"""GPU requests: can this Docker engine give containers GPUs, and what to say when it cannot.

A profile's ``gpus`` becomes a ``DeviceRequest(capabilities=[['gpu']])``. Without the NVIDIA
Container Toolkit the engine refuses such a container at start with HTTP 400 ``could not select
device driver "" with capabilities: [[gpu]]`` (DESIGN.md section 7); the helpers here recognise
that answer and turn it into an error that says what to do.
"""

from __future__ import annotations

from .runner import Runner
from .spec import ContainerError, ContainerSpec

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


def probe_gpu_support(runner: Runner, image: str, *, timeout_s: float = 60.0) -> str | None:
    """Run ``true`` in ``image`` with every GPU requested (``DeviceRequest(count=-1)``).

    Args:
        runner: the run's container runner (labels, cleanup). image: a local image with a
            ``true`` binary (never pulled). timeout_s: deadline of the probe, seconds (default 60).

    Returns:
        ``None`` when the engine gave the container GPUs; otherwise the engine's own words
        (e.g. ``could not select device driver "" with capabilities: [[gpu]]``) and the fix.

    Raises:
        ContainerError: the engine failed for a reason unrelated to GPUs (image missing, ...).
    """
    spec = ContainerSpec(image=image, role="gpu-probe", entrypoint=("true",), gpus="all")
    try:
        runner.run(spec, timeout_s=timeout_s)
    except ContainerError as exc:
        if NO_GPU_DRIVER in str(exc):
            return f"{exc.headline.split(': ', 1)[-1]}; {_FIX}"
        raise
    return None
