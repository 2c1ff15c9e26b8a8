"""Reproducible kernel benchmarks and Nsight Compute collection (`profaudit bench`).

    from profaudit import bench
    MATMUL = bench.Benchmark("matmul", backend="torch", inputs=..., reference=..., variants={...},
                             params=bench.grid(n=[256, 512]), flops=lambda p: 2 * p["n"] ** 3)

    manifest = bench.run_file("bench_matmul.py", "out/")              # timing logs + manifest
    outcomes = bench.compare_run("out/", baseline="naive", candidate="torch")   # claims + audits
    plans = bench.ncu_plan("bench_matmul.py", "out/", pattern="n=512") # exact ncu commands
    bench.run_ncu(plans, "out/")                                       # .ncu-rep beside the manifest

The method (correctness, warm-up, cache modes, interleaving, stopping, telemetry) is described in
`profaudit.bench.runner`; the output layout in `profaudit.bench.session`; ncu choices in
`profaudit.bench.ncu`. torch, triton, jax and nvidia-ml-py are imported only when a benchmark
needs them (the `bench` extra).
"""

from profaudit.bench.spec import BACKENDS, CACHE_MODES, Benchmark, Case, Variant, grid, load_benchmarks, select_cases
from profaudit.bench.runner import RunOptions
from profaudit.bench.session import read_manifest, run_cases, run_file
from profaudit.bench.compare import compare_run, dropped_cases
from profaudit.bench.ncu import NcuOptions, ncu_plan, run_ncu

__all__ = [
    "BACKENDS",
    "CACHE_MODES",
    "Benchmark",
    "Case",
    "Variant",
    "grid",
    "load_benchmarks",
    "select_cases",
    "RunOptions",
    "run_file",
    "run_cases",
    "read_manifest",
    "compare_run",
    "dropped_cases",
    "NcuOptions",
    "ncu_plan",
    "run_ncu",
]
