"""GPU-sized benchmark cases for benchmarks/gpu_capture.sh (the examples/ files are CPU-sized).

Each case exercises a GPU path of the harness that CPU tests only reach with fakes:

- gpu_matmul: torch fp16 matmul, eager against the same call captured in a CUDA graph (real
  capture/replay; the cold-cache flush outside the graph);
- gpu_tiny_add: a 16 KiB add, microseconds per call: eager launches against a CUDA graph, hot
  cache, timed per call behind the blocking kernel (host launch latency must not show);
- gpu_vector_add, gpu_softmax: the Triton kernels of examples/triton_kernels.py against torch;
- gpu_autograd: a forward+backward whose backward kernels autograd launches from its own thread
  (the ncu NVTX range must still see them: a start/end range, not push/pop);
- gpu_jax_matmul: jitted JAX fp32 matmul against the same math run eagerly (compile_mode="eager"
  really un-jitted), ncu filtering in the `profaudit` NVTX domain when the nvtx package is there.

Working sets exceed twice the L2 of current GPUs where the kernel is memory-bound, and timings run
cold (L2 flushed before each call) unless the case says hot.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))

import numpy as np  # noqa: E402

from profaudit import bench  # noqa: E402

BENCHMARKS = []

try:
    import torch

    HAVE_CUDA_TORCH = torch.cuda.is_available()
except ImportError:
    HAVE_CUDA_TORCH = False

if HAVE_CUDA_TORCH:

    def _mm_inputs(p, gen):
        n = p["n"]
        return gen.randn((n, n), p["dtype"], scale=n ** -0.5), gen.randn((n, n), p["dtype"], scale=n ** -0.5)

    BENCHMARKS.append(
        bench.Benchmark(
            "gpu_matmul",
            backend="torch",
            inputs=_mm_inputs,
            reference=lambda a, b: a @ b,  # float64 on the GPU
            variants={"torch": torch.matmul, "torch_graph": bench.Variant(torch.matmul, cuda_graphs=True)},
            params=bench.grid(n=[4096], dtype=["float16"]),
            flops=lambda p: 2 * p["n"] ** 3,
            bytes=lambda p: 3 * p["n"] ** 2 * 2,
            baseline="torch",
        )
    )

    BENCHMARKS.append(
        bench.Benchmark(
            "gpu_tiny_add",
            backend="torch",
            inputs=lambda p, gen: (gen.randn(p["n"], "float32"), gen.randn(p["n"], "float32")),
            reference=lambda x, y: x + y,
            variants={"torch": torch.add, "torch_graph": bench.Variant(torch.add, cuda_graphs=True)},
            params=bench.grid(n=[4096]),
            cache="hot",
            flops=lambda p: p["n"],
            bytes=lambda p: 3 * p["n"] * 4,
            baseline="torch",
        )
    )

    def _fwd_bwd(x, w):
        # d/dw sum((x @ w)^2) = 2 x^T (x @ w); the backward kernels run on autograd's thread
        w2 = w.detach().requires_grad_(True)
        loss = (x @ w2).square().sum()
        (g,) = torch.autograd.grad(loss, w2)
        return g

    BENCHMARKS.append(
        bench.Benchmark(
            "gpu_autograd",
            backend="torch",
            inputs=lambda p, gen: (gen.randn((p["n"], p["n"]), "float32", scale=p["n"] ** -0.5), gen.randn((p["n"], p["n"]), "float32", scale=p["n"] ** -0.5)),
            reference=lambda x, w: 2 * x.T @ (x @ w),
            variants={"fwd_bwd": bench.Variant(_fwd_bwd, tf32=False)},
            params=bench.grid(n=[2048]),
            atol=1e-3,
            rtol=1e-3,
        )
    )

    try:
        import triton  # noqa: F401

        from triton_kernels import softmax, torch_add, torch_softmax, vector_add

        BENCHMARKS.append(
            bench.Benchmark(
                "gpu_vector_add",
                backend="triton",
                inputs=lambda p, gen: (gen.randn(p["n"], p["dtype"]), gen.randn(p["n"], p["dtype"])),
                output=lambda p, ins: torch.empty_like(ins[0]),
                reference=lambda x, y: x + y,
                variants={"torch": torch_add, "triton": vector_add},
                params=bench.grid(n=[1 << 26], dtype=["float32"]),
                flops=lambda p: p["n"],
                bytes=lambda p: 3 * p["n"] * 4,
                baseline="torch",
            )
        )
        BENCHMARKS.append(
            bench.Benchmark(
                "gpu_softmax",
                backend="triton",
                inputs=lambda p, gen: (gen.randn((p["rows"], p["cols"]), p["dtype"]),),
                output=lambda p, ins: torch.empty_like(ins[0]),
                reference=lambda x: torch.softmax(x, dim=-1),
                variants={"torch": torch_softmax, "triton": softmax},
                params=bench.grid(rows=[8192], cols=[4096], dtype=["float32"]),
                flops=lambda p: 5 * p["rows"] * p["cols"],
                bytes=lambda p: 2 * p["rows"] * p["cols"] * 4,
                baseline="torch",
            )
        )
    except ImportError:
        pass

try:
    import jax

    HAVE_JAX_GPU = any(d.platform == "gpu" for d in jax.devices())
except Exception:  # jax absent or without a GPU plugin
    HAVE_JAX_GPU = False

if HAVE_JAX_GPU:
    import jax.numpy as jnp

    def _jmm_inputs(p, gen):
        n = p["n"]
        return gen.randn((n, n), p["dtype"], scale=n ** -0.5), gen.randn((n, n), p["dtype"], scale=n ** -0.5)

    BENCHMARKS.append(
        bench.Benchmark(
            "gpu_jax_matmul",
            backend="jax",
            inputs=_jmm_inputs,
            reference=lambda a, b: np.matmul(a, b),  # float64 numpy on the host
            variants={
                "jax": bench.Variant(jnp.matmul, compile_mode="jit"),
                # the same product, dispatched op by op (not jitted): eager vs compiled on purpose
                "jax_eager": bench.Variant(lambda a, b: jnp.sum(a[:, :, None] * b[None, :, :], axis=1), compile_mode="eager"),
            },
            params=bench.grid(n=[512], dtype=["float32"]),
            flops=lambda p: 2 * p["n"] ** 3,
            bytes=lambda p: 3 * p["n"] ** 2 * 4,
        )
    )
