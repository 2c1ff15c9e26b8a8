"""What a GPU activity is (computation, communication, memory), what collective a communication
kernel performs, and the nccl-tests size and bus-bandwidth factor of each collective.

Classification follows Holistic Trace Analysis (`hta/utils/utils.py`): a kernel whose name starts
with `nccl`/`rccl` and contains `Kernel` communicates, `Memcpy`/`Memset`/`dma` names and the
transfers table move memory, everything else computes. Sizes and factors follow nccl-tests'
doc/PERFORMANCE.md: algbw = size / time; busbw = algbw x 2(n-1)/n for all-reduce, (n-1)/n for
all-gather, reduce-scatter and all-to-all, 1 for broadcast, reduce and point-to-point, where
`size` is the all-gather output, the reduce-scatter input, the buffer otherwise.
"""

from __future__ import annotations

import polars as pl

COMM_KERNEL_RE = r"(?i)^(nccl|rccl).*kernel"
MEMORY_KERNEL_RE = r"^(Memcpy|Memset|dma)"

# c10 ScalarType names as record_param_comms writes them -> bytes per element
DTYPE_BYTES = {
    "Float": 4, "Double": 8, "Half": 2, "BFloat16": 2, "Long": 8, "Int": 4, "Short": 2, "Char": 1, "Byte": 1,
    "Bool": 1, "ComplexHalf": 4, "ComplexFloat": 8, "ComplexDouble": 16, "UInt16": 2, "UInt32": 4, "UInt64": 8,
    "Float8_e4m3fn": 1, "Float8_e5m2": 1, "Float8_e4m3fnuz": 1, "Float8_e5m2fnuz": 1, "Float8_e8m0fnu": 1,
    "QInt8": 1, "QUInt8": 1, "QInt32": 4,
}

# normalised collective kinds (the order matters: the first whose key is in the squeezed name wins)
_KINDS = (
    ("allreduce", "all_reduce"), ("allgather", "all_gather"), ("reducescatter", "reduce_scatter"),
    ("alltoall", "all_to_all"), ("sendrecv", "send_recv"), ("broadcast", "broadcast"), ("barrier", "barrier"),
    ("reduce", "reduce"), ("gather", "gather"), ("scatter", "scatter"), ("send", "send"), ("recv", "recv"),
)
# collectives whose every member leaves at (nearly) the same moment: usable to align clocks
SYNCHRONISING = ("all_reduce", "all_gather", "reduce_scatter", "all_to_all", "barrier")


def collective_kind(name: pl.Expr) -> pl.Expr:
    """A collective's normalised kind from a record_param_comms name (`allreduce`, `_allgather_base`,
    `all_gather_into_tensor_coalesced`) or an NCCL kernel name (`ncclDevKernel_AllReduce_Sum_f32_RING_LL`)."""
    squeezed = name.str.to_lowercase().str.replace(r"^(nccl|rccl)(dev)?kernel_", "").str.replace_all(r"[^a-z]", "")
    expr = pl.lit(None, dtype=pl.Utf8)
    for key, kind in reversed(_KINDS):
        expr = pl.when(squeezed.str.contains(key, literal=True)).then(pl.lit(kind)).otherwise(expr)
    return pl.when(name.is_null()).then(None).otherwise(expr.fill_null("unknown"))


def algorithm_protocol(kernel_name: pl.Expr) -> tuple[pl.Expr, pl.Expr]:
    """NCCL algorithm and protocol from the kernel name, in either order NCCL has used
    (`ncclKernel_AllReduce_RING_LL_Sum_float`, `ncclDevKernel_AllReduce_Sum_f32_RING_LL`)."""
    pat = r"(?:^|_)(RING|TREE|COLLNET_DIRECT|COLLNET_CHAIN|COLLNET|NVLS_TREE|NVLS|PAT)_(LL128|LL|SIMPLE)(?:_|\(|$)"
    return kernel_name.str.extract(pat, 1), kernel_name.str.extract(pat, 2)


def busbw_factor(kind: pl.Expr, n: pl.Expr) -> pl.Expr:
    n = n.cast(pl.Float64)
    return (
        pl.when(kind == "all_reduce").then(2.0 * (n - 1.0) / n)
        .when(kind.is_in(["all_gather", "reduce_scatter", "all_to_all"])).then((n - 1.0) / n)
        .when(kind.is_in(["broadcast", "reduce", "send", "recv", "send_recv", "gather", "scatter"])).then(1.0)
        .otherwise(None)
    )


def msg_bytes(kind: pl.Expr, in_nelems: pl.Expr, out_nelems: pl.Expr, dtype: pl.Expr) -> pl.Expr:
    """nccl-tests' `size`: all-gather's output, reduce-scatter's input (the larger of the two buffers
    whichever way a PyTorch version recorded them), the buffer itself for the others."""
    size = dtype.replace_strict(DTYPE_BYTES, default=None, return_dtype=pl.Float64)
    big = pl.max_horizontal(in_nelems, out_nelems).cast(pl.Float64)
    nelems = (
        pl.when(kind.is_in(["all_gather", "reduce_scatter", "send", "recv", "send_recv", "gather", "scatter"])).then(big)
        .otherwise(pl.coalesce(in_nelems, out_nelems).cast(pl.Float64))
    )
    return nelems * size
