"""Timing-log ingestion speed: profaudit's readers against plain polars reads of the same files.

Baselines, measured in the same run: `polars.read_csv` of the CSV (no role detection, no unit
conversion, no params), and `polars.read_ndjson` of the profaudit timing log's body. The ratio says
what column recognition, validation and canonical params cost on top of the raw parse.

    .venv/bin/python benchmarks/bench_timing.py [rows]
"""

from __future__ import annotations

import io
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import polars as pl

from profaudit.loader import load
from profaudit.timinglog import write_timing_log


def _best(fn, repeat=3):
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def main(n: int = 1_000_000) -> None:
    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory() as d:
        d = Path(d)
        df = pl.DataFrame({
            "benchmark": np.where(rng.random(n) < 0.5, "softmax", "layernorm"),
            "variant": np.where(rng.random(n) < 0.5, "torch", "triton"),
            "N": rng.choice([1024, 4096, 16384], n),
            "dtype": np.where(rng.random(n) < 0.5, "fp16", "bf16"),
            "iter": np.arange(n),
            "time_ms": rng.gamma(5.0, 0.02, n),
            "sm_clock_mhz": rng.choice([1755.0, 1980.0], n),
            "power_w": rng.normal(500, 20, n),
        })
        csv_path = d / "log.csv"
        df.write_csv(csv_path)
        t_base = _best(lambda: pl.read_csv(csv_path))
        t_ours = _best(lambda: load(csv_path, parallel=False))
        print(f"CSV {n:,} rows ({csv_path.stat().st_size / 1e6:.0f} MB): polars.read_csv {t_base:.3f} s, profaudit load {t_ours:.3f} s, ratio {t_ours / t_base:.2f}x")

        samples = pl.DataFrame({
            "benchmark": df["benchmark"], "variant": df["variant"], "params": pl.Series(["{\"N\":1024}"] * n), "iteration": df["iter"],
            "duration_ns": df["time_ms"] * 1e6, "sm_clock_mhz": df["sm_clock_mhz"], "phase": pl.Series(["measure"] * n),
        })
        log = d / "run.jsonl"
        t_write = _best(lambda: write_timing_log(log, samples, {"device_name": "X"}), repeat=1)
        body = log.read_bytes().split(b"\n", 1)[1]
        t_base2 = _best(lambda: pl.read_ndjson(io.BytesIO(body)))
        t_ours2 = _best(lambda: load(log, parallel=False))
        print(f"timing log {n:,} rows ({log.stat().st_size / 1e6:.0f} MB): write {t_write:.3f} s; polars.read_ndjson {t_base2:.3f} s, profaudit load {t_ours2:.3f} s, ratio {t_ours2 / t_base2:.2f}x")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000)
