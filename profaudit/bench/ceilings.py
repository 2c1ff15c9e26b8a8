"""`profaudit bench ceilings`: measured memory-bandwidth and FLOP ceilings of the user's device.

    from profaudit.bench.ceilings import run_ceilings
    doc = run_ceilings("ceilings.json", backend="torch", device="cuda")

Every microbenchmark is an ordinary `Benchmark` run by the harness (`profaudit.bench.runner`):
correctness against a float64 reference, warm-up to a steady state, the noise target, spot
checks, the backend's timer (CUDA events on a GPU, the host clock on a CPU). Nothing here times
anything itself.

What is measured (roof key in brackets; work is counted from the array sizes, never assumed):
- [dram] `copy` (out = a: reads and writes one array), `triad` (out = b + s*c in one kernel:
  torch only; numpy runs it as two passes) and `reduce` (sum(a): read only). Each array is
  max(BANDWIDTH_CACHE_FACTOR x the cache the backend reports, BANDWIDTH_MIN_BYTES): the GPU L2
  from the driver (else the device spec), the largest CPU cache on a host. The dram roof is the
  highest of the three. The bytes are those the kernel names (STREAM's rule): a CPU without
  non-temporal stores also reads the destination of `copy` and `triad` (write-allocate), which
  is traffic the rate does not count.
- [fp32] `fma_fp32`: ITERS dependent FMAs per element in registers (a Triton kernel, CUDA only;
  numpy and torch on a CPU cannot express an in-register FMA loop, so it is listed as not
  measured there), and `matmul_fp32` (fp32 GEMM with TF32 off). The fp32 roof is the higher.
- [fp16_tensor, bf16_tensor, tf32_tensor] `matmul_<dtype>` on CUDA (TF32 enabled for its case
  only, with torch.set_float32_matmul_precision, restored after). On a CPU: [fp32] and [fp64]
  GEMMs.
Caches are `hot` for every case: the bandwidth arrays are far beyond the cache anyway (a flush
would only add idle time between calls) and a GEMM ceiling is the rate with operands resident,
as roofline microbenchmarks report it.

The statistic is STATISTIC (best of N), as roofline microbenchmarks (ERT, rocprofiler-compute's
roofline benchmark) report a ceiling: the highest rate the device reached. The median rate is
recorded beside it.

The ceilings file (JSON, read by `profaudit.measured.read_ceilings`): `format`
("profaudit-ceilings"), `version` (1), `device_name` and `device` (the backend's device facts),
`simulated` (true from the fake backend: refused by the reader), `backend`, `framework`,
`statistic`, `cache_bytes` and its source, `array_bytes`, `clocks` (max SM clock from NVML, the
telemetry source), `run_options`, `roofs` (`bandwidth_bytes_per_s` per memory level and
`peak_flops_per_s` per precision key, each `{value, from}`: the measurement it came from), and
`measurements` (one per microbenchmark: `how` in words, `sizes`, `bytes_per_call`,
`flops_per_call`, `samples`, `best_ns`, `median_ns`, `best_`/`median_` `bytes_per_s` or
`flops_per_s`, the harness's timing facts, `sm_clock_mhz_range`; `status` and `error` when it
failed), `not_measured` (name, roof, why).
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

import numpy as np

from profaudit.bench.backends import Backend, get_backend
from profaudit.bench.check import default_tolerance
from profaudit.bench.runner import RunOptions, run_case
from profaudit.bench.spec import Benchmark, Variant
from profaudit.errors import UsageError
from profaudit.measured import CEILINGS_FORMAT, CEILINGS_VERSION

STATISTIC = "best of N: the shortest time per call among the measured samples (warm-up excluded); rate = work counted from the sizes / that time"
BANDWIDTH_CACHE_FACTOR = 8  # STREAM asks 4x the caches; 8x keeps cache hits a few percent at most
BANDWIDTH_MIN_BYTES = 64 * 1024 * 1024
MATMUL_N = {"cuda": 8192, "cpu": 2048}
# fma_fp32: y = y * A + B converges to B / (1 - A) = 1, so values stay finite for any ITERS
FMA_A, FMA_B = 1.0 - 2.0**-10, 2.0**-10
FMA_ITERS = 1024
FMA_ELEMENTS = 1 << 24
TRIAD_SCALAR = 3.0
BACKEND_CHOICES = ("torch", "numpy", "fake")  # fake: the simulated device, for tests


@dataclass
class Plan:
    """One microbenchmark: the Benchmark the harness runs and the work one call does."""

    name: str
    kind: str  # bandwidth | compute
    roof: str  # a memory level (dram) or a precision key
    benchmark: Benchmark
    bytes: int
    flops: int
    sizes: dict
    how: str
    setup: Callable[[], Callable[[], None]] | None = None  # sets global flags; returns the undo


@dataclass
class Skipped:
    name: str
    roof: str
    why: str


@dataclass
class Suite:
    plans: list[Plan] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    array_bytes: int = 0
    cache_bytes: int = 0
    cache_source: str = ""


class _Ops:
    """The few array operations the kernels need, for numpy arrays or torch tensors."""

    def __init__(self, backend: Backend):
        self.torch = getattr(backend, "torch", None)

    def empty_like(self, x):
        return self.torch.empty_like(x) if self.torch is not None else np.empty_like(x)

    def copy(self, a, out):
        if self.torch is not None:
            out.copy_(a)
        else:
            np.copyto(out, a)
        return out

    def reduce(self, a):
        return self.torch.sum(a) if self.torch is not None else a.sum()

    def matmul(self, a, b, out):
        return self.torch.matmul(a, b, out=out) if self.torch is not None else np.matmul(a, b, out=out)


def _model(backend: Backend, rate_of: Callable[[dict], float], work: Callable[[dict], float]) -> Callable[[dict], float] | None:
    """Simulated ns per call for the fake backend (options bandwidth_bytes_per_s and
    <roof>_flops_per_s, default 1e12): what the tests check the rates against."""
    if backend.name != "fake":
        return None
    return lambda p: work(p) / rate_of(p) * 1e9


def _elements(nbytes: int, itemsize: int = 4, multiple: int = 1024) -> int:
    return max(multiple, math.ceil(nbytes / itemsize / multiple) * multiple)


def plan_suite(backend: Backend, *, array_bytes: int | None = None, matmul_n: int | None = None, fma_elements: int | None = None, fma_iters: int = FMA_ITERS) -> Suite:
    """The microbenchmarks this backend can express on its device, with their sizes."""
    ops = _Ops(backend)
    cuda = backend.device_kind == "cuda"
    torch = ops.torch
    cache, cache_src = backend.cache_bytes()
    suite = Suite(cache_bytes=int(cache), cache_source=cache_src)
    if array_bytes is None:
        array_bytes = max(BANDWIDTH_CACHE_FACTOR * int(cache), BANDWIDTH_MIN_BYTES)
        sized = f"each array max({BANDWIDTH_CACHE_FACTOR} x {cache} B cache [{cache_src}], {BANDWIDTH_MIN_BYTES} B)"
    else:
        sized = "each array as asked (--array-bytes)"
    n = _elements(int(array_bytes))
    suite.array_bytes = n * 4
    fake_rate = lambda key, default: float(backend.options.get(key, default))  # noqa: E731

    def bench(name, inputs, fn, reference, bytes_, flops, output=None, model=None):
        return Benchmark(f"ceiling_{name}", backend=backend.name, inputs=inputs, variants={name: Variant(fn, name=name, model_ns=model)}, reference=reference,
                         params=[{"n": n}], flops=flops or None, bytes=bytes_, output=output, cache="hot")

    # ---------------------------------------------------------------- bandwidth (dram)
    bw_model = lambda work: _model(backend, lambda p: fake_rate("bandwidth_bytes_per_s", 1e12), work)  # noqa: E731
    copy_bytes = 2 * n * 4
    suite.plans.append(Plan(
        "copy", "bandwidth", "dram",
        bench("copy", lambda p, g: (g.rand(p["n"], "float32"),), lambda a, out: ops.copy(a, out), lambda a: a, copy_bytes, 0,
              output=lambda p, ins: ops.empty_like(ins[0]), model=bw_model(lambda p: copy_bytes)),
        copy_bytes, 0, {"elements": n, "dtype": "float32", "arrays": 2},
        f"out = a over {n} fp32 elements; bytes = 2 arrays x {n * 4} B (read a, write out); {sized}",
    ))
    if torch is not None:
        s = TRIAD_SCALAR
        triad_bytes, triad_flops = 3 * n * 4, 2 * n
        suite.plans.append(Plan(
            "triad", "bandwidth", "dram",
            bench("triad", lambda p, g: (g.rand(p["n"], "float32"), g.rand(p["n"], "float32")), lambda b, c, out: torch.add(b, c, alpha=s, out=out),
                  lambda b, c: b + s * c, triad_bytes, triad_flops, output=lambda p, ins: ops.empty_like(ins[0])),
            triad_bytes, triad_flops, {"elements": n, "dtype": "float32", "arrays": 3, "scalar": s},
            f"out = b + {s:g} * c in one kernel (torch.add(alpha=)) over {n} fp32 elements; bytes = 3 arrays x {n * 4} B; {sized}",
        ))
    else:
        suite.skipped.append(Skipped("triad", "dram", f"the {backend.name} backend runs b + s * c as two passes over memory, not one kernel"))
    red_bytes = n * 4 + 4
    suite.plans.append(Plan(
        "reduce", "bandwidth", "dram",
        # uniform [0, 1) values: the sum is well conditioned, so fp32 summation passes 1e-4
        bench("reduce", lambda p, g: (g.rand(p["n"], "float32"),), ops.reduce, lambda a: a.sum(), red_bytes, 0, model=bw_model(lambda p: red_bytes)),
        red_bytes, 0, {"elements": n, "dtype": "float32", "arrays": 1},
        f"sum(a) over {n} fp32 elements (read only); bytes = {n * 4} B read + 4 B result; {sized}",
    ))

    # ---------------------------------------------------------------- vector fp32 FMA
    if cuda and torch is not None:
        try:
            from profaudit.bench._ceilings_triton import fma_chain
        except ImportError as exc:
            suite.skipped.append(Skipped("fma_fp32", "fp32", f"needs triton for an in-register FMA loop ({exc})"))
        else:
            fe = int(fma_elements or FMA_ELEMENTS)
            fma_flops, fma_bytes = 2 * fma_iters * fe, 2 * fe * 4
            a_, b_, k_ = FMA_A, FMA_B, fma_iters

            def fma_ref(x, a_=a_, b_=b_, k_=k_):
                ak = a_**k_
                return x * ak + b_ * (1 - ak) / (1 - a_)

            suite.plans.append(Plan(
                "fma_fp32", "compute", "fp32",
                Benchmark("ceiling_fma_fp32", backend="torch", inputs=lambda p, g: (g.rand(p["n"], "float32"),),
                          variants={"fma_fp32": Variant(lambda x, out: fma_chain(x, out, a_, b_, k_), name="fma_fp32", compile_mode="triton")},
                          reference=fma_ref, params=[{"n": fe}], flops=fma_flops, bytes=fma_bytes, output=lambda p, ins: ops.empty_like(ins[0]), cache="hot",
                          # ITERS roundings compound: ~ITERS x 6e-8 relative at worst
                          rtol=1e-3, atol=1e-4),
                fma_bytes, fma_flops, {"elements": fe, "iterations": fma_iters, "dtype": "float32"},
                f"Triton kernel: {fma_iters} dependent y = y * a + b FMAs per element in registers over {fe} fp32 elements; flops = 2 x {fma_iters} x {fe}",
            ))
    else:
        suite.skipped.append(Skipped("fma_fp32", "fp32", f"the {backend.name} backend on {backend.device_kind} cannot express an in-register FMA loop (Triton on CUDA does)"))

    # ---------------------------------------------------------------- GEMMs
    mn = int(matmul_n or MATMUL_N["cuda" if cuda else "cpu"])
    if cuda:
        gemms = [("fp16_tensor", "float16", None), ("bf16_tensor", "bfloat16", None), ("tf32_tensor", "float32", "high"), ("fp32", "float32", "highest")]
    else:
        gemms = [("fp32", "float32", None), ("fp64", "float64", None)]
    for roof, dtype, fp32_precision in gemms:
        elem = {"float16": 2, "bfloat16": 2, "float32": 4, "float64": 8}[dtype]
        mm_flops, mm_bytes = 2 * mn**3, 3 * mn * mn * elem
        rtol, _ = default_tolerance(dtype, fp32_precision == "high")
        name = f"matmul_{roof}"
        model = _model(backend, lambda p, r=roof: fake_rate(f"{r}_flops_per_s", 1e12), lambda p: mm_flops)
        b = Benchmark(f"ceiling_{name}", backend=backend.name, inputs=lambda p, g, d=dtype: (g.randn((p["n"], p["n"]), d), g.randn((p["n"], p["n"]), d)),
                      variants={name: Variant(lambda a, b2, out: ops.matmul(a, b2, out), name=name, model_ns=model, tf32=(fp32_precision == "high") if fp32_precision else None)},
                      reference=lambda a, b2: a @ b2, params=[{"n": mn}], flops=mm_flops, bytes=mm_bytes, output=lambda p, ins: ops.empty_like(ins[0]),
                      cache="hot", op="matmul",
                      # a sum of n products of unit normals is ~sqrt(n): the check asks the dtype's
                      # relative accuracy of that size, so outputs near zero do not fail on rounding
                      rtol=rtol, atol=rtol * math.sqrt(mn))
        setup = _float32_precision(torch, fp32_precision) if (torch is not None and fp32_precision) else None
        how = f"{'torch' if torch is not None else 'numpy'}.matmul of two {mn}x{mn} {dtype} matrices"
        if fp32_precision:
            how += f" with torch.set_float32_matmul_precision({fp32_precision!r}) ({'TF32 tensor cores' if fp32_precision == 'high' else 'TF32 off: fp32 FMA'})"
        suite.plans.append(Plan(name, "compute", roof, b, mm_bytes, mm_flops, {"m": mn, "n": mn, "k": mn, "dtype": dtype}, how + f"; flops = 2 x {mn}^3", setup))
    return suite


def _float32_precision(torch, value: str) -> Callable[[], Callable[[], None]]:
    """Set fp32 matmul precision for one case (before the harness reads the flags) and undo it."""

    def setup():
        before = torch.get_float32_matmul_precision()
        torch.set_float32_matmul_precision(value)
        return lambda: torch.set_float32_matmul_precision(before)

    return setup


def measure(plan: Plan, backend: Backend, opts: RunOptions, telemetry, device_name: str | None) -> dict:
    """Run one plan through the harness; its measurement record (rates from the best sample)."""
    case = plan.benchmark.cases()[0]
    undo = plan.setup() if plan.setup else None
    try:
        cres = run_case(case, [plan.name], backend, opts, telemetry, device_name=device_name)
    finally:
        if undo is not None:
            undo()
    r = cres.variants[plan.name]
    rec: dict[str, Any] = {"name": plan.name, "kind": plan.kind, "roof": plan.roof, "how": plan.how, "sizes": plan.sizes, "bytes_per_call": plan.bytes,
                           "flops_per_call": plan.flops, "status": r.status}
    times = [float(row["duration_ns"]) for row in r.rows if row["phase"] == "measure"]
    if r.status != "ok" or not times:
        rec["error"] = r.error or cres.error or "no measured samples"
        return rec
    best, med = min(times), statistics.median(times)
    work = plan.bytes if plan.kind == "bandwidth" else plan.flops
    unit = "bytes_per_s" if plan.kind == "bandwidth" else "flops_per_s"
    clocks = sorted({float(row["sm_clock_mhz"]) for row in r.rows if row["phase"] == "measure" and row.get("sm_clock_mhz") is not None})
    m = r.meta
    rec.update({
        "samples": len(times), "best_ns": best, "median_ns": med,
        f"best_{unit}": work / best * 1e9, f"median_{unit}": work / med * 1e9,
        "calls_per_sample": m.get("calls_per_sample"), "time_source": m.get("time_source"), "timing_method": m.get("timing_method"),
        "stop_reason": m.get("stop_reason"), "noise_target_met": m.get("noise_target_met"), "warmup_steady": m.get("warmup_steady"),
        "correctness_checked": m.get("correctness_checked"), "tf32": m.get("tf32"), "cache_mode": cres.info.get("cache_mode"),
        "sm_clock_mhz_range": [clocks[0], clocks[-1]] if clocks else None,
    })
    if plan.kind == "bandwidth" and plan.flops:
        rec["best_flops_per_s"] = plan.flops / best * 1e9
    return rec


def roofs_of(measurements: list[dict]) -> dict:
    """Each roof's ceiling: the highest best-of-N rate among the microbenchmarks that measure it."""
    out: dict[str, dict] = {"bandwidth_bytes_per_s": {}, "peak_flops_per_s": {}}
    for rec in measurements:
        if rec.get("status") != "ok":
            continue
        unit = "bytes_per_s" if rec["kind"] == "bandwidth" else "flops_per_s"
        table = out["bandwidth_bytes_per_s" if rec["kind"] == "bandwidth" else "peak_flops_per_s"]
        v = rec[f"best_{unit}"]
        if rec["roof"] not in table or v > table[rec["roof"]]["value"]:
            table[rec["roof"]] = {"value": v, "from": rec["name"]}
    return out


def run_ceilings(path: str | Path | None = None, *, backend: str = "torch", device: str = "auto", opts: RunOptions | None = None, array_bytes: int | None = None,
                 matmul_n: int | None = None, fma_elements: int | None = None, fma_iters: int = FMA_ITERS, only: list[str] | None = None, progress: Callable[[str], None] | None = None) -> dict:
    """Measure the ceilings and (with `path`) write the ceilings file; returns the document."""
    if backend not in BACKEND_CHOICES:
        raise UsageError(f"--backend {backend!r}: choose torch or numpy")
    opts = (opts or RunOptions()).validate()
    opts.device = device
    be = get_backend(backend, device, opts.backend_options)
    try:
        suite = plan_suite(be, array_bytes=array_bytes, matmul_n=matmul_n, fma_elements=fma_elements, fma_iters=fma_iters)
        plans = [p for p in suite.plans if not only or p.name in only]
        if only and not plans:
            raise UsageError(f"--only {','.join(only)}: no such microbenchmark here (have: {', '.join(p.name for p in suite.plans)})")
        dev, framework = be.device_info(), be.framework()
        tele = be.telemetry() if opts.telemetry else None
        ident = tele.identity() if tele is not None else {}
        live = tele if (tele is not None and tele.available) else None
        records = []
        for p in plans:
            if progress:
                progress(f"{p.name}: {p.how}")
            records.append(measure(p, be, opts, live, dev.get("device_name")))
    finally:
        be.close()
    from profaudit import __version__

    run_opts = opts.as_dict()
    doc = {
        "format": CEILINGS_FORMAT, "version": CEILINGS_VERSION,
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "profaudit_version": __version__,
        "device_name": dev.get("device_name"), "device": dev, "simulated": bool(dev.get("simulated")),
        "backend": backend, "framework": framework,
        "statistic": STATISTIC,
        "cache_bytes": suite.cache_bytes, "cache_bytes_source": suite.cache_source, "array_bytes": suite.array_bytes,
        "clocks": {"max_sm_clock_mhz": ident.get("max_sm_clock_mhz"), "telemetry": tele.source if live is not None else (ident.get("reason") or "unavailable"),
                   "note": "sm_clock_mhz_range per measurement: the clocks read during its measured blocks"},
        "run_options": {k: run_opts[k] for k in ("min_samples", "max_samples", "min_time_s", "max_time_s", "noise_target", "min_warmup_calls", "seed")},
        "roofs": roofs_of(records),
        "measurements": records,
        "not_measured": [{"name": s.name, "roof": s.roof, "why": s.why} for s in suite.skipped if not only or s.name in only],
    }
    if path is not None:
        import json

        from profaudit.bench.session import _clean
        from profaudit.dataset import atomic_write_text

        p = Path(path)
        p.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(p, json.dumps(_clean(doc), indent=1, allow_nan=False) + "\n")
    return doc
