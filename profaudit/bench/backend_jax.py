"""JAX backend: each variant is `jax.jit`-ed and compiled ahead of time (`lower().compile()`) before
anything is timed, so compilation never lands in a sample (FAIRNESS P1); each timed call ends
with `jax.block_until_ready` on its outputs (P6: JAX dispatches asynchronously). A variant
declared `compile_mode="eager"` is not jitted: its operators dispatch one by one as written
(their per-operator compilation happens in the checks and the warm-up), and a jitted function
declared eager is refused. XLA's
`cost_analysis()` of the compiled program is attached to the log (`profaudit.xla.normalise_cost`).

JAX arrays are immutable: variants return their outputs (no `output=` buffers), and references
receive float64 *numpy* arrays (JAX computes in float32 unless x64 is enabled), so write them with
numpy.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from profaudit.bench.backends import Backend, BoundCall, dtype_name, start_end_range
from profaudit.bench.env import NoTelemetry, Telemetry, open_telemetry
from profaudit.errors import UsageError, require


# the domain of the ranges emitted through the `nvtx` package: named explicitly, because that
# package's default is a domain called "NVTX", not the default domain ncu filters on without a
# "DOMAIN@" prefix; the ncu command names the same domain (profaudit.bench.ncu)
NVTX_DOMAIN = "profaudit"


def nvtx_api() -> tuple[str | None, str | None]:
    """Which NVTX API the jax backend emits ranges with, and in which domain: the `nvtx`
    package (domain NVTX_DOMAIN), else torch's (default domain, when it sees a GPU), else none."""
    import importlib.util

    if importlib.util.find_spec("nvtx") is not None:
        return "nvtx", NVTX_DOMAIN
    try:
        import torch

        if torch.cuda.is_available():
            return "torch", None
    except ImportError:
        pass
    return None, None


class JaxBackend(Backend):
    name = "jax"
    supports_out = False
    compile_mode_default = "jit"

    def __init__(self, device: str = "auto", options: dict | None = None):
        super().__init__(device, options)
        self.jax = require("jax", "bench", "benchmarks on the jax backend")
        import jax.numpy as jnp

        self.jnp = jnp
        if device in (None, "", "auto"):
            self.dev = self.jax.devices()[0]
        else:
            kind = "gpu" if device.startswith("cuda") or device.startswith("gpu") else device.split(":")[0]
            idx = int(device.split(":")[1]) if ":" in device else 0
            try:
                self.dev = self.jax.devices(kind)[idx]
            except Exception as exc:
                raise UsageError(f"jax has no device {device!r}: {exc}") from None
        self.platform = self.dev.platform
        self.device_kind = "cuda" if self.platform == "gpu" else self.platform
        self._compiled: dict[tuple, Any] = {}
        self._costs: dict[str, dict] = {}
        self._tele: Telemetry | None = None

    def framework(self) -> str:
        return f"jax {self.jax.__version__}"

    def device_info(self) -> dict[str, Any]:
        if self.platform == "cpu":
            return super().device_info() | {"jax_platform": "cpu"}
        return {"device_name": str(self.dev.device_kind), "device_kind": self.device_kind, "jax_platform": self.platform, "device_index": getattr(self.dev, "id", 0)}

    def precision_flags(self) -> dict[str, Any]:
        cfg = self.jax.config
        out = {}
        for key in ("jax_default_matmul_precision", "jax_enable_x64", "jax_default_prng_impl"):
            try:
                v = getattr(cfg, key)
                out[key] = v if isinstance(v, (bool, int, float, str)) or v is None else str(v)
            except AttributeError:
                continue
        return out

    def tf32_allowed(self, dtype: str | None) -> bool | None:
        if dtype != "float32":
            return None
        prec = str(self.precision_flags().get("jax_default_matmul_precision") or "default").lower()
        if self.platform == "gpu":
            # XLA:GPU runs fp32 dots on TF32 tensor cores unless the precision says full fp32
            return prec not in ("highest", "float32", "precision.highest")
        return prec in ("tensorfloat32", "bfloat16", "bfloat16_3x", "fastest")

    def telemetry(self) -> Telemetry:
        if self.platform != "gpu":
            return NoTelemetry(f"jax platform {self.platform}: no GPU telemetry")
        if self._tele is None:
            self._tele = open_telemetry("cuda", int(getattr(self.dev, "id", 0)))
        return self._tele

    # -- arrays ----------------------------------------------------------------------------
    def from_numpy(self, a: np.ndarray, dtype: str):
        jdt = getattr(self.jnp, dtype)
        if dtype == "float64" and not self.jax.config.jax_enable_x64:
            raise UsageError("float64 inputs need jax_enable_x64 (jax.config.update('jax_enable_x64', True))")
        return self.jax.device_put(self.jnp.asarray(a, dtype=jdt), self.dev)

    def to_numpy(self, x) -> np.ndarray:
        a = np.asarray(x)
        if a.dtype.name == "bfloat16":
            a = a.astype(np.float32)
        return a

    def to_reference(self, x):
        a = self.to_numpy(x)
        return a.astype(np.float64) if a.dtype.kind == "f" else a

    def is_array(self, x) -> bool:
        return isinstance(x, self.jax.Array)

    def array_dtype(self, x) -> str:
        return dtype_name(x.dtype)

    def array_shape(self, x) -> tuple[int, ...]:
        return tuple(int(s) for s in x.shape)

    def nbytes(self, x) -> int:
        return int(x.size * x.dtype.itemsize)

    def poison(self, out) -> None:
        raise UsageError("jax arrays are immutable: jax benchmarks return their outputs (no output= buffers)")

    def copy_into(self, dst, src) -> bool:
        return False

    # -- calls -----------------------------------------------------------------------------
    def compile_mode_of(self, fn: Callable) -> str | None:
        return "jit" if hasattr(fn, "lower") else None

    def bind(self, fn: Callable, args: Sequence[Any], kwargs: dict, variant: str, params: dict, model_ns=None, input_set: int = 0, compile_mode: str | None = None, cuda_graphs: bool | None = None) -> BoundCall:
        jax = self.jax
        if cuda_graphs:
            raise UsageError(f"variant {variant!r} declares cuda_graphs=True: the jax backend does not capture CUDA graphs (XLA decides that itself)")
        block = jax.block_until_ready
        if compile_mode == "eager":
            # really eager: every jnp operator dispatched on its own, as written (what
            # compile_mode="eager" claims); a function that is already jitted cannot be
            if hasattr(fn, "lower"):
                raise UsageError(f"variant {variant!r} declares compile_mode='eager' but its function is jax.jit-wrapped: pass the plain function (or declare compile_mode='jit')")
            # no single program, so no XLA cost analysis (inputs live on self.dev: ops run there)
            self._costs.pop(variant, None)
            return BoundCall(lambda: block(fn(*args, **kwargs)), variant, params, model_ns, input_set)
        # one backend serves every benchmark of a file: the program depends on the function (two
        # benchmarks may both name a variant "matmul"), the argument shapes and dtypes, and the
        # case's parameters (a variant taking `params` bakes them in as constants)
        key = (
            variant,
            id(fn),
            tuple((tuple(a.shape), str(a.dtype)) if hasattr(a, "shape") else repr(a) for a in args),
            repr(sorted(kwargs.get("params", {}).items())) if kwargs else None,
        )
        hit = self._compiled.get(key)
        if hit is None or hit[0] is not fn:
            import functools

            f = functools.partial(fn, **kwargs) if kwargs else fn
            jitted = f if hasattr(f, "lower") else jax.jit(f)
            compiled = jitted.lower(*args).compile()
            # fn is kept with its program so its id cannot be reused by another function
            hit = (fn, compiled, self._cost(compiled))
            self._compiled[key] = hit
        _, compiled, cost = hit
        # the cost of the program this case runs (shapes differ from case to case)
        self._costs[variant] = cost
        return BoundCall(lambda: block(compiled(*args)), variant, params, model_ns, input_set)

    @staticmethod
    def _cost(compiled) -> dict[str, Any]:
        from profaudit.xla import module_name_of, normalise_cost

        try:
            cost = normalise_cost(compiled)
        except Exception as exc:  # backends without cost analysis answer "unknown", not an error
            return {"available": False, "reason": f"cost_analysis() failed: {type(exc).__name__}: {exc}"}
        if not cost:
            return {"available": False, "reason": "cost_analysis() returned nothing"}
        return {
            "available": True,
            "module": module_name_of(compiled),
            "flops": cost.get("flops"),
            "bytes_accessed": cost.get("bytes accessed", cost.get("bytes_accessed")),
            "transcendentals": cost.get("transcendentals"),
            "raw": cost,
        }

    def compile_info(self, variant: str) -> dict[str, Any]:
        c = self._costs.get(variant)
        return {"xla_cost_analysis": c} if c else {}

    def timer(self):
        """On a GPU, device time from the profiler trace (profaudit.bench.jax_timer) unless the
        backend option device_timer=false; elsewhere the host clock around each blocked call."""
        if self.platform == "gpu" and str(self.options.get("device_timer", True)).lower() not in ("false", "0", "no") and hasattr(self.jax.profiler, "ProfileData"):
            if getattr(self, "_trace_timer", None) is None:
                from profaudit.bench.jax_timer import JaxTraceTimer

                self._trace_timer = JaxTraceTimer(self.jax.profiler)
            return self._trace_timer
        return super().timer()

    def sync(self) -> None:
        # every bound call blocks on its own outputs; nothing else is in flight
        return None

    def cache_bytes(self) -> tuple[int, str]:
        if self.platform == "cpu":
            return super().cache_bytes()
        from profaudit import specs

        spec = specs.match_device(str(self.dev.device_kind))
        if spec is not None and spec.l2_cache_bytes:
            return int(spec.l2_cache_bytes), f"device spec {spec.name!r} (profaudit.specs; jax exposes no L2 attribute)"
        return 256 * 1024 * 1024, "default 256 MiB (L2 size unknown; the size triton.testing.do_bench flushes)"

    def flusher(self, nbytes: int) -> Callable[[], None]:
        if self.platform == "cpu":
            return super().flusher(nbytes)
        jax, jnp = self.jax, self.jnp
        state = {"buf": jax.device_put(jnp.zeros(max(1, int(nbytes) // 4), dtype=jnp.int32), self.dev)}
        step = jax.jit(lambda b: b + 1, donate_argnums=0)
        state["buf"] = step(state["buf"]).block_until_ready()

        def flush() -> None:
            state["buf"] = step(state["buf"])
            state["buf"].block_until_ready()

        return flush

    @property
    def nvtx_domain(self) -> str | None:  # type: ignore[override]
        return nvtx_api()[1]

    def nvtx_range(self, name: str):
        api, domain = nvtx_api()
        if api == "nvtx":
            import nvtx  # type: ignore

            return start_end_range(lambda: nvtx.start_range(message=name, domain=domain), nvtx.end_range)
        if api == "torch":
            import torch

            return start_end_range(lambda: torch.cuda.nvtx.range_start(name), torch.cuda.nvtx.range_end)
        return super().nvtx_range(name)

    def nvtx_available(self) -> bool:
        return nvtx_api()[0] is not None

    def close(self) -> None:
        if self._tele is not None:
            self._tele.close()
