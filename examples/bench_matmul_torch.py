"""torch matmul against a naive broadcast-multiply-reduce matmul (the same math, unfused).

    profaudit bench run examples/bench_matmul_torch.py -o out/matmul
    profaudit bench compare out/matmul --baseline naive --candidate torch

Inputs are scaled by 1/sqrt(K) so outputs are of order one and the fp32 tolerance means what it
says. Runs in seconds on a CPU; on a GPU the same file times CUDA events with a cold L2.
"""

import torch

from profaudit import bench


def inputs(p, gen):
    n = p["n"]
    scale = n ** -0.5
    return gen.randn((n, n), p["dtype"], scale=scale), gen.randn((n, n), p["dtype"], scale=scale)


def naive(a, b):
    # every product materialised, then summed: n^3 memory traffic instead of a tiled GEMM
    return (a[:, :, None] * b[None, :, :]).sum(dim=1)


MATMUL = bench.Benchmark(
    "matmul",
    backend="torch",
    inputs=inputs,
    reference=lambda a, b: a @ b,  # runs on float64 copies of the inputs
    variants={"naive": naive, "torch": torch.matmul},
    params=bench.grid(n=[128, 256], dtype=["float32"]),
    flops=lambda p: 2 * p["n"] ** 3,
    bytes=lambda p: 3 * p["n"] ** 2 * 4,
    op="matmul",  # the audit recomputes 2*M*N*K from the recorded input shapes and checks `flops`
    baseline="naive",
    description="C = A @ B, square fp32",
)
