"""The GPU-only code paths, exercised on CPU with stand-ins for NVML and CUDA events.

These check the harness's logic (units, bit decoding, event pairing, identity fields); they do
not prove it on a GPU: benchmarks/gpu_capture.sh does that on a machine that has one.
"""

from __future__ import annotations

import sys
import types

import pytest


def test_throttle_reason_names():
    from profaudit.samples import throttle_names

    assert throttle_names(0) == "none"
    assert throttle_names(0x1) == "gpu_idle"
    assert throttle_names(0x4 | 0x20) == "sw_power_cap|sw_thermal_slowdown"
    assert throttle_names(0x10000) == "0x10000"


def _fake_pynvml():
    nv = types.ModuleType("pynvml")
    nv.NVML_CLOCK_SM, nv.NVML_CLOCK_MEM, nv.NVML_TEMPERATURE_GPU = 0, 2, 0
    state = {"init": 0}
    nv.nvmlInit = lambda: state.__setitem__("init", state["init"] + 1)
    nv.nvmlShutdown = lambda: state.__setitem__("init", state["init"] - 1)
    nv.nvmlDeviceGetHandleByIndex = lambda i: ("h", i)
    nv.nvmlDeviceGetClockInfo = lambda h, kind: {0: 1755, 2: 2619}[kind]
    nv.nvmlDeviceGetTemperature = lambda h, kind: 61
    nv.nvmlDeviceGetPowerUsage = lambda h: 412_345  # milliwatts
    nv.nvmlDeviceGetCurrentClocksEventReasons = lambda h: 0x4
    nv.nvmlDeviceGetName = lambda h: b"NVIDIA H200"
    nv.nvmlDeviceGetUUID = lambda h: "GPU-1234"
    nv.nvmlSystemGetDriverVersion = lambda: "560.35.03"
    nv.nvmlSystemGetCudaDriverVersion = lambda: 12060
    nv.nvmlDeviceGetEnforcedPowerLimit = lambda h: 700_000
    nv.nvmlDeviceGetMaxClockInfo = lambda h, kind: {0: 1980, 2: 2619}[kind]
    nv.nvmlDeviceGetApplicationsClock = lambda h, kind: 1980

    def unsupported(*a):
        raise RuntimeError("NVML_ERROR_NOT_SUPPORTED")

    nv.nvmlDeviceGetMigMode = unsupported
    nv.nvmlDeviceGetMemoryInfo = lambda h: types.SimpleNamespace(total=150_000_000_000)
    nv.nvmlDeviceGetPersistenceMode = lambda h: 1
    nv.nvmlDeviceGetUtilizationRates = lambda h: types.SimpleNamespace(gpu=3)
    nv.nvmlDeviceGetComputeRunningProcesses = lambda h: [types.SimpleNamespace(pid=1), types.SimpleNamespace(pid=__import__("os").getpid())]
    return nv, state


def test_nvml_telemetry_units_and_identity(monkeypatch):
    nv, state = _fake_pynvml()
    monkeypatch.setitem(sys.modules, "pynvml", nv)
    from profaudit.bench.env import open_telemetry

    t = open_telemetry("cuda", 0)
    assert t.available and t.source == "nvml"
    s = t.sample()
    assert s == {"sm_clock_mhz": 1755.0, "mem_clock_mhz": 2619.0, "temperature_c": 61.0, "power_w": pytest.approx(412.345), "throttle_reasons": "sw_power_cap"}
    ident = t.identity()
    assert ident["name"] == "NVIDIA H200" and ident["uuid"] == "GPU-1234" and ident["cuda_driver_version"] == "12.6"
    assert ident["power_limit_w"] == 700.0 and ident["max_sm_clock_mhz"] == 1980
    assert ident["mig_mode"] is None  # unsupported query: unknown, not an error
    assert t.before_run() == {"gpu_util_before_pct": 3.0, "other_gpu_processes": 1}  # our own pid is not "other"
    t.close()
    assert state["init"] == 0
    assert open_telemetry("cpu").available is False


def test_nvml_absent_is_recorded(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", None)  # import fails
    from profaudit.bench.env import open_telemetry

    t = open_telemetry("cuda", 0)
    assert t.available is False and "nvidia-ml-py" in t.reason


class _Event:
    clock = [0.0]

    def __init__(self, enable_timing=True):
        self.t = None

    def record(self):
        _Event.clock[0] += 0.001  # each record 1 us (ms units) after the previous
        self.t = _Event.clock[0]

    def elapsed_time(self, other):
        return other.t - self.t


def test_cuda_event_timer_pairs_events(monkeypatch):
    from profaudit.bench.backend_torch import CudaEventTimer
    from profaudit.bench.backends import BoundCall

    synced = []
    fake_torch = types.SimpleNamespace(cuda=types.SimpleNamespace(Event=_Event, synchronize=lambda *a: synced.append(1)))
    timer = CudaEventTimer(fake_torch)
    work = []

    def call(k):
        def f():
            _Event.clock[0] += 0.002 * k  # "kernel" of k x 2 us
            work.append(k)

        return BoundCall(f, f"v{k}", {})

    flushes = []
    starts, durs = timer.run([call(1), call(3), call(2)], lambda: flushes.append(1))
    assert work == [1, 3, 2] and len(flushes) == 3
    # start/end events bracket each call only (the flush is before the start event)
    assert durs == pytest.approx([3000.0, 7000.0, 5000.0])  # (1 us record + k x 2 us) in ns
    assert starts == sorted(starts)
    assert len(synced) == 2  # once before, once after the block: no per-call synchronisation
    # the pool is reused, not grown, for a block of the same size
    n = len(timer._pool)
    timer.run([call(1), call(1), call(1)], None)
    assert len(timer._pool) == n


def test_jax_cost_record_shape():
    pytest.importorskip("jax")
    import jax
    import jax.numpy as jnp

    from profaudit.bench.backend_jax import JaxBackend

    c = jax.jit(lambda a, b: a @ b).lower(jnp.ones((8, 4)), jnp.ones((4, 2))).compile()
    rec = JaxBackend._cost(c)
    assert rec["available"] is True and rec["flops"] == 2 * 8 * 4 * 2 and rec["module"].startswith("jit_")


class _FakeCuda:
    """torch.cuda's stream and graph API as the capture recipe uses it, recording the order."""

    def __init__(self):
        self.log: list[str] = []
        self.capturing = False
        cuda = self

        class Stream:
            def wait_stream(self, other):
                cuda.log.append("wait")

        class CUDAGraph:
            def replay(self):
                cuda.log.append("replay")

        self.Stream, self.CUDAGraph = Stream, CUDAGraph
        self._current = Stream()

    def current_stream(self):
        return self._current

    def stream(self, s):
        import contextlib

        @contextlib.contextmanager
        def ctx():
            self.log.append("side-begin")
            yield
            self.log.append("side-end")

        return ctx()

    def graph(self, g):
        import contextlib

        @contextlib.contextmanager
        def ctx():
            self.capturing = True
            self.log.append("capture-begin")
            yield
            self.capturing = False
            self.log.append("capture-end")

        return ctx()


def test_cuda_graph_capture_then_replay():
    from profaudit.bench.backend_torch import graph_call

    cuda = _FakeCuda()
    out = object()

    def fn():
        cuda.log.append("fn(capture)" if cuda.capturing else "fn")
        return out

    replay, _ = graph_call(cuda, fn, warmup=3)
    # warm-up on a side stream, then one capture; nothing replayed yet
    assert cuda.log == ["wait", "side-begin", "fn", "fn", "fn", "side-end", "wait", "capture-begin", "fn(capture)", "capture-end"]
    cuda.log.clear()
    assert replay() is out and replay() is out
    # the timed calls are replays only: the Python function never runs again
    assert cuda.log == ["replay", "replay"]


def test_torch_variant_in_a_cuda_graph_flush_outside(monkeypatch):
    """TorchBackend.bind(cuda_graphs=True) on a (faked) CUDA device: captured on the first call,
    replayed after; the event timer's flush runs before each replay, never inside the graph."""
    pytest.importorskip("torch")
    from profaudit.bench.backend_torch import CudaEventTimer, TorchBackend

    b = TorchBackend.__new__(TorchBackend)  # no CUDA here: only what bind() reads
    cuda = _FakeCuda()
    b.device_kind, b.torch, b.name = "cuda", types.SimpleNamespace(cuda=cuda), "torch"
    calls = []

    def kernel(x):
        calls.append("captured" if cuda.capturing else "ran")
        return x

    bc = TorchBackend.bind(b, kernel, [7], {}, "v", {}, cuda_graphs=True)
    assert bc.method == "cuda_graph"
    fake_torch = types.SimpleNamespace(cuda=types.SimpleNamespace(Event=_Event, synchronize=lambda *a: None))
    timer = CudaEventTimer(fake_torch)
    cuda.log.clear()
    timer.run([bc, bc, bc], lambda: cuda.log.append("flush"))
    assert calls == ["ran", "ran", "ran", "captured"]
    i = cuda.log.index("capture-end")
    # flush, capture (first call) + replay; then flush, replay; flush, replay
    assert cuda.log[0] == "flush" and cuda.log[i + 1 :] == ["replay", "flush", "replay", "flush", "replay"]
    assert "flush" not in cuda.log[cuda.log.index("capture-begin") : i]


def test_cuda_graphs_refused_off_gpu(tmp_path):
    from profaudit import bench
    from tests.test_bench import opts, write

    f = write(tmp_path, """
    B = bench.Benchmark("v", backend="fake", inputs=inputs, reference=lambda x, y: x + y,
        variants={"a": bench.Variant(lambda x, y: x + y, model_ns=lambda p: 1e4, cuda_graphs=True),
                  "b": bench.Variant(lambda x, y: x + y, model_ns=lambda p: 1e4)}, params=[{"n": 8}])
    """)
    m = bench.run_file(f, tmp_path / "out", options=opts())
    v = m["cases"][0]["variants"]
    assert v["a"]["status"] == "error" and "cuda_graphs=True" in v["a"]["error"] and v["b"]["status"] == "ok"


def test_blocking_kernel_before_each_block():
    from profaudit.bench.backend_torch import CudaEventTimer
    from profaudit.bench.backends import BoundCall

    order = []

    class Ev(_Event):
        def record(self):
            order.append("event")
            super().record()

    fake_torch = types.SimpleNamespace(cuda=types.SimpleNamespace(Event=Ev, synchronize=lambda *a: order.append("sync"), _sleep=lambda cycles: order.append(("sleep", cycles))))
    timer = CudaEventTimer(fake_torch)
    assert timer.method == "per_call_behind_blocking_kernel"
    call = BoundCall(lambda: order.append("kernel"), "v", {})
    timer.run([call, call], None)
    # the GPU is held before the first event, so the block's events and kernels queue up behind it
    assert order[:3] == ["sync", ("sleep", order[1][1]), "event"] and order[1][1] > 0
    assert order.count("kernel") == 2 and order[-1] == "sync"
    # the next block's wait is sized from the measured enqueue time (bounded)
    timer.run([call] * 4, None)
    assert len(timer.blocking_ns) == 2 and 20_000 < timer.blocking_ns[1] <= 50e6


class _FakeProfiler:
    """jax.profiler as JaxTraceTimer uses it: annotations on a host line, the calls' kernels
    on a device plane (a simulated clock in ns), one trace file per block."""

    def __init__(self, device=True):
        self.t = 1000.0
        self.device = device
        self.host_events: list = []
        self.dev_events: list = []
        prof = self

        class TraceAnnotation:
            def __init__(self, name):
                self.name = name

            def __enter__(self):
                self.t0 = prof.t
                prof.t += 500.0  # host launch latency: inside the annotation, outside the span

            def __exit__(self, *a):
                prof.t += 300.0
                prof.host_events.append(types.SimpleNamespace(name=self.name, start_ns=self.t0, duration_ns=prof.t - self.t0))

        class ProfileData:
            @staticmethod
            def from_file(path):
                ev = types.SimpleNamespace
                planes = [ev(name="/host:CPU", lines=[ev(name="python", events=list(prof.host_events))])]
                if prof.device:
                    planes.append(ev(name="/device:GPU:0", lines=[ev(name="Stream #13(Compute)", events=list(prof.dev_events))]))
                return ev(planes=planes)

        self.TraceAnnotation, self.ProfileData = TraceAnnotation, ProfileData

    def kernel(self, ns):
        self.dev_events.append(types.SimpleNamespace(name="fusion", start_ns=self.t, duration_ns=ns))
        self.t += ns + 50.0

    def start_trace(self, d):
        self.host_events, self.dev_events = [], []
        self._dir = d

    def stop_trace(self):
        import os

        p = os.path.join(self._dir, "plugins", "profile", "run")
        os.makedirs(p)
        open(os.path.join(p, "host.xplane.pb"), "wb").close()


def test_jax_device_time_from_the_trace():
    from profaudit.bench.jax_timer import JaxTraceTimer

    prof = _FakeProfiler()
    timer = JaxTraceTimer(prof)

    def call(ns):
        return lambda: (prof.kernel(ns), prof.kernel(ns / 2))  # two kernels per call

    flushes = []
    starts, durs = timer.run([call(1000.0), call(4000.0)], lambda: (flushes.append(1), prof.kernel(9999.0)))
    # each call's device span (first kernel start to last kernel end), never the host latency
    # around it nor the flush kernel before it
    assert durs == pytest.approx([1000.0 + 50.0 + 500.0, 4000.0 + 50.0 + 2000.0])
    assert timer.time_source == "device_trace" and len(flushes) == 2 and starts[0] < starts[1]
    assert timer.clock_ns > sum(durs)


def test_jax_trace_without_device_events_falls_back_to_host_and_says_so():
    from profaudit.bench.jax_timer import JaxTraceTimer

    prof = _FakeProfiler(device=False)
    timer = JaxTraceTimer(prof)
    starts, durs = timer.run([lambda: prof.kernel(1000.0)], None)
    assert timer.time_source == "host" and "no device events" in timer.fallback_reason
    assert durs == pytest.approx([500.0 + 1050.0 + 300.0])  # the annotation's host span
