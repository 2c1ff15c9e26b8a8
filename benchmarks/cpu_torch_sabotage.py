"""Sabotaged torch candidates on the CPU, for tests/test_bench_redteam_torch.py and
benchmarks/bench_sabotage_catch.py: each must be caught (`correctness_failed`) and the honest
variant must pass. `profaudit bench run benchmarks/cpu_torch_sabotage.py -o OUT` exits 1 by design. It holds no
benchmark where torch is missing or sees a GPU.

- version_cache: returns a cached result while its input buffers are unwritten (keyed on the
  buffers and torch's write counter `_version`): every check writes new values into the inputs
  and it computes, every timed call on the untouched inputs is a lookup. Only the spot checks'
  controls (on the untouched inputs, before any write) against calls on new values show it.
- async_worker: hands the matmul to a worker thread and returns at once; the output is filled
  after the timer stopped (lazy/async work that no device sync covers).
- bf16_inside: asked for float32, computes in bfloat16 and returns float32.
- half_rows: the right output shape, but only the first half of the rows computed.
- half_dtype: asked for float32, returns float16.
"""

import queue
import threading

from profaudit import bench

import importlib.util

BENCHMARKS = []

# CPU only: on a GPU the torch backend times CUDA tensors, where benchmarks/gpu_sabotage.py holds
# the saboteurs (a worker thread's CUDA launch is another matter than a CPU thread's late output)
if importlib.util.find_spec("torch") is not None and not __import__("torch").cuda.is_available():
    import torch

    def honest(x, y):
        return x @ y

    VERSIONS: dict = {}

    def version_cache(x, y):
        key = (x.data_ptr(), y.data_ptr(), x._version, y._version)
        if key not in VERSIONS:
            VERSIONS.clear()
            VERSIONS[key] = x @ y
        return VERSIONS[key]

    JOBS: queue.Queue = queue.Queue()

    def _worker():
        while True:
            x, y, out = JOBS.get()
            torch.matmul(x, y, out=out)

    threading.Thread(target=_worker, daemon=True).start()

    def async_worker(x, y):
        out = torch.full((x.shape[0], y.shape[1]), float("nan"))
        JOBS.put((x, y, out))
        return out

    def bf16_inside(x, y):
        return (x.bfloat16() @ y.bfloat16()).float()

    def half_rows(x, y):
        out = torch.zeros(x.shape[0], y.shape[1])
        h = x.shape[0] // 2
        out[:h] = x[:h] @ y
        return out

    def half_dtype(x, y):
        return x.half() @ y.half()

    BENCHMARKS.append(
        bench.Benchmark(
            "cpu_sabotage",
            backend="torch",
            inputs=lambda p, gen: (gen.randn((p["n"], p["n"]), "float32", scale=p["n"] ** -0.5), gen.randn((p["n"], p["n"]), "float32", scale=p["n"] ** -0.5)),
            reference=lambda x, y: x @ y,  # float64 copies of the inputs
            variants={"honest": honest, "version_cache": version_cache, "async_worker": async_worker,
                      "bf16_inside": bf16_inside, "half_rows": half_rows, "half_dtype": half_dtype},
            params=bench.grid(n=[128]),
            dtype="float32",
            baseline="honest",
        )
    )

EXPECTED = {"honest": "ok", "version_cache": "correctness_failed", "async_worker": "correctness_failed",
            "bf16_inside": "correctness_failed", "half_rows": "correctness_failed", "half_dtype": "correctness_failed"}
