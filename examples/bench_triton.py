"""Triton vector add and row softmax against their torch equivalents.

    profaudit bench run examples/bench_triton.py -o out/triton
    profaudit bench compare out/triton --baseline torch --candidate triton
    profaudit ncu-command examples/bench_triton.py -o out/triton -k softmax --variant triton

Outputs are preallocated (`output=`), so the harness poisons them with NaN before every checked
call: a kernel that skips work fails. Without a GPU the kernels run in the Triton interpreter
(TRITON_INTERPRET=1, set by `profaudit bench run`); those times say nothing about GPU speed and
the logs' device name says "[triton interpreter]".
"""

import torch

from profaudit import bench
from triton_kernels import softmax, torch_add, torch_softmax, vector_add

if not torch.cuda.is_available():
    # interleaved with interpreter calls, torch's second worker thread goes to sleep and its
    # wake-up lands in the torch variant's time; one thread keeps the CPU numbers readable
    # (recorded in the logs: bench.device.torch_num_threads)
    torch.set_num_threads(1)

VECTOR_ADD = bench.Benchmark(
    "vector_add",
    backend="triton",
    inputs=lambda p, gen: (gen.randn(p["n"], p["dtype"]), gen.randn(p["n"], p["dtype"])),
    output=lambda p, ins: torch.empty_like(ins[0]),
    reference=lambda x, y: x + y,
    variants={"torch": torch_add, "triton": vector_add},
    params=bench.grid(n=[16384], dtype=["float32"]),
    flops=lambda p: p["n"],
    bytes=lambda p: 3 * p["n"] * 4,
    op="add",
    baseline="torch",
)

SOFTMAX = bench.Benchmark(
    "softmax",
    backend="triton",
    inputs=lambda p, gen: (gen.randn((p["rows"], p["cols"]), p["dtype"]),),
    output=lambda p, ins: torch.empty_like(ins[0]),
    reference=lambda x: torch.softmax(x, dim=-1),  # float64 copy of x
    variants={"torch": torch_softmax, "triton": softmax},
    params=bench.grid(rows=[32], cols=[256], dtype=["float32"]),
    # max, subtract, exp, sum, divide: ~5 operations per element
    flops=lambda p: 5 * p["rows"] * p["cols"],
    bytes=lambda p: 2 * p["rows"] * p["cols"] * 4,
    op="softmax",
    baseline="torch",
)
