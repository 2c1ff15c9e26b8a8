"""PyTorch and Triton backends.

On a CUDA device each call is bracketed by CUDA events recorded on the current stream; the events
of a block are read after one `torch.cuda.synchronize()` (FAIRNESS P6: device time, no host
timer on asynchronous work). On CPU, torch operators return finished, so a host clock around the
call is exact; Triton kernels run in the Triton interpreter there (TRITON_INTERPRET=1) and are
timed the same way — interpreter times say nothing about GPU speed and are labelled as such.
The cold-cache flush writes a buffer of twice the L2 size, read from the driver
(`cudaDevAttrL2CacheSize` through `torch.cuda.get_device_properties`), else from
`device_specs/`.
"""

from __future__ import annotations

import time
from typing import Any, Callable, Sequence

import numpy as np

from profaudit.bench.backends import Backend, BoundCall, HostTimer, dtype_name, start_end_range
from profaudit.bench.env import NoTelemetry, Telemetry, open_telemetry, triton_interpreted
from profaudit.errors import UsageError, require


def _torch():
    return require("torch", "bench", "benchmarks on the torch/triton backends")


# the GPU clock the blocking kernel's cycle count assumes: a faster clock shortens the wait, so
# this errs high (2 GHz; H100/H200 boost to ~1.98 GHz)
_SLEEP_CYCLES_PER_NS = 2.0
_MAX_BLOCKING_NS = 50e6


def graph_call(cuda, fn: Callable[[], Any], warmup: int = 3):
    """Capture `fn()` in a CUDA graph and return (replay, graph): `replay()` replays it and returns
    the outputs captured (static tensors that each replay rewrites).

    As torch's CUDA-graph recipe (and triton.testing.do_bench_cudagraph) requires, the function
    first runs `warmup` times on a side stream (lazy initialisation, allocator, cuBLAS
    workspaces must not happen during capture). The graph holds only the variant's kernels: the
    timer's cold-cache flush runs before each replay, outside it."""
    side = cuda.Stream()
    side.wait_stream(cuda.current_stream())
    with cuda.stream(side):
        for _ in range(warmup):
            fn()
    cuda.current_stream().wait_stream(side)
    graph = cuda.CUDAGraph()
    with cuda.graph(graph):
        out = fn()

    def replay():
        graph.replay()
        return out

    return replay, graph


class CudaEventTimer:
    """CUDA events around each call of a block; one synchronisation per block.

    Behind a blocking kernel (nvbench's method): before a block's first event the GPU is given
    `torch.cuda._sleep` work lasting longer than the host needs to enqueue the whole block, so
    the events and kernels then run back to back and host launch latency never lands inside an
    event interval (for kernels of a few microseconds it otherwise dominates). The wait is sized
    from the previous block's measured enqueue time (x1.5 + 20 us, at most 50 ms)."""

    time_source = "cuda_events"
    synchronized = True
    supports_batches = True

    def __init__(self, torch):
        self.torch = torch
        self._pool: list = []
        self._sleep = getattr(torch.cuda, "_sleep", None)
        self.method = "per_call_behind_blocking_kernel" if self._sleep is not None else "per_call"
        self._enqueue_ns_per_call = 50_000.0
        self.blocking_ns: list[float] = []

    def _events(self, n: int):
        Event = self.torch.cuda.Event
        while len(self._pool) < 2 * n + 1:
            self._pool.append(Event(enable_timing=True))
        return self._pool

    def run(self, calls: Sequence[BoundCall], flush: Callable[[], None] | None) -> tuple[list[float], list[float]]:
        torch = self.torch
        ev = self._events(len(calls))
        base = ev[0]
        torch.cuda.synchronize()
        host0 = time.perf_counter_ns()
        if self._sleep is not None:
            wait_ns = min(_MAX_BLOCKING_NS, 1.5 * self._enqueue_ns_per_call * len(calls) + 20_000.0)
            self._sleep(int(wait_ns * _SLEEP_CYCLES_PER_NS))
            self.blocking_ns.append(wait_ns)
        base.record()
        for i, c in enumerate(calls):
            if flush is not None:
                flush()
            ev[2 * i + 1].record()
            c()
            ev[2 * i + 2].record()
        enqueued = time.perf_counter_ns() - host0
        self._enqueue_ns_per_call = max(1_000.0, enqueued / max(1, len(calls)))
        torch.cuda.synchronize()
        starts, durs = [], []
        for i in range(len(calls)):
            s, e = ev[2 * i + 1], ev[2 * i + 2]
            starts.append(host0 + base.elapsed_time(s) * 1e6)
            durs.append(s.elapsed_time(e) * 1e6)  # ms -> ns
        return starts, durs


class TorchBackend(Backend):
    name = "torch"
    compile_mode_default = "eager"

    def bind(self, fn: Callable, args: Sequence[Any], kwargs: dict, variant: str, params: dict, model_ns=None, input_set: int = 0, compile_mode: str | None = None, cuda_graphs: bool | None = None) -> BoundCall:
        if not cuda_graphs:
            return super().bind(fn, args, kwargs, variant, params, model_ns, input_set, compile_mode)
        if self.device_kind != "cuda":
            raise UsageError(f"variant {variant!r} declares cuda_graphs=True: CUDA graphs need a CUDA device (this run is on {self.device_kind})")
        cuda = self.torch.cuda
        state: dict[str, Any] = {}

        def call():
            # captured on the first call (the first correctness check), replayed from then on:
            # refilled inputs and poisoned outputs live in the same buffers the graph reads/writes
            if "replay" not in state:
                state["replay"], state["graph"] = graph_call(cuda, lambda: fn(*args, **kwargs))
            return state["replay"]()

        return BoundCall(call, variant, params, model_ns, input_set, method="cuda_graph")

    def compile_mode_of(self, fn) -> str | None:
        # torch.compile(f) returns a function carrying the original; torch.compile(module) an
        # OptimizedModule holding it: recording such a variant as "eager" would be a false fact
        if getattr(fn, "_torchdynamo_orig_callable", None) is not None or getattr(fn, "_orig_mod", None) is not None:
            return "torch.compile"
        return None

    def __init__(self, device: str = "auto", options: dict | None = None):
        super().__init__(device, options)
        torch = _torch()
        self.torch = torch
        if device in (None, "", "auto"):
            dev = "cuda" if torch.cuda.is_available() else "cpu"
        else:
            dev = device
        self.device = torch.device(dev)
        if self.device.type == "cuda":
            if not torch.cuda.is_available():
                raise UsageError(f"device {dev!r} requested but torch {torch.__version__} sees no CUDA device")
            self.index = self.device.index if self.device.index is not None else torch.cuda.current_device()
            self.device = torch.device("cuda", self.index)
            torch.cuda.set_device(self.index)
        elif self.device.type != "cpu":
            raise UsageError(f"the {self.name} backend runs on cpu or cuda, not {dev!r}")
        self.device_kind = self.device.type
        self._timer = CudaEventTimer(torch) if self.device_kind == "cuda" else HostTimer(self.sync)
        self._tele: Telemetry | None = None

    # -- identity --------------------------------------------------------------------------
    def framework(self) -> str:
        return f"torch {self.torch.__version__}"

    def device_info(self) -> dict[str, Any]:
        if self.device_kind != "cuda":
            return super().device_info() | {"torch_num_threads": self.torch.get_num_threads()}
        torch = self.torch
        props = torch.cuda.get_device_properties(self.index)
        info = {
            "device_name": torch.cuda.get_device_name(self.index),
            "device_kind": "cuda",
            "device_index": self.index,
            "cuda_runtime_version": torch.version.cuda,
            "sm_count": getattr(props, "multi_processor_count", None),
            "memory_bytes": getattr(props, "total_memory", None),
            "compute_capability": f"{props.major}.{props.minor}",
            "l2_cache_bytes": getattr(props, "L2_cache_size", None),
        }
        uuid = getattr(props, "uuid", None)
        if uuid is not None:
            info["device_uuid"] = "GPU-" + str(uuid) if not str(uuid).startswith("GPU-") else str(uuid)
        return info

    def precision_flags(self) -> dict[str, Any]:
        torch = self.torch
        b = torch.backends
        flags: dict[str, Any] = {}

        def get(path: str, obj, attr: str):
            try:
                flags[path] = getattr(obj, attr)
            except Exception:  # newer torch versions warn or raise on deprecated flags
                pass

        get("torch.backends.cuda.matmul.allow_tf32", b.cuda.matmul, "allow_tf32")
        get("torch.backends.cudnn.allow_tf32", b.cudnn, "allow_tf32")
        get("torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction", b.cuda.matmul, "allow_fp16_reduced_precision_reduction")
        get("torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction", b.cuda.matmul, "allow_bf16_reduced_precision_reduction")
        get("torch.backends.cuda.matmul.fp32_precision", b.cuda.matmul, "fp32_precision")
        try:
            flags["torch.get_float32_matmul_precision"] = torch.get_float32_matmul_precision()
        except Exception:
            pass
        try:
            flags["torch.are_deterministic_algorithms_enabled"] = torch.are_deterministic_algorithms_enabled()
        except Exception:
            pass
        return {k: (v if isinstance(v, (bool, int, float, str)) or v is None else str(v)) for k, v in flags.items()}

    def tf32_allowed(self, dtype: str | None) -> bool | None:
        if dtype != "float32":
            return None
        # Matmul flags only: cudnn.allow_tf32 (default True) governs convolutions, which the
        # harness cannot tell apart; a convolution benchmark says Variant(tf32=...) itself.
        f = self.precision_flags()
        if f.get("torch.backends.cuda.matmul.allow_tf32") is True and self.device_kind == "cuda":
            return True
        if str(f.get("torch.backends.cuda.matmul.fp32_precision", "")).lower() == "tf32":
            return True
        return f.get("torch.get_float32_matmul_precision", "highest") in ("high", "medium")

    def telemetry(self) -> Telemetry:
        if self.device_kind != "cuda":
            return NoTelemetry(f"device {self.device}: no GPU telemetry")
        if self._tele is None:
            self._tele = open_telemetry("cuda", self._nvml_index())
        return self._tele

    def _nvml_index(self) -> int:
        # NVML numbers devices in PCI order; CUDA may not (CUDA_DEVICE_ORDER), and
        # CUDA_VISIBLE_DEVICES renumbers: map through the PCI bus id when torch exposes it.
        try:
            import pynvml

            pynvml.nvmlInit()
            props = self.torch.cuda.get_device_properties(self.index)
            bus = getattr(props, "pci_bus_id", None)
            domain = getattr(props, "pci_domain_id", 0)
            dev = getattr(props, "pci_device_id", None)
            if bus is not None and dev is not None:
                h = pynvml.nvmlDeviceGetHandleByPciBusId(f"{domain:08x}:{bus:02x}:{dev:02x}.0".encode())
                return int(pynvml.nvmlDeviceGetIndex(h))
        except Exception:
            pass
        return self.index

    # -- arrays ----------------------------------------------------------------------------
    def _torch_dtype(self, name: str):
        return getattr(self.torch, name)

    def from_numpy(self, a: np.ndarray, dtype: str):
        t = self.torch.from_numpy(np.ascontiguousarray(a))
        return t.to(device=self.device, dtype=self._torch_dtype(dtype)).contiguous()

    def to_numpy(self, x) -> np.ndarray:
        torch = self.torch
        if isinstance(x, torch.Tensor):
            t = x.detach()
            if t.dtype in (torch.bfloat16, torch.float16):
                t = t.to(torch.float32)
            return t.cpu().numpy()
        return np.asarray(x)

    def to_reference(self, x):
        torch = self.torch
        if isinstance(x, torch.Tensor) and x.is_floating_point():
            return x.detach().to(torch.float64)
        return x

    def is_array(self, x) -> bool:
        return isinstance(x, self.torch.Tensor)

    def array_dtype(self, x) -> str:
        return dtype_name(x.dtype) if isinstance(x, self.torch.Tensor) else super().array_dtype(x)

    def array_shape(self, x) -> tuple[int, ...]:
        return tuple(int(s) for s in x.shape)

    def nbytes(self, x) -> int:
        if isinstance(x, self.torch.Tensor):
            return int(x.numel() * x.element_size())
        return super().nbytes(x)

    def poison(self, out) -> None:
        torch = self.torch
        if out.is_floating_point():
            out.fill_(float("nan"))
        elif out.dtype == torch.bool:
            out.fill_(True)
        else:
            out.fill_(torch.iinfo(out.dtype).max)

    def copy_into(self, dst, src) -> bool:
        dst.copy_(src)
        return True

    # -- calls -----------------------------------------------------------------------------
    def sync(self) -> None:
        if self.device_kind == "cuda":
            self.torch.cuda.synchronize(self.device)

    def timer(self):
        return self._timer

    def cache_bytes(self) -> tuple[int, str]:
        if self.device_kind != "cuda":
            return super().cache_bytes()
        info = self.device_info()
        if info.get("l2_cache_bytes"):
            return int(info["l2_cache_bytes"]), "cudaDevAttrL2CacheSize (torch.cuda.get_device_properties().L2_cache_size)"
        from profaudit import specs

        spec = specs.match_device(info["device_name"])
        if spec is not None and spec.l2_cache_bytes:
            return int(spec.l2_cache_bytes), f"device spec {spec.name!r} (profaudit.specs)"
        return 256 * 1024 * 1024, "default 256 MiB (L2 size unknown; the size triton.testing.do_bench flushes)"

    def flusher(self, nbytes: int) -> Callable[[], None]:
        if self.device_kind != "cuda":
            return super().flusher(nbytes)
        torch = self.torch
        buf = torch.empty(max(1, int(nbytes) // 4), dtype=torch.int32, device=self.device)
        buf.zero_()

        def flush() -> None:
            # read-modify-write of every word; values change each time, so no write is elided
            buf.add_(1)

        return flush

    def nvtx_range(self, name: str):
        if self.device_kind == "cuda":
            nv = self.torch.cuda.nvtx
            # process-wide start/end (Backend.nvtx_range): autograd launches backward kernels
            # from its own threads, which a push/pop range would not cover
            return start_end_range(lambda: nv.range_start(name), nv.range_end)
        return super().nvtx_range(name)

    def nvtx_available(self) -> bool:
        return self.device_kind == "cuda"

    def close(self) -> None:
        if self._tele is not None:
            self._tele.close()


class TritonBackend(TorchBackend):
    """Triton kernels launched on torch tensors. Without a GPU they run in the Triton interpreter
    (set TRITON_INTERPRET=1 before the kernel module is imported; `profaudit bench run` does)."""

    name = "triton"
    compile_mode_default = None

    def __init__(self, device: str = "auto", options: dict | None = None):
        self.triton = require("triton", "bench", "benchmarks on the triton backend")
        super().__init__(device, options)
        from profaudit.bench.env import triton_imported_early

        if self.device_kind == "cpu" and triton_imported_early():
            raise UsageError("triton was imported before TRITON_INTERPRET=1 was set, so its library functions are not interpreted; set TRITON_INTERPRET=1 in the environment before Python starts")
        if self.device_kind == "cpu" and not triton_interpreted():
            raise UsageError("Triton kernels need an NVIDIA GPU; on a CPU set TRITON_INTERPRET=1 before the benchmark file is imported (profaudit bench run does this when no GPU is present)")
        if self.device_kind == "cuda" and triton_interpreted():
            raise UsageError("TRITON_INTERPRET=1 is set but a GPU is in use: interpreter times are not GPU times; unset TRITON_INTERPRET")

    def framework(self) -> str:
        mode = " (interpreter)" if triton_interpreted() else ""
        return f"triton {self.triton.__version__}{mode}"

    def device_info(self) -> dict[str, Any]:
        info = super().device_info()
        if self.device_kind == "cpu":
            info["device_name"] = info["device_name"] + " [triton interpreter]"
            info["triton_interpreter"] = True
        return info
