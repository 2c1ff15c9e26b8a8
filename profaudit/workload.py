"""Useful FLOPs and minimum bytes of a call, recomputed from its operation, shape and dtype.

FAIRNESS P3 asks for F and W recomputed from shapes rather than taken from the author's formula
(triton PR #1849: a causal attention kernel credited with the non-causal FLOP count). The
formulas are the conventional ones every GEMM/attention paper and library benchmark uses:

========================  ===============================  ==========================================
op                        F (useful FLOPs)                 W (minimum bytes: each operand once)
========================  ===============================  ==========================================
matmul / gemm / mm /      2·B·M·N·K                        B·(M·K + K·N + M·N)·s
linear / bmm
attention                 4·B·H·Sq·Skv·D                   B·H·(2·Sq·D + 2·Skv·D)·s  (Q, K, V, O)
causal_attention          half of the above                as attention
softmax, layernorm,       null (conventions differ; these  2·numel·s  (read once, write once)
rmsnorm, unary            ops are bound by bytes)
binary (add, mul, ...)    numel                            3·numel·s
========================  ===============================  ==========================================

s is the element size of the dtype. Shapes are read as:

- matmul: a mapping {M, N, K} (optional B/batch), the operand shapes [[..., M, K], [..., K, N]]
  (leading dimensions are batch; the inner K must agree), or three numbers read as M, N, K (the
  BLAS order, also 'MxNxK');
- attention: a mapping {B, H, S (or Sq/seq_len/N), D (or head_dim)} with an optional Skv;
  or four numbers [B, H, S, D];
- the memory-bound ops: the tensor's shape (a list, or a mapping whose values are multiplied), or
  the operands' shapes [[...], [...]] (the largest is the tensor).

Anything else is None with the reason, never a guess.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any, Mapping

ELEMENT_BYTES = {"fp64": 8.0, "fp32": 4.0, "tf32": 4.0, "fp16": 2.0, "bf16": 2.0, "fp8": 1.0, "int8": 1.0, "fp4": 0.5, "int4": 0.5}

_MATMUL = {"matmul", "gemm", "mm", "linear", "bmm", "batched_matmul", "dense", "dot"}
_ATTENTION = {"attention", "sdpa", "flash_attention", "mha", "scaled_dot_product_attention"}
_CAUSAL = {"causal_attention", "causal_sdpa", "causal_flash_attention", "causal_mha"}
_UNARY = {"softmax", "layernorm", "layer_norm", "rmsnorm", "rms_norm", "unary", "elementwise_unary", "copy", "gelu", "relu", "silu", "exp", "scale"}
_BINARY = {"binary", "elementwise_binary", "add", "mul", "sub", "div", "vector_add", "axpy"}

OPS = tuple(sorted(_MATMUL | _ATTENTION | _CAUSAL | _UNARY | _BINARY))


@dataclass(frozen=True)
class Workload:
    flops: float | None
    bytes: float
    formula: str  # how F and W were computed, with the numbers, e.g. "F = 2*M*N*K (M=4096, ...)"


def normalise_op(op: Any) -> str:
    return re.sub(r"[\s\-]+", "_", str(op).strip().lower())


def from_shape(op: Any, shape: Any, dtype: str | None) -> tuple[Workload | None, str]:
    """(Workload, "") or (None, why not). `shape` may be the claim's canonical JSON text."""
    name = normalise_op(op)
    if dtype is None:
        return None, "no dtype recorded (the element size sets the bytes)"
    s = ELEMENT_BYTES.get(str(dtype))
    if s is None:
        return None, f"no element size known for dtype {dtype!r}"
    value = _decode(shape)
    if value is None:
        return None, f"shape {shape!r} is not a list or mapping of sizes"
    if name in _MATMUL:
        return _matmul(value, s)
    if name in _ATTENTION or name in _CAUSAL:
        return _attention(value, s, causal=name in _CAUSAL)
    if name in _UNARY or name in _BINARY:
        numel = _numel(value)
        if numel is None:
            return None, f"shape {shape!r} is not a tensor shape (positive integer sizes)"
        if name in _BINARY:
            return Workload(float(numel), 3.0 * numel * s, f"F = numel, W = 3*numel*{s:g} B (numel={numel:,})"), ""
        return Workload(None, 2.0 * numel * s, f"W = 2*numel*{s:g} B (numel={numel:,}); F not counted for {name}"), ""
    return None, f"no FLOP/byte formula for op {op!r} (known: {', '.join(OPS)})"


def _decode(shape: Any) -> Any:
    if isinstance(shape, str):
        text = shape.strip()
        try:
            return json.loads(text)
        except ValueError:
            parts = [p for p in re.split(r"\s*[x×*,]\s*|\s+", text.strip("()[] ")) if p]
            return [int(p) for p in parts] if parts and all(p.isdigit() for p in parts) else None
    return shape if isinstance(shape, (list, tuple, Mapping)) else None


def _pos_int(v: Any) -> int | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, float) and v.is_integer():
        v = int(v)
    if isinstance(v, str) and v.strip().isdigit():
        v = int(v)
    return v if isinstance(v, int) and v > 0 else None


def _lookup(m: Mapping, *names: str) -> int | None:
    low = {str(k).strip().lower(): v for k, v in m.items()}
    for n in names:
        if n in low:
            return _pos_int(low[n])
    return None


def _numel(value: Any) -> int | None:
    if isinstance(value, (list, tuple)) and value and all(isinstance(x, (list, tuple)) for x in value):
        # operand shapes (as the bench harness records them): the largest operand is the tensor
        sizes = [_numel(x) for x in value]
        return None if any(n is None for n in sizes) else max(sizes)
    dims = list(value.values()) if isinstance(value, Mapping) else list(value)
    ints = [_pos_int(d) for d in dims]
    if not ints or any(i is None for i in ints):
        return None
    return math.prod(ints)


def _matmul(value: Any, s: float) -> tuple[Workload | None, str]:
    batch = 1
    if isinstance(value, Mapping):
        m, n, k = _lookup(value, "m"), _lookup(value, "n"), _lookup(value, "k")
        b = _lookup(value, "b", "batch", "batch_size")
        batch = b or 1
        if None in (m, n, k):
            return None, "a matmul shape mapping needs M, N and K"
    elif len(value) == 2 and all(isinstance(x, (list, tuple)) for x in value):
        a, bm = [list(map(_pos_int, x)) for x in value]
        if len(a) < 2 or len(bm) < 2 or None in a or None in bm:
            return None, "matmul operand shapes need two or more positive sizes each"
        if a[-1] != bm[-2]:
            return None, f"matmul operands {value[0]} and {value[1]} do not share K ({a[-1]} vs {bm[-2]})"
        m, k, n = a[-2], a[-1], bm[-1]
        batch = max(math.prod(a[:-2]) if len(a) > 2 else 1, math.prod(bm[:-2]) if len(bm) > 2 else 1)
    elif len(value) in (3, 4) and all(_pos_int(x) for x in value):
        dims = [_pos_int(x) for x in value]
        if len(dims) == 4:
            batch, m, n, k = dims
        else:
            m, n, k = dims
    else:
        return None, "a matmul shape is {M, N, K}, [[M, K], [K, N]] or [M, N, K]"
    flops = 2.0 * batch * m * n * k
    nbytes = batch * (m * k + k * n + m * n) * s
    bt = f"B={batch:,}, " if batch != 1 else ""
    return Workload(flops, nbytes, f"F = 2*B*M*N*K, W = B*(M*K + K*N + M*N)*{s:g} B ({bt}M={m:,}, N={n:,}, K={k:,})"), ""


def _attention(value: Any, s: float, causal: bool) -> tuple[Workload | None, str]:
    if isinstance(value, Mapping):
        b = _lookup(value, "b", "batch", "batch_size") or 1
        h = _lookup(value, "h", "heads", "num_heads", "nheads")
        sq = _lookup(value, "sq", "s", "seq_len", "seqlen", "n", "seq_q", "l")
        skv = _lookup(value, "skv", "seq_kv", "seqlen_kv", "s_kv") or sq
        d = _lookup(value, "d", "head_dim", "headdim", "dim_head")
        if None in (h, sq, d):
            return None, "an attention shape mapping needs H, S (seq_len) and D (head_dim)"
    elif len(value) == 4 and all(_pos_int(x) for x in value):
        b, h, sq, d = (_pos_int(x) for x in value)
        skv = sq
    else:
        return None, "an attention shape is {B, H, S, D} or [B, H, S, D]"
    flops = 4.0 * b * h * sq * skv * d * (0.5 if causal else 1.0)
    nbytes = b * h * (2 * sq * d + 2 * skv * d) * s
    what = "F = 2*B*H*Sq*Skv*D (causal: half of 4*B*H*Sq*Skv*D)" if causal else "F = 4*B*H*Sq*Skv*D"
    return Workload(flops, nbytes, f"{what}, W = B*H*(2*Sq*D + 2*Skv*D)*{s:g} B (B={b:,}, H={h:,}, Sq={sq:,}, Skv={skv:,}, D={d:,})"), ""


__all__ = ["Workload", "from_shape", "normalise_op", "OPS", "ELEMENT_BYTES"]
