"""Trace evidence for the audit tests, written in the real export formats and read back through
the parsers: Nsight Systems SQLite exports (the CUPTI_ACTIVITY_KIND_* / NVTX_EVENTS / StringIds
schema of tests/nsys_synth.py) and Kineto (torch.profiler) Chrome-trace JSON with its real
event shapes (`ph: X`, cats `kernel`, `cuda_runtime`, `user_annotation`, args `correlation`,
`stream`, `device`, `External id`).

A trace is described call by call: each timed call is an NVTX range (or a Kineto user
annotation) of `range_ns` host time, holding launches of kernels `(name, stream, duration_ns,
delay_ns)` (delay from the launch to the kernel start: a kernel on a second stream may start
while the first still runs) and extra API calls `(name, duration_ns)` (cudaMalloc,
cuModuleLoadData ...)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from audit_fixtures import claim, side
from nsys_synth import KERNEL_DDL, NVTX_DDL, RUNTIME_DDL, gpid, gtid, make_db
from profaudit.audit import Severity, Status

H100 = "NVIDIA H100 80GB HBM3"
PID, TID, HELPER_TID = 4242, 11, 12


@dataclass
class Call:
    kernels: list[tuple]  # (name, stream, duration_ns, delay_ns[, grid_x]): grid_x defaults to 128
    range_ns: float | None = None  # host time of the call's range; None: until its kernels end
    apis: list[tuple[str, float]] = field(default_factory=list)  # one-time API calls at the start
    graph: bool = False  # the kernels come from one cudaGraphLaunch
    helper: list[tuple[str, int, float]] = field(default_factory=list)  # kernels a helper thread launches (name, stream, duration)


def calls(n: int, kernels, **kw) -> list[Call]:
    return [Call(list(kernels), **kw) for _ in range(n)]


_LAUNCH = {"cuda": ("cudaLaunchKernel_v7000", "cudaGraphLaunch_v10000"), "hip": ("hipLaunchKernel", "hipGraphLaunch")}


def _layout(cs: list[Call], period_ns: float, api: str = "cuda"):
    """Absolute times of every range, API call and kernel: [(kind, name, start, end, extra)]."""
    launch_api, graph_api = _LAUNCH[api]
    out = []
    corr = 100
    for i, c in enumerate(cs):
        t0 = 1_000_000 + int(i * period_ns)
        t = t0 + 500
        for name, dur in c.apis:
            out.append(("api", name, t, t + int(dur), {"corr": corr, "tid": TID}))
            corr += 1
            t += int(dur) + 200
        last_end = t
        if c.graph:
            out.append(("api", graph_api, t, t + 3_000, {"corr": corr, "tid": TID}))
            k0 = t + 4_000
            for name, stream, dur, delay, *grid in c.kernels:
                ks = k0 + int(delay)
                out.append(("kernel", name, ks, ks + int(dur), {"corr": corr, "stream": stream, "grid": grid[0] if grid else 128}))
                k0 = ks + int(dur)
                last_end = max(last_end, k0)
            corr += 1
            t += 3_200
        else:
            gpu_free = t
            for name, stream, dur, delay, *grid in c.kernels:
                out.append(("api", launch_api, t, t + 2_000, {"corr": corr, "tid": TID}))
                ks = max(t + 3_000, gpu_free) + int(delay)
                out.append(("kernel", name, ks, ks + int(dur), {"corr": corr, "stream": stream, "grid": grid[0] if grid else 128}))
                gpu_free = ks + int(dur) if delay >= 0 else gpu_free
                last_end = max(last_end, ks + int(dur))
                corr += 1
                t += 2_500
        for name, stream, dur in c.helper:
            ht = t0 + 800
            out.append(("api", launch_api, ht, ht + 2_000, {"corr": corr, "tid": HELPER_TID}))
            out.append(("kernel", name, ht + 3_000, ht + 3_000 + int(dur), {"corr": corr, "stream": stream, "grid": 128}))
            corr += 1
        end = t0 + int(c.range_ns) if c.range_ns is not None else last_end + 1_000
        out.append(("range", "call", t0, end, {"i": i}))
    return out


def nsys_sqlite(path: Path, cs: list[Call], *, period_ns: float = 400_000, device: str = H100, range_name: str = "call") -> Path:
    """An nsys SQLite export of the calls, in the schema real exports use."""
    events = _layout(cs, period_ns)
    strings: dict[str, int] = {}

    def sid(s: str) -> int:
        return strings.setdefault(s, len(strings) + 1)

    kernels, runtime, nvtx = [], [], []
    for kind, name, s, e, x in events:
        if kind == "kernel":
            n = sid(name)
            kernels.append((s, e, 0, 1, x["stream"], x["corr"], gpid(PID), n, n, None, 32, x["grid"], 1, 1, 256, 1, 1, 0, 0))
        elif kind == "api":
            runtime.append((s, e, 0, gtid(PID, x["tid"]), x["corr"], sid(name), 0))
        else:
            nvtx.append((s, e, 59, None, None, None, range_name, gtid(PID, TID), None, None, 0))
    return make_db(path, {
        "StringIds": ("id INTEGER NOT NULL PRIMARY KEY, value TEXT NOT NULL", [(i, s) for s, i in strings.items()]),
        "TARGET_INFO_GPU": ("vmId INTEGER, id INTEGER NOT NULL, name TEXT, busLocation TEXT, clockRate INTEGER, smCount INTEGER", [(0, 0, device, "0000:07:00.0", 1980000000, 132)]),
        "CUPTI_ACTIVITY_KIND_KERNEL": (KERNEL_DDL, kernels),
        "CUPTI_ACTIVITY_KIND_RUNTIME": (RUNTIME_DDL, runtime),
        "NVTX_EVENTS": (NVTX_DDL, nvtx),
        "PROCESSES": ("globalPid INTEGER, pid INTEGER, name TEXT", [(gpid(PID), PID, "python")]),
    })


def kineto_json(path: Path, cs: list[Call], *, period_ns: float = 400_000, device: str = H100, range_name: str = "call", numbered: bool = False, api: str = "cuda") -> Path:
    """A torch.profiler (Kineto) Chrome trace of the calls: microsecond `ts`/`dur`, kernels on
    pid = device and tid = stream, runtime calls on the host thread, linked by `correlation`.
    `numbered` names the ranges as torch.profiler names its steps ("ProfilerStep#3"); `api="hip"`
    writes a ROCm trace (hipLaunchKernel, hipGraphLaunch under cat cuda_runtime, as Kineto does)."""
    events = _layout(cs, period_ns, api)
    trace = []
    for kind, name, s, e, x in events:
        ts, dur = s / 1000.0, (e - s) / 1000.0
        if kind == "kernel":
            trace.append({"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": x["stream"], "ts": ts, "dur": dur,
                          "args": {"device": 0, "stream": x["stream"], "correlation": x["corr"], "grid": [x["grid"], 1, 1], "block": [256, 1, 1], "registers per thread": 32}})
        elif kind == "api":
            api = name.split("_v")[0]
            cat = "cuda_driver" if api.startswith("cu") and not api.startswith("cuda") else "cuda_runtime"
            trace.append({"ph": "X", "cat": cat, "name": api, "pid": PID, "tid": x["tid"], "ts": ts, "dur": dur, "args": {"correlation": x["corr"]}})
        else:
            trace.append({"ph": "X", "cat": "user_annotation", "name": f"{range_name}#{x['i']}" if numbered else range_name, "pid": PID, "tid": TID, "ts": ts, "dur": dur, "args": {}})
    doc = {"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": device, "totalGlobalMem": 85_000_000_000, "computeMajor": 9, "computeMinor": 0}],
           "traceEvents": trace, "displayTimeUnit": "ms", "baseTimeNanoseconds": 1_700_000_000_000_000_000}
    path.write_text(json.dumps(doc))
    return path


def load(path: Path):
    import profaudit

    return profaudit.load(str(path))


# ---------------------------------------------------------------------------------------------
# audit sides and claims with traces attached
# ---------------------------------------------------------------------------------------------

FORMATS = {"nsys": (nsys_sqlite, "sqlite"), "kineto": (kineto_json, "pt.trace.json")}


def traced(tmp_path, role, timed_ns, cs, *, fmt="nsys", meta=None, seed=1, n=60, period_ns=400_000, **kw):
    """A side timed at `timed_ns` per call whose attached trace holds the calls `cs`."""
    write, ext = FORMATS[fmt]
    path = write(tmp_path / f"{role}-{len(list(tmp_path.iterdir()))}.{ext}", cs, period_ns=period_ns)
    m = {"timed_range": "call", "profiled_calls": len(cs)}
    m.update(meta or {})
    return side(role, timed_ns, seed=seed, n=n, runs=1, meta=m, profiles=load(path), **kw)


def tclaim(b, c, **kw):
    """A claim without the softmax fixture's 1 GB workload (these kernels take ~100 us)."""
    return claim(b, c, workload={}, **kw)


def triggered(report, code):
    return [f for f in report.findings if f.rule == code and f.status is Status.FAIL and f.severity > Severity.INFO]


BASE_CALLS = [("softmax_kernel", 7, 100_000, 0)]
