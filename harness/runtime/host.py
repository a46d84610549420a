"""The host a run runs on: what machine it is (CPUs, memory, GPUs, kept with the result so a
figure is never read without its hardware), and whether its Docker engine can give containers
GPUs (with what to say when it cannot).

GPUs come from NVML (the ``nvidia-ml-py`` package, ``import pynvml``) where it loads, else from
``nvidia-smi --query-gpu`` (10 s deadline), else none, with the reason. Memory is psutil's
``MemTotal``; note that on some GPU hosts MemTotal starts small and grows as memory is used
(a daemon that sizes itself from it sees too little), so the cgroup limit is kept beside it.
"""

from __future__ import annotations

import os
import platform
import shutil
import socket
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING, Any

import psutil

from proofdiff.model.choices import Role
from proofdiff.runtime.spec import ContainerError, LaunchSpec

if TYPE_CHECKING:  # the runner imports the docker SDK; machine_facts needs none of it
    from proofdiff.runtime.runner import Runner

__all__ = ["NO_GPU_DRIVER", "gpu_facts", "gpu_hint", "machine_facts", "probe_gpu_support"]

_SMI_FIELDS = ("index", "name", "uuid", "driver_version", "memory.total", "compute_cap")


def _nvml() -> tuple[list[dict[str, Any]], str]:
    import pynvml  # type: ignore[import-not-found, import-untyped, unused-ignore]

    pynvml.nvmlInit()
    try:
        driver = pynvml.nvmlSystemGetDriverVersion()
        cuda = pynvml.nvmlSystemGetCudaDriverVersion_v2()
        out = []
        for i in range(pynvml.nvmlDeviceGetCount()):
            h = pynvml.nvmlDeviceGetHandleByIndex(i)
            major, minor = pynvml.nvmlDeviceGetCudaComputeCapability(h)
            mem = pynvml.nvmlDeviceGetMemoryInfo(h)
            out.append({"index": i, "name": _s(pynvml.nvmlDeviceGetName(h)),
                        "uuid": _s(pynvml.nvmlDeviceGetUUID(h)), "driver_version": _s(driver),
                        "cuda_driver_version": f"{cuda // 1000}.{cuda % 1000 // 10}",
                        "memory_total_bytes": int(mem.total),
                        "compute_capability": f"{major}.{minor}"})
        return out, "nvml"
    finally:
        pynvml.nvmlShutdown()


def _s(x: Any) -> str:
    return x.decode() if isinstance(x, bytes) else str(x)


def _smi() -> tuple[list[dict[str, Any]], str]:
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return [], "none: no NVML library and no nvidia-smi on PATH"
    res = subprocess.run([smi, f"--query-gpu={','.join(_SMI_FIELDS)}",
                          "--format=csv,noheader,nounits"], capture_output=True, text=True,
                         timeout=10)
    if res.returncode != 0:
        return [], f"none: nvidia-smi exited {res.returncode}: {res.stderr.strip()[:200]}"
    out = []
    for line in res.stdout.strip().splitlines():
        v = [x.strip() for x in line.split(",")]
        if len(v) == len(_SMI_FIELDS):
            out.append({"index": int(v[0]), "name": v[1], "uuid": v[2], "driver_version": v[3],
                        "memory_total_bytes": int(float(v[4]) * 2 ** 20),
                        "compute_capability": v[5]})
    return out, "nvidia-smi"


def gpu_facts() -> tuple[list[dict[str, Any]], str]:
    """``(gpus, source)``: one dict per GPU (index, name, uuid, driver_version,
    memory_total_bytes, compute_capability; NVML adds cuda_driver_version) and where they came
    from (``nvml``, ``nvidia-smi``, or ``none: <why>``). Never raises."""
    try:
        return _nvml()
    except Exception:  # noqa: BLE001 - pynvml raises its own NVMLError family or ImportError
        pass
    try:
        return _smi()
    except (OSError, subprocess.SubprocessError, ValueError) as exc:
        return [], f"none: nvidia-smi failed: {exc}"


def _cgroup_memory_limit() -> int | None:
    for path in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            text = Path(path).read_text().strip()
        except OSError:
            continue
        if text.isdigit() and int(text) < 1 << 60:
            return int(text)
    return None


def machine_facts() -> dict[str, Any]:
    """The machine, JSON-ready: hostname, os, python, cpus (online and usable), mem_total_bytes
    (MemTotal), cgroup_mem_limit_bytes (``None`` when unlimited), gpus and gpu_source."""
    gpus, source = gpu_facts()
    return {"hostname": socket.gethostname(), "os": platform.platform(),
            "python": platform.python_version(), "cpus": os.cpu_count(),
            "cpus_usable": len(os.sched_getaffinity(0)),
            "mem_total_bytes": int(psutil.virtual_memory().total),
            "cgroup_mem_limit_bytes": _cgroup_memory_limit(), "gpus": gpus, "gpu_source": source}


# -- GPU requests to the Docker engine ------------------------------------------------------
# A profile's ``gpus`` becomes a ``DeviceRequest(capabilities=[['gpu']])``. Without the NVIDIA
# Container Toolkit the engine refuses such a container at start with HTTP 400 ``could not
# select device driver "" with capabilities: [[gpu]]``; the helpers below recognise that answer
# and turn it into an error that says what to do.

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
    spec = LaunchSpec(image=image, role=Role.GPU_PROBE, entrypoint=("true",), gpus="all")
    try:
        runner.run(spec, timeout_s=timeout_s)
    except ContainerError as exc:
        if NO_GPU_DRIVER in str(exc):
            return f"{exc.headline.split(': ', 1)[-1]}; {_FIX}"
        raise
    return None
