"""Row softmax on the CPU, three ways, for the example claims (see ../make_claims.py).

naive       exp(x - rowmax) / rowsum as four separate tensor passes (each materialises a temporary)
torch       torch.softmax (one fused pass per row)
functional  torch.nn.functional.softmax: the same kernel as `torch`, reached another way
"""

import torch

from profaudit import bench

# One intra-op thread: on a small shared VM a multithreaded CPU op waits for threads that other
# processes hold, and its time measures the scheduler (tens of ms for a 1 ms op).
torch.set_num_threads(1)


def inputs(p, gen):
    return (gen.randn((p["rows"], p["cols"]), p["dtype"]),)


def naive(x):
    m = x.max(dim=-1, keepdim=True).values
    e = torch.exp(x - m)
    return e / e.sum(dim=-1, keepdim=True)


SOFTMAX = bench.Benchmark(
    "softmax",
    backend="torch",
    inputs=inputs,
    reference=lambda x: torch.softmax(x, dim=-1),  # evaluated on float64 copies of the inputs
    variants={"naive": naive, "torch": lambda x: torch.softmax(x, dim=-1), "functional": lambda x: torch.nn.functional.softmax(x, dim=-1)},
    params=bench.grid(rows=[1024], cols=[1024], dtype=["float32", "bfloat16"]),
    flops=lambda p: 5 * p["rows"] * p["cols"],
    bytes=lambda p: 2 * p["rows"] * p["cols"] * (4 if p["dtype"] == "float32" else 2),
    baseline="naive",
    description="row softmax of a rows x cols matrix",
)
