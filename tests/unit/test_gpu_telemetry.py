"""GPU telemetry: the summary of NVML readings, the record of why nothing was read on a host
without GPUs, and (on a GPU host only) real readings while a GPU works."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest

from proofdiff.model.gpu_telemetry import GpuSample, GpuTelemetry
from proofdiff.model.runs import RunRecord
from proofdiff.runtime.gpu_telemetry import GpuSampler, nvml_unavailable, start_gpu_sampler


def test_summaries_take_each_gpus_own_readings() -> None:
    a, b = "GPU-aaaa", "GPU-bbbb"
    tel = GpuTelemetry(source="nvml", gpus={a: "NVIDIA H200", b: "NVIDIA H200"}, samples=(
        GpuSample(t_s=0.0, uuid=a, util_pct=0, mem_used_bytes=1 << 30, sm_clock_mhz=345,
                  temp_c=30, power_w=80.0, throttle=("gpu_idle",)),
        GpuSample(t_s=0.0, uuid=b, util_pct=None, mem_used_bytes=None),
        GpuSample(t_s=1.0, uuid=a, util_pct=100, mem_used_bytes=3 << 30, sm_clock_mhz=1980,
                  temp_c=41, power_w=612.5, throttle=("sw_power_cap",)),
        GpuSample(t_s=1.0, uuid=b, util_pct=20, mem_used_bytes=2 << 30)))
    first, second = tel.summaries()
    assert (first.uuid, first.samples, first.util_mean_pct, first.util_max_pct) == (a, 2, 50.0, 100)
    assert (first.mem_peak_bytes, first.sm_clock_max_mhz, first.temp_max_c) == (3 << 30, 1980, 41)
    assert first.power_max_w == 612.5
    assert first.throttle_seen == ("sw_power_cap",)  # idle is not a throttle
    assert (second.util_mean_pct, second.util_max_pct, second.mem_peak_bytes) == (20.0, 20, 2 << 30)
    assert (second.sm_clock_max_mhz, second.temp_max_c, second.power_max_w) == (None, None, None)
    assert tel.sampled and not GpuTelemetry(source="nvml").sampled


@pytest.mark.skipif(nvml_unavailable() is None, reason="this host has a GPU that NVML sees")
def test_without_a_gpu_nothing_is_started_and_the_record_says_why() -> None:
    tel = start_gpu_sampler()
    assert isinstance(tel, GpuTelemetry)
    assert tel.source.startswith("none: ") and tel.source == f"none: {nvml_unavailable()}"
    assert not tel.sampled and tel.summaries() == []


@pytest.mark.skipif(nvml_unavailable() is not None,
                    reason=f"no GPU visible to NVML here: {nvml_unavailable()}")
@pytest.mark.skipif(shutil.which("nvidia-smi") is None, reason="no nvidia-smi on this host")
def test_on_a_gpu_host_the_sampler_reads_a_real_gpu_load() -> None:
    torch = pytest.importorskip("torch", reason="a GPU load needs torch on this host")
    sampler = GpuSampler(interval_s=0.25)
    try:
        x = torch.randn(8192, 8192, device="cuda")
        t_end = time.monotonic() + 3.0
        while time.monotonic() < t_end:
            x = (x @ x).clamp_(-1, 1)
        torch.cuda.synchronize()
    finally:
        sampler.stop()
    tel = sampler.telemetry()
    assert tel.source == "nvml" and tel.sampled, tel.error
    busy = [s for s in tel.samples if s.util_pct is not None and s.util_pct > 50]
    assert busy, [s.util_pct for s in tel.samples]
    assert max(s.mem_used_bytes or 0 for s in tel.samples) > 8192 * 8192 * 4


def test_the_report_shows_each_gpu_or_why_none_was_read(tmp_path: Path) -> None:
    from msgspec.structs import replace

    from proofdiff.core.differential import assemble
    from proofdiff.report.writer import write_report
    from tests.conftest import job, run

    def with_gpu(r: RunRecord, tel: GpuTelemetry) -> RunRecord:
        assert r.daemon is not None
        return replace(r, daemon=replace(r.daemon, gpu=tel))

    read = GpuTelemetry(source="nvml", gpus={"GPU-1234abcd": "NVIDIA H200"}, samples=tuple(
        GpuSample(t_s=float(t), uuid="GPU-1234abcd", util_pct=u, mem_used_bytes=2 << 30,
                  sm_clock_mhz=1980, temp_c=40, power_w=500.0) for t, u in enumerate((0, 97, 99))))
    bench = with_gpu(run("bench", [job(0)]), read)
    prod = with_gpu(run("prod", [job(0)]), GpuTelemetry(source="none: NVML sees no GPU"))
    res = assemble(run_id="r-gpu", profiles={}, records=[], runs=[bench, prod])
    html = (write_report(res, tmp_path) / "index.html").read_text(encoding="utf-8")
    gpu = html[html.index("GPU telemetry"):html.index("Config delta")]
    assert "GPU-1234abcd" in gpu and "65.3 / 99" in gpu and "<svg" in gpu
    assert "not sampled: NVML sees no GPU" in gpu
