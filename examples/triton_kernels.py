"""Triton kernels for examples/bench_triton.py (Triton needs its kernels in a .py file).

On a machine without an NVIDIA GPU, `profaudit bench run` sets TRITON_INTERPRET=1 before this
module is imported, so the same kernels run in the Triton interpreter (slowly, for tests).
"""

import torch
import triton
import triton.language as tl


@triton.jit
def _add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x + y, mask=mask)


def vector_add(x, y, out):
    n = x.numel()
    grid = (triton.cdiv(n, 1024),)
    _add_kernel[grid](x, y, out, n, BLOCK=1024)
    return out


@triton.jit
def _softmax_kernel(out_ptr, in_ptr, in_row_stride, out_row_stride, n_cols, BLOCK: tl.constexpr):
    # one program per row; the row is held in registers: numerically stable (max subtracted)
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(in_ptr + row * in_row_stride + cols, mask=mask, other=-float("inf"))
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    den = tl.sum(num, axis=0)
    tl.store(out_ptr + row * out_row_stride + cols, num / den, mask=mask)


def softmax(x, out):
    rows, cols = x.shape
    _softmax_kernel[(rows,)](out, x, x.stride(0), out.stride(0), cols, BLOCK=triton.next_power_of_2(cols))
    return out


def torch_add(x, y, out):
    return torch.add(x, y, out=out)


def torch_softmax(x, out):
    return torch.softmax(x, dim=-1, out=out)
