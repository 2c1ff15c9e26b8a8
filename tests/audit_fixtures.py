"""Synthetic but realistic benchmark evidence for the audit tests: a clean, fair H100 comparison
and one deliberately unfair variant per rule. Times are nanoseconds, clocks MHz."""

from __future__ import annotations

import numpy as np
import polars as pl

from profaudit.audit import Claim, Side, parse_statistic
from profaudit.profile import Profile, ProfileSet

H100 = "NVIDIA H100 80GB HBM3"
A100 = "NVIDIA A100-SXM4-80GB"
UUID = "GPU-5f3c9a2e-8d1b-4c7a-9e0f-2b6d4a1c3e58"

FAIR_META = {
    "device": H100,
    "device_uuid": UUID,
    "mig_profile": "none",
    "driver": "550.54.15",
    "cuda_version": "12.4",
    "dtype": "bf16",
    "shape": [4, 8192, 8192],
    "batch_size": 4,
    "compile_mode": "max-autotune",
    "cuda_graphs": False,
    "framework": "torch 2.4.0",
    "versions": {"torch": "2.4.0", "triton": "3.0.0"},
    "time_source": "cuda_events",
    "synchronized": True,
    "l2_flush": True,
    "clock_control": "none",
    "warmup_iterations": 25,
    "repetitions": 3,
    "interleaved": True,
    "power_limit_w": 700,
    "host_governor": "performance",
    "cpu_turbo": True,
    "other_gpu_processes": 0,
    "gpu_util_before_pct": 0,
    "correctness_checked": "after_timing",
    "rtol": 1e-2,
    "atol": 1e-2,
    "timed_range": "timed",
    "profiled_calls": 20,
}
# 4 x 8192 x 8192 bf16 read + written once: the minimum traffic of a softmax over it (1.07 GB,
# 320 us at H100's 3.35 TB/s, so the 0.5 ms candidate runs at 64 % of the DRAM roof).
FAIR_WORKLOAD = {"bytes": 2 * 4 * 8192 * 8192 * 2.0}


def times(median_ns: float, n: int, rng: np.random.Generator, sigma: float = 0.02) -> np.ndarray:
    return rng.lognormal(np.log(median_ns), sigma, n)


def trace(per_call_ns: float, calls: int, *, stream: int = 7, one_time: dict | None = None, name: str = "softmax_kernel", extra_stream_share: float = 0.0, device: str = H100) -> ProfileSet:
    """An nsys-like profile: `calls` timed NVTX ranges, one kernel each on `stream`."""
    gap = 2_000.0
    starts = np.arange(calls) * (per_call_ns + 20_000.0) + 1e6
    k = {
        "kernel_id": list(range(calls)),
        "name": [name] * calls,
        "short_name": [name] * calls,
        "stream": [stream] * calls,
        "start_ns": (starts + gap).astype(np.int64),
        "end_ns": (starts + gap + per_call_ns).astype(np.int64),
        "duration_ns": [per_call_ns] * calls,
        "source": ["nsys"] * calls,
        "device_name": [device] * calls,
    }
    kdf = pl.DataFrame(k)
    if extra_stream_share:
        side = kdf.with_columns(
            (pl.col("kernel_id") + calls).alias("kernel_id"),
            pl.lit(14, dtype=pl.Int64).alias("stream"),
            pl.lit("helper_kernel").alias("name"),
            pl.lit("helper_kernel").alias("short_name"),
            (pl.col("duration_ns") * extra_stream_share / (1 - extra_stream_share)).alias("duration_ns"),
        )
        kdf = pl.concat([kdf, side.with_columns((pl.col("start_ns") + pl.col("duration_ns").cast(pl.Int64)).alias("end_ns"))])
    ranges = {
        "range_id": list(range(calls)),
        "kind": ["nvtx_push_pop"] * calls,
        "name": ["timed"] * calls,
        "start_ns": starts.astype(np.int64),
        "end_ns": (starts + per_call_ns + 2 * gap).astype(np.int64),
    }
    rdf = pl.DataFrame(ranges)
    if one_time:
        rows = []
        rid = calls
        for api, share in one_time.items():
            for s in starts[: calls // 2]:
                rows.append({"range_id": rid, "kind": "cuda_driver", "name": api, "start_ns": int(s + 100), "end_ns": int(s + 100 + share * (per_call_ns + 2 * gap) * 2)})
                rid += 1
        rdf = pl.concat([rdf, pl.DataFrame(rows)])
    prof = Profile("trace-" + name, {"source": "nsys", "tool": "nsys", "device_name": device, "path": f"{name}.nsys-rep"}, {"kernels": kdf, "ranges": rdf})
    return ProfileSet([prof])


def side(
    role: str,
    median_ns: float,
    *,
    seed: int,
    n: int = 50,
    runs: int = 3,
    sigma: float = 0.02,
    meta: dict | None = None,
    drop: tuple[str, ...] = (),
    values: np.ndarray | None = None,
    clock: float | np.ndarray = 1980.0,
    temperature: float = 62.0,
    throttle: list | None = None,
    device_column: str | None = H100,
    profiles: ProfileSet | None | str = "auto",
    run_offsets: tuple[float, ...] | None = None,
    timestamps: np.ndarray | None = None,
) -> Side:
    rng = np.random.default_rng(seed)
    if values is None:
        offs = run_offsets or tuple(1.0 + 0.002 * (i - 1) for i in range(runs))
        values = np.concatenate([times(median_ns * o, n, rng, sigma) for o in offs])
        run = np.repeat(np.arange(len(offs)), n)
    else:
        run = np.zeros(values.size, dtype=np.int64)
    total = values.size
    m = dict(FAIR_META)
    m.update(meta or {})
    for k in drop:
        m.pop(k, None)
    clocks = np.broadcast_to(np.asarray(clock, dtype=float), (total,)).copy() + rng.normal(0, 2.0, total)
    cols = {
        "run": run,
        "sm_clock_mhz": clocks,
        "temperature_c": rng.normal(temperature, 0.4, total),
        "throttle_reasons": throttle if throttle is not None else ["none"] * total,
    }
    if device_column:
        cols["device_name"] = [device_column] * total
    if timestamps is not None:
        cols["timestamp_ns"] = np.asarray(timestamps, dtype=float)
    if profiles == "auto":
        profiles = trace(float(np.median(values)) * 0.96, 20, device=device_column or H100)
    return Side.from_durations(role, values, label=role, meta=m, profiles=profiles, **cols)


def claim(b: Side, c: Side, *, speedup: float | None = 2.0, statistic: str | None = "median", workload: dict | None = None, intended=()) -> Claim:
    return Claim(
        b,
        c,
        speedup=speedup,
        speedup_text=None if speedup is None else repr(speedup),
        statistic=parse_statistic(statistic),
        description="fused softmax vs torch.compile softmax",
        workload=dict(FAIR_WORKLOAD if workload is None else workload),
        intended_differences=tuple(intended),
    )


def fair_claim(**kw) -> Claim:
    """A clean, fair benchmark: same device, board, precision, shape, harness; flushed L2; 3 runs of
    50 iterations per side; candidate 2.0x faster with 2 % lognormal noise; nsys trace attached."""
    return claim(side("baseline", 1.0e6, seed=1), side("candidate", 0.5e6, seed=2), **kw)


def ratio(b: Side, c: Side, fb, fc) -> float:
    tb = b.samples["duration_ns"].to_numpy()
    tc = c.samples["duration_ns"].to_numpy()
    return round(float(fb(tb) / fc(tc)), 2)
