"""GPU telemetry of a daemon's life: NVML samples about once a second, kept in its run record.

The fields are NVML's (``nvidia-ml-py``, NVIDIA's Python binding of the NVML C API; names and
units from the NVML API reference): ``nvmlDeviceGetUtilizationRates().gpu`` (percent of the
last sample period in which a kernel ran), ``nvmlDeviceGetMemoryInfo().used`` (bytes),
``nvmlDeviceGetClockInfo(NVML_CLOCK_SM)`` (MHz), ``nvmlDeviceGetTemperature(NVML_TEMPERATURE_GPU)``
(degrees C), ``nvmlDeviceGetPowerUsage`` (milliwatts, kept in watts) and
``nvmlDeviceGetCurrentClocksEventReasons`` (a bit mask, kept as names).
"""

from __future__ import annotations

import statistics

import msgspec

__all__ = ["GpuSample", "GpuSummary", "GpuTelemetry"]


class GpuSample(msgspec.Struct, frozen=True, kw_only=True):
    """One reading of one GPU.

    Attributes:
        t_s: seconds since the sampler started (monotonic clock).
        uuid: the GPU's NVML UUID (``GPU-...``).
        util_pct: GPU utilization, percent (``None`` where NVML does not support it).
        mem_used_bytes: device memory in use, bytes. sm_clock_mhz: SM clock, MHz.
        temp_c: GPU temperature, degrees C. power_w: board power draw, watts.
        throttle: the clock event (throttle) reasons active at the reading, by name
            (``sw_power_cap``, ``hw_thermal_slowdown``, ...; ``gpu_idle`` when idle).
    """

    t_s: float
    uuid: str
    util_pct: int | None = None
    mem_used_bytes: int | None = None
    sm_clock_mhz: int | None = None
    temp_c: int | None = None
    power_w: float | None = None
    throttle: tuple[str, ...] = ()


class GpuSummary(msgspec.Struct, frozen=True, kw_only=True):
    """What one GPU's samples add up to (``None`` where no sample had the field).

    Attributes:
        uuid: the GPU. name: its model (``NVIDIA H200``). samples: readings taken.
        util_mean_pct, util_max_pct: utilization, percent. mem_peak_bytes: bytes.
        sm_clock_max_mhz: MHz. temp_max_c: degrees C. power_max_w: watts.
        throttle_seen: every throttle reason seen in any reading except ``gpu_idle``.
    """

    uuid: str
    name: str
    samples: int
    util_mean_pct: float | None
    util_max_pct: int | None
    mem_peak_bytes: int | None
    sm_clock_max_mhz: int | None
    temp_max_c: int | None
    power_max_w: float | None
    throttle_seen: tuple[str, ...]


def _max(xs: list[int] | list[float]) -> int | float | None:
    return max(xs) if xs else None


class GpuTelemetry(msgspec.Struct, frozen=True, kw_only=True):
    """The GPU samples taken while one daemon ran.

    Attributes:
        source: ``nvml`` when sampled, else ``none: <why>`` (no NVML library, no GPU, an
            attached daemon on another host...), which the report shows as the skip reason.
        interval_s: the sampling period, seconds. started_unix_s: wall time of ``t_s = 0``.
        gpus: ``{uuid: model name}`` of the GPUs sampled.
        samples: the readings, in time order (every GPU at each tick).
        error: why sampling stopped early ('' when it did not).
    """

    source: str
    interval_s: float = 1.0
    started_unix_s: float = 0.0
    gpus: dict[str, str] = msgspec.field(default_factory=dict)
    samples: tuple[GpuSample, ...] = ()
    error: str = ""

    @property
    def sampled(self) -> bool:
        """NVML was read at least once."""
        return self.source == "nvml" and bool(self.samples)

    def summaries(self) -> list[GpuSummary]:
        """One :class:`GpuSummary` per GPU sampled, in the order of :attr:`gpus`."""
        out = []
        for uuid, name in self.gpus.items():
            mine = [s for s in self.samples if s.uuid == uuid]
            util = [s.util_pct for s in mine if s.util_pct is not None]
            out.append(GpuSummary(
                uuid=uuid, name=name, samples=len(mine),
                util_mean_pct=round(statistics.fmean(util), 1) if util else None,
                util_max_pct=max(util) if util else None,
                mem_peak_bytes=_int(_max([s.mem_used_bytes for s in mine
                                          if s.mem_used_bytes is not None])),
                sm_clock_max_mhz=_int(_max([s.sm_clock_mhz for s in mine
                                            if s.sm_clock_mhz is not None])),
                temp_max_c=_int(_max([s.temp_c for s in mine if s.temp_c is not None])),
                power_max_w=_max([s.power_w for s in mine if s.power_w is not None]),
                throttle_seen=tuple(sorted({t for s in mine for t in s.throttle
                                            if t != "gpu_idle"}))))
        return out


def _int(x: int | float | None) -> int | None:
    return None if x is None else int(x)
