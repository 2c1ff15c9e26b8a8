"""Inputs for the dashboard tests and benchmark, written with profaudit's own writers.

`make_inputs(root)` lays out:

    root/data/                     the folder the dashboard is given
        profiles/                  a profaudit dataset: gemm-before and gemm-after (kernels + metrics)
        logs/baseline.jsonl        profaudit timing logs: warm-up, drift, throttling, clocks, temps
        logs/candidate.jsonl
        logs/escape.jsonl          a symlink to ../../outside/secret.jsonl (when symlinks work)
        claims/good.yaml           a claim over the two logs
        claims/evil_abs.yaml       claims naming files outside data/ (absolute, ../, symlink, glob)
        claims/evil_rel.yaml
        claims/evil_link.yaml
        claims/evil_glob.yaml
    root/outside/secret.jsonl      a valid timing log outside data/: reading it would be a breach
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import polars as pl

from profaudit.dataset import write_dataset
from profaudit.profile import Profile, ProfileSet
from profaudit.timinglog import write_timing_log

H100 = "NVIDIA H100 80GB HBM3"
KERNEL_NAMES = (
    "void cutlass::Kernel<cutlass_80_tensorop_f16_s16816gemm_f16_128x128_32x3_nn_align8>(Params)",
    "void softmax_warp_forward<float, float, float, 10, false>(float*, const float*, int, int, int)",
    "void at::native::vectorized_elementwise_kernel<4, at::native::AddFunctor<float>>(int, AddFunctor<float>)",
    "void layer_norm_fwd_kernel<float>(const float*, float*, int)",
)
SHORT = ("cutlass::Kernel", "softmax_warp_forward", "at::native::vectorized_elementwise_kernel", "layer_norm_fwd_kernel")


def kernels_frame(n: int, *, speed: float = 1.0, seed: int = 0, with_metrics: bool = True) -> tuple[pl.DataFrame, pl.DataFrame]:
    """`n` kernel executions on an H100 with FLOPs, bytes and clocks (as Nsight Compute records
    them), and their long-form metrics."""
    rng = np.random.default_rng(seed)
    which = np.arange(n) % len(KERNEL_NAMES)
    base = np.array([180_000.0, 22_000.0, 9_000.0, 14_000.0])[which] / speed
    dur = base * rng.lognormal(0, 0.05, n)
    flops16 = np.where(which == 0, 2 * 4096.0**3 / 16, np.nan)
    flops32 = np.where(which == 0, np.nan, np.array([0, 5e6, 1e6, 4e6])[which] * rng.uniform(0.9, 1.1, n))
    dram = np.array([1.6e8, 3.4e7, 2.4e7, 3.0e7])[which] * rng.uniform(0.9, 1.1, n)
    start = np.cumsum(dur + 2_000.0).astype(np.int64)
    k = pl.DataFrame(
        {
            "source": ["ncu"] * n,
            "device_name": [H100] * n,
            "device_id": [0] * n,
            "kernel_id": np.arange(n, dtype=np.int64),
            "name": [KERNEL_NAMES[i] for i in which],
            "short_name": [SHORT[i] for i in which],
            "stream": [7] * n,
            "start_ns": start,
            "end_ns": start + dur.astype(np.int64),
            "duration_ns": dur,
            "grid_x": np.where(which == 0, 132, 1024).astype(np.int64),
            "grid_y": np.ones(n, dtype=np.int64),
            "grid_z": np.ones(n, dtype=np.int64),
            "block_x": np.where(which == 0, 128, 256).astype(np.int64),
            "block_y": np.ones(n, dtype=np.int64),
            "block_z": np.ones(n, dtype=np.int64),
            "grid_size": np.where(which == 0, 132, 1024).astype(np.int64),
            "block_size": np.where(which == 0, 128, 256).astype(np.int64),
            "registers_per_thread": np.where(which == 0, 232, 32).astype(np.int64),
            "dram_bytes": dram,
            "l2_bytes": dram * 1.6,
            "l1_bytes": dram * 3.1,
            # missing is null, never NaN (what parsers produce)
            "flops_fp32": pl.Series(flops32).fill_nan(None),
            "flops_fp16_tensor": pl.Series(flops16).fill_nan(None),
            "sm_clock_hz": rng.normal(1.59e9, 5e6, n),
            "achieved_occupancy_pct": rng.uniform(20, 90, n),
        }
    )
    if not with_metrics:
        return k, pl.DataFrame()
    m_names = ("sm__throughput.avg.pct_of_peak_sustained_elapsed", "dram__throughput.avg.pct_of_peak_sustained_elapsed", "gpu__time_duration.sum", "launch__registers_per_thread")
    units = ("%", "%", "nsecond", "register/thread")
    reps = len(m_names)
    kid = np.repeat(np.arange(n, dtype=np.int64), reps)
    mi = np.tile(np.arange(reps), n)
    vals = np.where(mi == 2, np.repeat(dur, reps), np.where(mi == 3, np.repeat(k["registers_per_thread"].to_numpy(), reps), rng.uniform(10, 95, n * reps)))
    m = pl.DataFrame(
        {
            "kernel_id": kid,
            "metric": [m_names[i] for i in mi],
            "unit": [units[i] for i in mi],
            "value": vals.astype(np.float64),
            "section": ["SpeedOfLight"] * (n * reps),
            "kind": ["metric"] * (n * reps),
        }
    )
    return k, m


def profile(pid: str, n: int, *, speed: float = 1.0, seed: int = 0, with_metrics: bool = True) -> Profile:
    k, m = kernels_frame(n, speed=speed, seed=seed, with_metrics=with_metrics)
    md = {
        "source": "ncu",
        "format": "ncu-rep",
        "tool": "Nsight Compute",
        "tool_version": "2024.3.2.0",
        "device_name": H100,
        "device_count": 1,
        "driver_version": "550.54.15",
        "cuda_version": "12.4",
        "clock_control": "base",
        "clock_control_origin": "default",
        "cache_control": "all",
        "cache_control_origin": "default",
    }
    tables = {"kernels": k}
    if m.height:
        tables["metrics"] = m
    return Profile(pid, md, tables)


def timing_samples(variant: str, median_ns: float, n: int, *, seed: int, drift: float = 0.0, throttle_every: int = 0) -> pl.DataFrame:
    """`n` iterations after 8 labelled warm-up iterations: a slow first 6 measured iterations (a
    warm-up head the steady-state test finds), optional linear drift and periodic throttling."""
    rng = np.random.default_rng(seed)
    warm = 8
    total = warm + n
    t = median_ns * rng.lognormal(0, 0.01, total)
    t[:warm] *= 3.0
    t[warm : warm + 6] *= 2.2
    t[warm:] *= 1 + drift * np.linspace(0, 1, n)
    clock = np.full(total, 1980.0)
    reasons = np.array(["none"] * total, dtype=object)
    if throttle_every:
        hit = np.arange(total) % throttle_every == throttle_every - 1
        hit[:warm] = False
        clock[hit] = 1300.0
        reasons[hit] = "sw_thermal_slowdown"
        t[hit] *= 1.3
    return pl.DataFrame(
        {
            "benchmark": ["softmax"] * total,
            "variant": [variant] * total,
            "params": ['{"N":4096}'] * total,
            "iteration": np.arange(total, dtype=np.int64),
            "duration_ns": t,
            "timestamp_ns": np.cumsum(t) + 1e9,
            "sm_clock_mhz": clock,
            "temperature_c": np.linspace(48, 71, total),
            "throttle_reasons": reasons.tolist(),
            "phase": ["warmup"] * warm + ["measure"] * n,
            "time_source": ["cuda_events"] * total,
            "device_name": [H100] * total,
            "calls_per_sample": np.ones(total, dtype=np.int64),
        }
    )


# A Kineto trace of a PyTorch model holds names like this one (5,224 characters in the sweep).
LONG = "void at::native::elementwise_kernel<128, 4, at::native::gpu_kernel_impl<" + "at::native::BinaryFunctor<float, float, float, at::native::binary_internal::MulFunctor<float>>, " * 40 + "{}>(int, Params)"
# ROCm traces name composable-kernel instances by their mangled names: 2,000 characters without a
# space (a browser cannot break such a line, which is what stalled the dropdown).
MANGLED = "_ZN2ck16tensor_operation6device37kernel_batched_gemm_xdlops_bwd_weightINS_47GridwiseGemm" + "ILi64EttftLNS_25InMemoryDataOperationEnumE0ELi256ELi128ELi128ELi4ELi8E" * 40 + "Li{}EEEvPKT0_"


def long_name_profile(pid: str, n: int = 40) -> Profile:
    """Kernels named as Kineto traces of PyTorch models name them (30 distinct names of 3,000 to
    4,000 characters that differ only near the end; half mangled), without FLOP counts."""
    k, _ = kernels_frame(n, seed=7, with_metrics=False)
    names = [(LONG if i % 2 else MANGLED).format(i % 30) for i in range(n)]
    k = k.with_columns(pl.Series("name", names), pl.Series("short_name", names), pl.lit(None, pl.Float64).alias("flops_fp32"), pl.lit(None, pl.Float64).alias("flops_fp16_tensor"))
    md = {"source": "pytorch", "format": "kineto", "device_name": LOG_META["device_name"]}
    return Profile(pid, md, {"kernels": k})


LOG_META = {"device_name": H100, "time_source": "cuda_events", "synchronized": True, "l2_flush": True, "dtype": "fp32"}


def write_claim(path: Path, baseline: str, candidate: str, speedup: float = 1.5) -> Path:
    path.write_text(
        f'claim: "fused softmax is {speedup}x faster than eager"\n'
        f"speedup: {speedup}\nstatistic: median\n"
        f"baseline:\n  label: eager\n  timings: {baseline}\n"
        f"candidate:\n  label: fused\n  timings: {candidate}\n",
        encoding="utf-8",
    )
    return path


def make_inputs(root: Path, n_kernels: int = 600) -> dict[str, Path]:
    data = root / "data"
    logs, claims = data / "logs", data / "claims"
    outside = root / "outside"
    for d in (logs, claims, outside):
        d.mkdir(parents=True, exist_ok=True)
    write_dataset(ProfileSet([profile("gemm-before", n_kernels, seed=1), profile("gemm-after", n_kernels, speed=1.25, seed=2)]), data / "profiles")
    write_timing_log(logs / "baseline.jsonl", timing_samples("eager", 50_000.0, 300, seed=3, drift=0.06), LOG_META)
    write_timing_log(logs / "candidate.jsonl", timing_samples("fused", 33_000.0, 300, seed=4, throttle_every=25), LOG_META)
    secret = write_timing_log(outside / "secret.jsonl", timing_samples("secret", 10_000.0, 50, seed=5), LOG_META)
    good = write_claim(claims / "good.yaml", "../logs/baseline.jsonl", "../logs/candidate.jsonl")
    write_claim(claims / "evil_abs.yaml", str(secret), "../logs/candidate.jsonl")
    write_claim(claims / "evil_rel.yaml", "../../outside/secret.jsonl", "../logs/candidate.jsonl")
    write_claim(claims / "evil_glob.yaml", "../../outside/*.jsonl", "../logs/candidate.jsonl")
    out = {"root": root, "data": data, "good": good, "secret": secret, "baseline": logs / "baseline.jsonl", "candidate": logs / "candidate.jsonl", "profiles": data / "profiles"}
    try:
        os.symlink(secret, logs / "escape.jsonl")
        write_claim(claims / "evil_link.yaml", "../logs/escape.jsonl", "../logs/candidate.jsonl")
        out["link"] = logs / "escape.jsonl"
    except OSError:  # pragma: no cover - file systems without symlinks
        pass
    return out
