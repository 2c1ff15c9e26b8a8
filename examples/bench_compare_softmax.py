"""A baseline-vs-candidate comparison: an unfused softmax (five torch operators) against the fused
`torch.softmax`, audited end to end.

    profaudit bench run examples/bench_compare_softmax.py -o out/softmax
    profaudit bench compare out/softmax --baseline unfused --candidate fused
    profaudit audit out/softmax/claims/softmax_rows__cols-1024_dtype-float32_rows-256__fused-vs-unfused.yaml

The variants are timed interleaved (unfused, fused, fused, unfused, ...) on the same inputs, under
the same cache mode and precision flags; both are checked against a float64 reference before and
after timing. `bench compare` writes a claim stating the measured ratio of medians and audits it.
"""

import torch

from profaudit import bench


def unfused(x):
    m = x.amax(dim=-1, keepdim=True)
    e = (x - m).exp()
    return e / e.sum(dim=-1, keepdim=True)


def fused(x):
    return torch.softmax(x, dim=-1)


SOFTMAX = bench.Benchmark(
    "softmax_rows",
    backend="torch",
    inputs=lambda p, gen: (gen.randn((p["rows"], p["cols"]), p["dtype"], scale=2.0),),
    reference=lambda x: torch.softmax(x, dim=-1),
    variants={"unfused": unfused, "fused": fused},
    params=bench.grid(rows=[256], cols=[1024], dtype=["float32"]),
    flops=lambda p: 5 * p["rows"] * p["cols"],
    bytes=lambda p: 2 * p["rows"] * p["cols"] * 4,
    op="softmax",
    baseline="unfused",
)
