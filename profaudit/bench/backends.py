"""Backends: how inputs are made, calls bound, timed and synchronised, caches flushed, outputs read.

`get_backend(name, device=..., options=...)` returns one of:

- `numpy`: pure numpy on the host, timed with a host clock (`time.perf_counter_ns`).
- `fake`: a simulated device for fast, deterministic tests. Kernels run for real (so correctness
  checks are real); the *times* come from each variant's `model_ns(params)` with seeded noise,
  warm-up and cache effects, and simulated clocks/temperature/power telemetry. Its logs say
  `time_source: fake` and `device_name: fake-device (simulated)`: they never pass as measurements.
- `torch`, `triton` (`profaudit.bench.backend_torch`): CUDA events on a GPU, a host clock on CPU
  (torch CPU ops return finished; Triton runs in its interpreter there).
- `jax` (`profaudit.bench.backend_jax`): `jit` + AOT `lower().compile()` before timing,
  `block_until_ready` inside the timed region, XLA `cost_analysis()` attached.
"""

from __future__ import annotations

import contextlib
import math
import time
from typing import Any, Callable, Sequence

import numpy as np

from profaudit.bench.env import NoTelemetry, Telemetry, cpu_cache_bytes, cpu_model
from profaudit.errors import UsageError

# Canonical dtype names and the numpy dtype used to draw values before conversion.
_DTYPE_ALIASES = {
    "float64": ("float64", "fp64", "f64", "double", "torch.float64", "torch.double"),
    "float32": ("float32", "fp32", "f32", "float", "single", "torch.float32", "torch.float"),
    "float16": ("float16", "fp16", "f16", "half", "torch.float16", "torch.half"),
    "bfloat16": ("bfloat16", "bf16", "torch.bfloat16"),
    "int64": ("int64", "i64", "long", "torch.int64", "torch.long"),
    "int32": ("int32", "i32", "int", "torch.int32", "torch.int"),
    "int16": ("int16", "i16", "torch.int16"),
    "int8": ("int8", "i8", "torch.int8"),
    "uint8": ("uint8", "u8", "torch.uint8"),
    "bool": ("bool", "torch.bool"),
}
_ALIAS = {a: canon for canon, names in _DTYPE_ALIASES.items() for a in names}
FLOAT_DTYPES = ("float64", "float32", "float16", "bfloat16")


def dtype_name(dtype: Any) -> str:
    """Canonical name of a dtype given as a string, numpy/torch/jax dtype or class."""
    if isinstance(dtype, str):
        key = dtype.strip().lower()
    else:
        key = str(getattr(dtype, "name", None) or getattr(dtype, "__name__", None) or dtype).lower()
        if key.startswith("<class"):
            key = key.split("'")[1].rsplit(".", 1)[-1]
    key = key.replace("numpy.", "").replace("jnp.", "")
    if key in _ALIAS:
        return _ALIAS[key]
    if key.startswith("torch.") and key[6:] in _ALIAS:
        return _ALIAS[key[6:]]
    raise UsageError(f"unsupported dtype {dtype!r} (supported: {', '.join(_DTYPE_ALIASES)})")


def _draw_dtype(name: str) -> np.dtype:
    return np.dtype(np.float64 if name == "float64" else np.float32) if name in FLOAT_DTYPES else np.dtype(name)


class Gen:
    """Seeded random inputs for a backend: every value is drawn on the host from numpy's PCG64
    stream (so a seed gives the same values on every backend) and converted to the backend.

    Inputs are never all zeros: `randn` and `rand` draw continuous values; the harness also
    refuses an input set whose floating arrays are constant."""

    def __init__(self, backend: "Backend", seed: int):
        self.backend = backend
        self.seed = seed
        self.rng = np.random.default_rng(seed)

    def randn(self, shape: Sequence[int] | int, dtype: Any = "float32", *, scale: float = 1.0, mean: float = 0.0):
        name = dtype_name(dtype)
        if name not in FLOAT_DTYPES:
            raise UsageError(f"randn draws floating values, not {name}")
        a = self.rng.standard_normal(_shape(shape), dtype=_draw_dtype(name))
        if scale != 1.0 or mean != 0.0:
            a = a * scale + mean
        return self.backend.from_numpy(a, name)

    def rand(self, shape: Sequence[int] | int, dtype: Any = "float32", *, low: float = 0.0, high: float = 1.0):
        name = dtype_name(dtype)
        if name not in FLOAT_DTYPES:
            raise UsageError(f"rand draws floating values, not {name}")
        a = self.rng.random(_shape(shape), dtype=_draw_dtype(name)) * (high - low) + low
        return self.backend.from_numpy(a, name)

    def randint(self, shape: Sequence[int] | int, low: int, high: int, dtype: Any = "int32"):
        name = dtype_name(dtype)
        a = self.rng.integers(low, high, size=_shape(shape)).astype(np.dtype(name) if name != "bool" else np.bool_)
        return self.backend.from_numpy(a, name)


def _shape(shape) -> tuple[int, ...]:
    if isinstance(shape, (int, np.integer)):
        return (int(shape),)
    return tuple(int(s) for s in shape)


class BoundCall:
    """A zero-argument call of one variant on one input set (what the timer runs)."""

    __slots__ = ("fn", "variant", "params", "model_ns", "input_set", "method", "repeat")

    def __init__(self, fn: Callable[[], Any], variant: str, params: dict, model_ns: Callable | None = None, input_set: int = 0, method: str | None = None):
        self.fn = fn
        self.variant = variant
        self.params = params
        self.model_ns = model_ns
        self.input_set = input_set
        # how a call is run when not the plain function call (cuda_graph: a graph replay)
        self.method = method
        # back-to-back calls of the variant this one makes (a batch, profaudit.bench.runner)
        self.repeat = 1

    def __call__(self):
        try:
            return self.fn()
        except BaseException as exc:
            # the timers run many calls in one go: the harness needs to know whose call failed
            try:
                exc.profaudit_variant = self.variant
            except Exception:
                pass
            raise


# ------------------------------------------------------------------------------------------------
# timers
# ------------------------------------------------------------------------------------------------


class HostTimer:
    """Host clock around each call, with the device synchronised before and after (FAIRNESS P6)."""

    time_source = "host"
    synchronized = True

    def __init__(self, sync: Callable[[], None]):
        self.sync = sync

    def run(self, calls: Sequence[BoundCall], flush: Callable[[], None] | None) -> tuple[list[float], list[float]]:
        starts, durs = [], []
        clock, sync = time.perf_counter_ns, self.sync
        for c in calls:
            if flush is not None:
                flush()
            sync()
            t0 = clock()
            c()
            sync()
            t1 = clock()
            starts.append(float(t0))
            durs.append(float(t1 - t0))
        return starts, durs


class FakeTimer:
    """Simulated device time (see module docstring); kernels still run for real."""

    time_source = "fake"
    synchronized = True
    supports_batches = True

    def __init__(self, backend: "FakeBackend"):
        self.b = backend
        self.clock_ns = 0.0

    def run(self, calls: Sequence[BoundCall], flush: Callable[[], None] | None) -> tuple[list[float], list[float]]:
        b = self.b
        starts, durs = [], []
        prev = None
        for c in calls:
            if flush is not None:
                flush()
                self.clock_ns += b.flush_ns
            c()
            if c.model_ns is None:
                raise UsageError(f"variant {c.variant!r}: the fake backend needs Variant(model_ns=...) (simulated ns per call)")
            base = float(c.model_ns(c.params))
            if not math.isfinite(base) or base <= 0:
                raise UsageError(f"variant {c.variant!r}: model_ns returned {base!r}; expected a positive number of ns")
            n = b.calls.get(c.variant, 0)
            b.calls[c.variant] = n + c.repeat
            t = base * math.exp(b.rng.normal(0.0, b.noise)) if b.noise > 0 else base
            t *= c.repeat  # a batch: that many back-to-back calls
            if n < b.warmup_calls:
                t *= b.warmup_factor
            if flush is None:
                t *= b.hot_factor
            if b.clock_mhz and b.nominal_clock_mhz:
                t *= b.nominal_clock_mhz / b.clock_mhz
            if prev is not None and prev != c.variant:
                # a neighbour's footprint (allocations, a cache it dirtied) slows the next call
                t *= b.order_penalty
            prev = c.variant
            starts.append(self.clock_ns)
            durs.append(t)
            self.clock_ns += t + b.gap_ns
        return starts, durs


# ------------------------------------------------------------------------------------------------
# backends
# ------------------------------------------------------------------------------------------------


class Backend:
    """What the harness needs from a framework. Subclasses fill in the framework-specific parts."""

    name = "base"
    device_kind = "cpu"
    supports_out = True
    compile_mode_default: str | None = None

    def __init__(self, device: str = "auto", options: dict | None = None):
        self.device_request = device
        self.options = dict(options or {})

    # -- identity --------------------------------------------------------------------------
    def framework(self) -> str | None:
        return None

    def device_info(self) -> dict[str, Any]:
        return {"device_name": f"cpu ({cpu_model() or 'unknown model'})", "device_kind": "cpu"}

    def precision_flags(self) -> dict[str, Any]:
        return {}

    def tf32_allowed(self, dtype: str | None) -> bool | None:
        """Whether fp32 matmuls may use TF32 (or another reduced-precision path) here."""
        return False if dtype == "float32" else None

    def telemetry(self) -> Telemetry:
        return NoTelemetry("host device: no GPU telemetry")

    def default_cache_mode(self) -> str:
        """cold on GPUs (and the simulated device), hot on host CPUs (see profaudit.bench.runner)."""
        return "cold" if self.device_kind in ("cuda", "fake") else "hot"

    # -- arrays ----------------------------------------------------------------------------
    def generator(self, seed: int) -> Gen:
        return Gen(self, seed)

    def from_numpy(self, a: np.ndarray, dtype: str):
        if dtype == "bfloat16":
            raise UsageError(f"the {self.name} backend has no bfloat16")
        return np.ascontiguousarray(a.astype(np.dtype(dtype), copy=False))

    def to_numpy(self, x) -> np.ndarray:
        return np.asarray(x)

    def to_reference(self, x):
        """The fp64 form of an input handed to the reference (non-floating inputs unchanged)."""
        a = np.asarray(x)
        return a.astype(np.float64) if a.dtype.kind == "f" else a

    def is_array(self, x) -> bool:
        return isinstance(x, np.ndarray)

    def array_dtype(self, x) -> str:
        return dtype_name(np.asarray(x).dtype)

    def array_shape(self, x) -> tuple[int, ...]:
        return tuple(int(s) for s in np.shape(x))

    def nbytes(self, x) -> int:
        return int(np.asarray(x).nbytes)

    def poison(self, out) -> None:
        """Fill an output buffer with NaN (floats) or a sentinel (integers) before a checked call."""
        a = out
        if a.dtype.kind == "f":
            a.fill(np.nan)
        elif a.dtype.kind in "iu":
            a.fill(np.iinfo(a.dtype).max)
        elif a.dtype.kind == "b":
            a.fill(True)

    def copy_into(self, dst, src) -> bool:
        """Refill `dst` with `src`'s values in place (same buffer, new values); False if impossible."""
        np.copyto(dst, src)
        return True

    # -- calls -----------------------------------------------------------------------------
    def bind(self, fn: Callable, args: Sequence[Any], kwargs: dict, variant: str, params: dict, model_ns=None, input_set: int = 0, compile_mode: str | None = None, cuda_graphs: bool | None = None) -> BoundCall:
        """A zero-argument call of `fn`; `compile_mode` and `cuda_graphs` are the variant's
        declarations (backends that compile or capture follow them, or refuse)."""
        if cuda_graphs:
            raise UsageError(f"variant {variant!r} declares cuda_graphs=True: the {self.name} backend on {self.device_kind} has no CUDA graphs (torch on a CUDA device has)")
        return BoundCall(lambda: fn(*args, **kwargs), variant, params, model_ns, input_set)

    def compile_info(self, variant: str) -> dict[str, Any]:
        """Per-variant compilation facts (XLA cost analysis for JAX)."""
        return {}

    def compile_mode_of(self, fn: Callable) -> str | None:
        """The compile mode a variant's function shows by itself (torch.compile's wrapper), or None."""
        return None

    def sync(self) -> None:
        return None

    def timer(self):
        return HostTimer(self.sync)

    # -- caches ----------------------------------------------------------------------------
    def cache_bytes(self) -> tuple[int, str]:
        """Size of the cache a cold-cache flush must evict, and where that number came from."""
        size, src = cpu_cache_bytes()
        if size:
            return size, f"{src} (largest CPU cache)"
        return 64 * 1024 * 1024, "default 64 MiB (CPU cache size unreadable)"

    def flusher(self, nbytes: int) -> Callable[[], None]:
        buf = np.zeros(max(1, int(nbytes)), dtype=np.uint8)

        def flush() -> None:
            # read-modify-write of every byte: the whole buffer passes through the cache
            np.add(buf, 1, out=buf)

        return flush

    def nvtx_range(self, name: str):
        """A *process-wide* NVTX range (start/end, not push/pop) around the profiled calls: a
        push/pop range belongs to the thread that pushed it, so kernels launched from other
        threads (autograd's backward engine, a JAX dispatch thread) would fall outside it and
        ncu would skip them. The ncu filter for it is `nvtx_filter(name)`."""
        import contextlib

        return contextlib.nullcontext()

    # the NVTX domain this backend's ranges are emitted in (None: the default domain)
    nvtx_domain: str | None = None

    def nvtx_filter(self, name: str) -> str:
        return nvtx_include(name, self.nvtx_domain)

    def nvtx_available(self) -> bool:
        """Whether `nvtx_range` emits real NVTX ranges (ncu's --nvtx-include needs them)."""
        return False

    def close(self) -> None:
        return None


class NumpyBackend(Backend):
    name = "numpy"

    def framework(self) -> str | None:
        return f"numpy {np.__version__}"


class FakeBackend(NumpyBackend):
    """Simulated device; see the module docstring. Options (Benchmark runs pass them through
    `RunOptions.backend_options` / `--backend-option key=value`): noise (lognormal sigma, 0.01),
    warmup_calls (3) and warmup_factor (4.0) for the first calls of each variant, hot_factor
    (0.8: a hot cache makes calls faster), flush_ns (simulated flush time, 20000), gap_ns
    (idle between calls, 2000), clock_mhz / nominal_clock_mhz (1500 / 1500: times scale with
    their ratio), temperature_c (45), power_w (150), power_limit_w (300), throttle (a reason
    name or none), l2_bytes (8 MiB), order_penalty (1.0: a call right after another
    variant's in the same block takes this factor longer), seed (0)."""

    name = "fake"
    device_kind = "fake"

    def __init__(self, device: str = "auto", options: dict | None = None):
        super().__init__(device, options)
        o = self.options
        self.noise = float(o.get("noise", 0.01))
        self.warmup_calls = int(o.get("warmup_calls", 3))
        self.warmup_factor = float(o.get("warmup_factor", 4.0))
        self.hot_factor = float(o.get("hot_factor", 0.8))
        self.flush_ns = float(o.get("flush_ns", 20_000.0))
        self.gap_ns = float(o.get("gap_ns", 2_000.0))
        self.clock_mhz = float(o.get("clock_mhz", 1500.0))
        self.nominal_clock_mhz = float(o.get("nominal_clock_mhz", 1500.0))
        self.temperature_c = float(o.get("temperature_c", 45.0))
        self.power_w = float(o.get("power_w", 150.0))
        self.power_limit_w = float(o.get("power_limit_w", 300.0))
        self.throttle = str(o.get("throttle", "none"))
        self.l2_bytes = int(o.get("l2_bytes", 8 * 1024 * 1024))
        self.order_penalty = float(o.get("order_penalty", 1.0))
        self.rng = np.random.default_rng(int(o.get("seed", 0)))
        self.calls: dict[str, int] = {}
        self._timer = FakeTimer(self)

    def framework(self) -> str | None:
        return f"profaudit-fake (numpy {np.__version__})"

    def device_info(self) -> dict[str, Any]:
        return {"device_name": "fake-device (simulated)", "device_kind": "fake", "simulated": True}

    def timer(self):
        return self._timer

    def telemetry(self) -> Telemetry:
        return SimTelemetry(self)

    def cache_bytes(self) -> tuple[int, str]:
        return self.l2_bytes, "fake backend option l2_bytes (simulated)"

    def flusher(self, nbytes: int) -> Callable[[], None]:
        # nothing to evict on a simulated device; the timer accounts flush_ns
        return lambda: None

    def nvtx_available(self) -> bool:
        # simulated: the device launches no kernels, so there is nothing a range could miss
        return True


class SimTelemetry(Telemetry):
    """Telemetry of the fake device (constant values from its options), labelled simulated."""

    available = True
    source = "simulated (fake backend)"

    def __init__(self, b: FakeBackend):
        self.b = b

    def sample(self) -> dict[str, Any]:
        b = self.b
        return {"sm_clock_mhz": b.clock_mhz, "mem_clock_mhz": 1000.0, "temperature_c": b.temperature_c, "power_w": b.power_w, "throttle_reasons": b.throttle}

    def identity(self) -> dict[str, Any]:
        b = self.b
        return {"available": True, "simulated": True, "name": "fake-device (simulated)", "max_sm_clock_mhz": b.nominal_clock_mhz, "power_limit_w": b.power_limit_w, "mig_mode": "disabled"}

    def before_run(self) -> dict[str, Any]:
        return {"gpu_util_before_pct": 0.0, "other_gpu_processes": 0}


def nvtx_include(name: str, domain: str | None) -> str:
    """ncu's --nvtx-include expression for a start/end range `name` in `domain`: `DOMAIN@NAME`,
    or `NAME` in the default domain (no trailing '/': that form matches push/pop ranges)."""
    return f"{domain}@{name}" if domain else name


@contextlib.contextmanager
def start_end_range(start: Callable[[], Any], end: Callable[[Any], None]):
    """A context manager around a start/end NVTX pair (`start()` returns the id `end` takes)."""
    rid = start()
    try:
        yield
    finally:
        end(rid)


def get_backend(name: str, device: str = "auto", options: dict | None = None) -> Backend:
    if name == "numpy":
        return NumpyBackend(device, options)
    if name == "fake":
        return FakeBackend(device, options)
    if name in ("torch", "triton"):
        from profaudit.bench.backend_torch import TorchBackend, TritonBackend

        return (TorchBackend if name == "torch" else TritonBackend)(device, options)
    if name == "jax":
        from profaudit.bench.backend_jax import JaxBackend

        return JaxBackend(device, options)
    raise UsageError(f"unknown backend {name!r}")
