"""The fp32 vector-FMA ceiling kernel (Triton, CUDA only; imported by profaudit.bench.ceilings).

Triton kernels must live in a .py file of their own, and importing triton is slow: this module is
imported only when the ceilings run on a CUDA device with triton installed.

Each element runs ITERS dependent `y = y * a + b` steps in registers (one FMA each: Triton fuses
a multiply and an add into an FMA by default); BLOCK elements per program give every thread
several independent chains, so FMA latency is hidden and the kernel is bound by FMA throughput,
not memory (it reads and writes each element once: 8 bytes per 2 * ITERS FLOPs). `a` and `b` are
runtime arguments, so the compiler cannot fold the chain.
"""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def fma_chain_kernel(x_ptr, out_ptr, n, a, b, ITERS: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    y = tl.load(x_ptr + offs, mask=mask)
    for _ in range(ITERS):
        y = y * a + b
    tl.store(out_ptr + offs, y, mask=mask)


def fma_chain(x, out, a: float, b: float, iters: int, block: int = 1024) -> None:
    n = x.numel()
    fma_chain_kernel[(triton.cdiv(n, block),)](x, out, n, a, b, ITERS=iters, BLOCK=block, num_warps=4)
