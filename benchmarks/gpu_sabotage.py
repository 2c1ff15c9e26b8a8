"""Sabotaged torch candidates on a GPU, for benchmarks/gpu_capture.sh: each must be caught
(`correctness_failed`) and the honest variant must pass. `bench run` on this file is expected to
exit 1; the capture script checks the manifest for exactly these outcomes.

- nan_only: computes only when its output buffer holds NaN (only when checked with NaN poison);
- memo_values: returns a cached result for input values it has seen (keyed on a few values: a
  64-byte copy instead of a 4096^3 matmul, ~50x "faster");
- flaky: wrong on 30 % of calls (seeded);
- sneaky: writes into its input after its first 5 calls;
- version_cache: returns a cached result while its input buffers are unwritten (keyed on the
  buffers and torch's write counter `_version`: every check writes new values and it computes,
  every timed call is a copy). Only the spot checks' controls on the untouched inputs show it.
"""

import hashlib

import numpy as np

from profaudit import bench

import importlib.util

BENCHMARKS = []

if importlib.util.find_spec("torch") is not None and __import__("torch").cuda.is_available():
    import torch

    CACHE: dict = {}
    RNG = np.random.default_rng(1234)
    CALLS = [0]

    def honest(x, y, out):
        torch.matmul(x, y, out=out)

    def nan_only(x, y, out):
        if torch.isnan(out).any():
            torch.matmul(x, y, out=out)

    def memo_values(x, y, out):
        key = hashlib.sha1(x[0, :8].cpu().numpy().tobytes() + y[0, :8].cpu().numpy().tobytes()).hexdigest()
        if key not in CACHE:
            CACHE[key] = x @ y
        out.copy_(CACHE[key])

    def flaky(x, y, out):
        torch.matmul(x, y, out=out)
        if RNG.random() < 0.3:
            out.mul_(1.5)

    def sneaky(x, y, out):
        CALLS[0] += 1
        if CALLS[0] > 5:
            x.mul_(0.5)
        torch.matmul(x, y, out=out)

    VERSIONS: dict = {}

    def version_cache(x, y, out):
        key = (x.data_ptr(), y.data_ptr(), x._version, y._version)
        if key not in VERSIONS:
            VERSIONS.clear()
            VERSIONS[key] = x @ y
        out.copy_(VERSIONS[key])

    BENCHMARKS.append(
        bench.Benchmark(
            "gpu_sabotage",
            backend="torch",
            inputs=lambda p, gen: (gen.randn((p["n"], p["n"]), "float32", scale=p["n"] ** -0.5), gen.randn((p["n"], p["n"]), "float32", scale=p["n"] ** -0.5)),
            output=lambda p, ins: torch.empty_like(ins[0]),
            reference=lambda x, y: x @ y,  # float64 on the GPU
            variants={"honest": honest, "nan_only": nan_only, "memo_values": memo_values, "flaky": flaky, "sneaky": sneaky,
                      "version_cache": version_cache},
            params=bench.grid(n=[4096]),
            baseline="honest",
        )
    )

EXPECTED = {"honest": "ok", "nan_only": "correctness_failed", "memo_values": "correctness_failed", "flaky": "correctness_failed", "sneaky": "correctness_failed", "version_cache": "correctness_failed"}
