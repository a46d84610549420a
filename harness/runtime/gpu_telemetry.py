"""Sampling the GPUs through NVML while a daemon runs (about 1 Hz), for its run record.

Where NVML does not load or sees no GPU, no thread is started and the record says why (the
check is made once per process, so a GPU-less host pays for it once). The sampler reads every
GPU NVML sees, or only those a profile names by UUID; a process that cannot see the daemon's
GPUs (a container without the NVIDIA runtime) reads nothing, and says so.
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Sequence
from typing import Any

from proofdiff.model.gpu_telemetry import GpuSample, GpuTelemetry

__all__ = ["GpuSampler", "nvml_unavailable", "start_gpu_sampler"]

#: Seconds between two readings.
SAMPLE_S = 1.0
#: At most this many readings are kept per GPU (a day at 1 Hz would be 86,400); past it, the
#: sampler drops every second reading and doubles its period, so a long run keeps its whole
#: span at a coarser period.
MAX_SAMPLES_PER_GPU = 3600

# NVML's clock event (throttle) reason bits, by the names the record keeps (NVML API reference,
# "Clock Event Reasons"; nvidia-ml-py names them nvmlClocksEventReason*).
_REASONS = (("gpu_idle", "GpuIdle"), ("applications_clocks", "ApplicationsClocksSetting"),
            ("sw_power_cap", "SwPowerCap"), ("hw_slowdown", "HwSlowdown"),
            ("sync_boost", "SyncBoost"), ("sw_thermal_slowdown", "SwThermalSlowdown"),
            ("hw_thermal_slowdown", "HwThermalSlowdown"),
            ("hw_power_brake_slowdown", "HwPowerBrakeSlowdown"),
            ("display_clocks", "DisplayClockSetting"))


def _pynvml() -> Any:
    import pynvml  # type: ignore[import-not-found, import-untyped, unused-ignore]

    return pynvml


@functools.cache
def nvml_unavailable() -> str | None:
    """``None`` when NVML loads and sees at least one GPU; else why not (``no NVML library:
    ...``, ``NVML sees no GPU``), cached for the process. Never raises."""
    try:
        nv = _pynvml()
        nv.nvmlInit()
    except Exception as exc:  # noqa: BLE001 - ImportError or pynvml's NVMLError family
        return f"no NVML library ({type(exc).__name__}: {exc})"
    try:
        return None if nv.nvmlDeviceGetCount() > 0 else "NVML sees no GPU"
    except Exception as exc:  # noqa: BLE001 - NVMLError
        return f"NVML failed to count GPUs ({exc})"
    finally:
        nv.nvmlShutdown()


def _text(x: Any) -> str:
    return x.decode() if isinstance(x, bytes) else str(x)


def _read(nv: Any, fn: str, *args: Any) -> Any:
    """One NVML query, ``None`` where the GPU or driver does not support it."""
    try:
        return getattr(nv, fn)(*args)
    except Exception:  # noqa: BLE001 - NVMLError_NotSupported and kin: a missing field
        return None


class GpuSampler:
    """A thread that reads ``uuids`` (every GPU when empty) every :data:`SAMPLE_S` until
    :meth:`stop`; :meth:`telemetry` gives the record so far."""

    def __init__(self, uuids: Sequence[str] = (), *, interval_s: float = SAMPLE_S) -> None:
        self.interval_s = interval_s
        self._want = tuple(uuids)
        self._samples: list[GpuSample] = []
        self._gpus: dict[str, str] = {}
        self._error = ""
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._t0 = time.monotonic()
        self._unix0 = time.time()
        self._thread = threading.Thread(target=self._follow, name="proofdiff-nvml", daemon=True)
        self._thread.start()

    def _handles(self, nv: Any) -> list[tuple[str, Any]]:
        out = []
        for i in range(nv.nvmlDeviceGetCount()):
            h = nv.nvmlDeviceGetHandleByIndex(i)
            uuid = _text(nv.nvmlDeviceGetUUID(h))
            if not self._want or uuid in self._want:
                self._gpus[uuid] = _text(nv.nvmlDeviceGetName(h))
                out.append((uuid, h))
        return out

    def _reading(self, nv: Any, uuid: str, h: Any) -> GpuSample:
        util = _read(nv, "nvmlDeviceGetUtilizationRates", h)
        mem = _read(nv, "nvmlDeviceGetMemoryInfo", h)
        power_mw = _read(nv, "nvmlDeviceGetPowerUsage", h)
        mask = _read(nv, "nvmlDeviceGetCurrentClocksEventReasons", h)
        if mask is None:  # drivers before the rename
            mask = _read(nv, "nvmlDeviceGetCurrentClocksThrottleReasons", h)
        reasons = tuple(name for name, bit in _REASONS
                        if mask is not None and mask & getattr(nv, f"nvmlClocksEventReason{bit}",
                                                               0))
        return GpuSample(t_s=round(time.monotonic() - self._t0, 3), uuid=uuid,
                         util_pct=None if util is None else int(util.gpu),
                         mem_used_bytes=None if mem is None else int(mem.used),
                         sm_clock_mhz=_read(nv, "nvmlDeviceGetClockInfo", h, nv.NVML_CLOCK_SM),
                         temp_c=_read(nv, "nvmlDeviceGetTemperature", h, nv.NVML_TEMPERATURE_GPU),
                         power_w=None if power_mw is None else round(power_mw / 1000.0, 1),
                         throttle=reasons)

    def _follow(self) -> None:
        try:
            nv = _pynvml()
            nv.nvmlInit()
        except Exception as exc:  # noqa: BLE001 - ImportError or NVMLError
            self._error = f"NVML did not start: {exc}"
            return
        try:
            handles = self._handles(nv)
            if not handles:
                self._error = f"none of the GPUs {list(self._want)} is visible to NVML here"
            kept = 0
            while handles and not self._stop.is_set():
                batch = [self._reading(nv, u, h) for u, h in handles]
                with self._lock:
                    self._samples.extend(batch)
                    kept += 1
                    if kept > MAX_SAMPLES_PER_GPU:  # thin out: every second tick, half the rate
                        n = len(handles)
                        ticks = [self._samples[i:i + n] for i in range(0, len(self._samples), n)]
                        self._samples = [s for t in ticks[::2] for s in t]
                        kept = len(ticks[::2])
                        self.interval_s *= 2
                self._stop.wait(self.interval_s)
        except Exception as exc:  # noqa: BLE001 - a driver error mid-run: keep what was read
            self._error = f"NVML failed mid-run: {exc}"
        finally:
            nv.nvmlShutdown()

    def stop(self, timeout_s: float = 5.0) -> None:
        """Stop reading; waits up to ``timeout_s`` seconds for the thread (idempotent)."""
        self._stop.set()
        self._thread.join(timeout_s)

    def telemetry(self) -> GpuTelemetry:
        """The readings so far (the sampler may still be running)."""
        with self._lock:
            samples = tuple(self._samples)
        return GpuTelemetry(source="nvml" if samples or not self._error
                            else f"none: {self._error}", interval_s=self.interval_s,
                            started_unix_s=round(self._unix0, 3), gpus=dict(self._gpus),
                            samples=samples, error=self._error)


def start_gpu_sampler(uuids: Sequence[str] = ()) -> GpuSampler | GpuTelemetry:
    """A running :class:`GpuSampler`, or, where NVML is unavailable, the record that says why
    (``GpuTelemetry(source='none: ...')``) with nothing started."""
    why = nvml_unavailable()
    if why is not None:
        return GpuTelemetry(source=f"none: {why}")
    return GpuSampler(uuids)
