"""A jitted JAX matmul against a naive broadcast-multiply-reduce formulation of the same product.

    profaudit bench run examples/bench_jax_matmul.py -o out/jax
    profaudit bench compare out/jax --baseline naive --candidate matmul

Each variant is jax.jit-ed and compiled ahead of time (lower().compile()) before any timing, so
compilation is never timed; every timed call ends in block_until_ready. XLA's cost_analysis()
of the compiled program is attached to each log (meta xla_cost_analysis, as profaudit.xla does). The reference
gets float64 numpy arrays (JAX computes in float32 unless x64 is enabled), so it is numpy.
"""

import jax.numpy as jnp
import numpy as np

from profaudit import bench


def inputs(p, gen):
    m, k, n = p["m"], p["k"], p["n"]
    return gen.randn((m, k), p["dtype"], scale=k ** -0.5), gen.randn((k, n), p["dtype"], scale=k ** -0.5)


MATMUL = bench.Benchmark(
    "jax_matmul",
    backend="jax",
    inputs=inputs,
    reference=lambda a, b: np.matmul(a, b),
    variants={
        # XLA fuses this into one loop nest, but without the dot emitter's tiling
        "naive": bench.Variant(lambda a, b: (a[:, :, None] * b[None, :, :]).sum(axis=1), compile_mode="jit"),
        "matmul": bench.Variant(jnp.matmul, compile_mode="jit"),
    },
    params=bench.grid(m=[256], k=[256], n=[256], dtype=["float32"]),
    flops=lambda p: 2 * p["m"] * p["k"] * p["n"],
    bytes=lambda p: 4 * (p["m"] * p["k"] + p["k"] * p["n"] + p["m"] * p["n"]),
    op="matmul",
    baseline="naive",
)
