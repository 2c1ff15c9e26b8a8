"""What the attached traces (nsys SQLite, Kineto/Chrome JSON, rocprof ...) show about a side.

The audit reads the parsed `kernels` and `ranges` tables, so every trace format that fills them
is read the same way:

- `call_times(se)`: the GPU time one timed call really costs, per call: the union of the kernel
  intervals the call launched, over all streams (two kernels that overlap on two streams cost
  their span, not their sum), including kernels launched by other threads or on other streams
  while the call ran (work a per-stream timer misses).
- `one_time_work(se)`: module loads, JIT compilation, autotuning and allocations inside the
  timed range, per call.
- `graph_launches(se)` / `kernel_launches(se)`: how the calls were launched (CUDA/HIP graphs or
  kernel by kernel).
- `reduced_precision_kernels(se)`: kernels whose names reveal tensor-core, TF32 or FP16 paths.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import polars as pl

from profaudit.fmt import plural

if TYPE_CHECKING:  # pragma: no cover
    from profaudit.audit.evidence import SideEvidence

# API calls and annotations that mean one-time work: module loading, JIT compilation, autotuning,
# allocator growth (FAIRNESS P1: "cuModuleLoad, NVRTC/ptxas/compile activity ... or cudaMalloc
# inside the timed NVTX range").
ONE_TIME = re.compile(
    r"cuModuleLoad|cuLibraryLoad|cuModuleGetFunction|cuLinkComplete|hipModuleLoad|hiprtc|nvrtc|ptxas|nvJitLink|"
    r"triton.*compil|autotun|torch\._dynamo|torch\._inductor|compile_fx|torch/_dynamo/(convert_frame|symbolic_convert|output_graph)|"
    r"torch/_inductor/(compile_fx|codecache|select_algorithm)|"
    r"XlaCompile|xla.*compile|jit_compile|neuron.*compil|^cudaMalloc$|^cuMemAlloc|^cudaMallocAsync$|^hipMalloc$|^hipMallocAsync$|^hipExtMallocWithFlags$",
    re.IGNORECASE,
)
GRAPH_LAUNCH = re.compile(r"^(cuda|cu|hip)GraphLaunch", re.IGNORECASE)
KERNEL_LAUNCH = re.compile(r"^(cuda|cu|hip)(Launch(Cooperative)?Kernel|ModuleLaunchKernel|ExtLaunchKernel|LaunchKernelEx)|^hipExtModuleLaunchKernel", re.IGNORECASE)
_API_KINDS = ("cuda_runtime", "cuda_driver", "hip_runtime", "hip_driver", "hip_api", "hsa_api", "hip_compiler_api", "xpu_runtime", "xpu_driver", "runtime", "driver")

# Kernel names that reveal a reduced-precision or tensor-core path (cuBLAS/cuDNN/CUTLASS naming):
# TF32 (tf32, cutlass s1688/s16816 tensorop), FP16/BF16/FP8 (h884/h1688/h16816 gemm, hmma, f16,
# bf16, half, e4m3) and tensor-core MMA kernels (hmma, wgmma, tensorop, mma_sync).
TF32_NAME = re.compile(r"tf32|tensorop_s\d{3,5}|_s1688|_s16816|s1688gemm|s16816gemm", re.IGNORECASE)
HALF_NAME = re.compile(r"h\d{3,5}gemm|hmma|f16|bf16|half|bfloat16|e4m3|e5m2|fp8", re.IGNORECASE)
# Generic tensor-core markers; a bare xmma name is not among them (cuBLAS also names FP32 paths
# xmma): it counts only with a reduced-precision token (tf32, f16, bf16 ...) above.
TENSOR_CORE_NAME = re.compile(r"hmma|wgmma|tensorop|mma_sync|tensor_?core", re.IGNORECASE)
# Strict FP32 kernel names (SIMT sgemm): a tensor-core name on a side that claims strict FP32 is
# the evidence, an sgemm is the fair twin.
MATMUL_NAME = re.compile(r"gemm|matmul|mm_|_mm\b|bmm|conv|implicit_?gemm|dgrad|wgrad|fprop|cublas|cudnn|cutlass", re.IGNORECASE)


@dataclass
class CallTimes:
    """GPU time per timed call from a trace (ns), in call order, and how it was found."""

    values: np.ndarray
    how: str
    summed_ns: np.ndarray | None = None  # sum of kernel durations per call (for the overlap note)
    streams: int = 1
    foreign_ns: float = 0.0  # kernel time on streams other than the main one, all calls
    main_stream_ns: np.ndarray | None = None  # per call: union of the main stream's kernels only
    after_ns: float = 0.0  # kernel time launched after the last timed call (outside every call)

    @property
    def n(self) -> int:
        return int(self.values.size)

    @property
    def median(self) -> float:
        return float(np.median(self.values)) if self.values.size else float("nan")


def union_ns(starts: np.ndarray, ends: np.ndarray) -> float:
    """Length of the union of the intervals [start, end): overlapping kernels count once."""
    if starts.size == 0:
        return 0.0
    order = np.argsort(starts, kind="stable")
    s, e = starts[order].astype(np.float64), ends[order].astype(np.float64)
    run_end = np.maximum.accumulate(e)
    opens = np.flatnonzero(np.r_[True, s[1:] > run_end[:-1]])
    closes = np.r_[opens[1:] - 1, s.size - 1]
    return float(np.maximum(run_end[closes] - s[opens], 0).sum())


def _named_ranges(se: "SideEvidence", key: str) -> pl.DataFrame | None:
    r = se.named_ranges(key)
    return r.sort("start_ns") if r is not None else None


def call_ranges(se: "SideEvidence") -> tuple[pl.DataFrame, str, str] | None:
    """The NVTX ranges that each wrap one timed call (or one timing sample), how they were found
    and the meta key that names them: `call_range`, else a `timed_range` that occurs twice+."""
    for key in ("call_range", "timed_range"):
        r = _named_ranges(se, key)
        if r is not None and r.height >= 2:
            return r, f"{r.height} NVTX ranges {se.get(key)!r}", key
    return None


def _launch_times(se: "SideEvidence") -> dict[tuple[str, int], int]:
    """(profile, correlation id) -> start of the host launch call, for kernels to be placed by the
    time they were launched (a kernel queued behind earlier work starts after its call's range)."""
    r = se.ranges
    if r is None or r.height == 0 or "correlation_id" not in r.columns:
        return {}
    a = r.filter(pl.col("correlation_id").is_not_null() & pl.col("start_ns").is_not_null() & pl.col("kind").is_in(list(_API_KINDS)))
    if a.height == 0:
        return {}
    a = a.unique(subset=["profile_id", "correlation_id"], keep="first", maintain_order=True)
    return {(p, int(c)): int(s) for p, c, s in zip(a["profile_id"].to_list(), a["correlation_id"].to_list(), a["start_ns"].to_list())}


def _assigned(se: "SideEvidence", k: pl.DataFrame, ranges: pl.DataFrame):
    """Per profile (the call ranges, its kernels, each kernel's call index): a kernel belongs to
    the call during which it was launched (its launch API call's start, else its own start, from
    the start of one call range to the start of the next; the last call owns launches up to its
    end or one typical gap, whichever is later, so a checker after the loop is not a call)."""
    launch = _launch_times(se)
    for pid in ranges["profile_id"].unique(maintain_order=True).to_list():
        rr = ranges.filter(pl.col("profile_id") == pid)
        kk = k.filter(pl.col("profile_id") == pid)
        procs = rr["process_id"].drop_nulls().unique().to_list() if "process_id" in rr.columns else []
        if procs and "process_id" in kk.columns and kk.filter(pl.col("process_id").is_in(procs)).height:
            # another process's kernels at the same moment are contention, not the call's work
            # (only where the trace ties kernels to host processes at all)
            kk = kk.filter(pl.col("process_id").is_null() | pl.col("process_id").is_in(procs))
        ks = kk["start_ns"].to_numpy().astype(np.int64)
        corr = kk["correlation_id"].to_list() if "correlation_id" in kk.columns else [None] * kk.height
        anchor = np.array([launch.get((pid, int(c)), s) if c is not None else s for c, s in zip(corr, ks.tolist())], dtype=np.int64)
        rs, re_ = rr["start_ns"].to_numpy().astype(np.int64), rr["end_ns"].to_numpy().astype(np.int64)
        gap = int(np.median(np.diff(rs))) if rs.size > 1 else 0
        edges = np.r_[rs, max(int(re_[-1]), int(rs[-1]) + gap)]
        yield rr, kk, np.searchsorted(edges, anchor, side="right") - 1


def _kernel_frame(se: "SideEvidence") -> pl.DataFrame | None:
    if not se.has_kernels:
        return None
    k = se.kernels.filter(pl.col("start_ns").is_not_null() & pl.col("end_ns").is_not_null())
    return k if k.height else None


def union_per_group(group: np.ndarray, starts: np.ndarray, ends: np.ndarray, n: int) -> np.ndarray:
    """Union length of the intervals of each group 0..n-1 (`group` per interval), vectorised:
    sorted by (group, start), a new busy stretch opens where an interval starts after every
    earlier one of its group ended."""
    out = np.zeros(n)
    if starts.size == 0:
        return out
    order = np.lexsort((starts, group))
    g, s, e = group[order], starts[order].astype(np.float64), ends[order].astype(np.float64)
    new_group = np.r_[True, g[1:] != g[:-1]]
    # running max of ends within each group: offset each group far above the previous ones
    span = float(e.max() - s.min()) + 1.0
    rank = np.cumsum(new_group) - 1
    run_end = np.maximum.accumulate(e + rank * span) - rank * span
    opens = new_group | np.r_[True, s[1:] > run_end[:-1]]
    idx = np.flatnonzero(opens)
    closes = np.r_[idx[1:] - 1, s.size - 1]
    np.add.at(out, g[idx], np.maximum(run_end[closes] - s[idx], 0.0))
    return out


def call_times(se: "SideEvidence") -> CallTimes | None:
    """Per-call GPU time from the attached trace: a call costs the union of the intervals of the
    kernels it launched (see `_assigned`), over every stream and launching thread. With a single
    timed range and `profiled_calls`, the one value is the union over the range / calls. Computed
    once per side (the rules share it)."""
    cached = se.__dict__.get("_call_times", False)
    if cached is not False:
        return cached
    se.__dict__["_call_times"] = res = _call_times(se)
    return res


def _call_times(se: "SideEvidence") -> CallTimes | None:
    k = _kernel_frame(se)
    if k is None:
        return None
    cr = call_ranges(se)
    if cr is None:
        return _whole_range(se, k)
    ranges, how, key = cr
    values, summed, main_only = [], [], []
    foreign = after = 0.0
    streams = set()
    for rr, kk, idx in _assigned(se, k, ranges):
        n = rr.height
        ks, ke = kk["start_ns"].to_numpy().astype(np.int64), kk["end_ns"].to_numpy().astype(np.int64)
        stream = kk["stream"].fill_null(-1).to_numpy() if "stream" in kk.columns else np.zeros(kk.height)
        inside = (idx >= 0) & (idx < n)
        later = idx >= n
        after += union_ns(ks[later], ke[later])
        main = None
        if inside.any():
            vals, counts = np.unique(stream[inside], return_counts=True)
            main = vals[np.argmax(counts)]
            streams.update(vals.tolist())
        g, s_, e_ = idx[inside], ks[inside], ke[inside]
        values.append(union_per_group(g, s_, e_, n))
        summed.append(np.bincount(g, weights=(e_ - s_).astype(np.float64), minlength=n))
        on = stream[inside] == main if main is not None else np.ones(g.size, dtype=bool)
        main_only.append(union_per_group(g[on], s_[on], e_[on], n))
        foreign += float((e_[~on] - s_[~on]).sum())
    per = 1.0
    if key == "timed_range":
        # timed ranges that each hold k back-to-back calls: a call costs 1/k of the range's work
        f = se.calls_per_sample()
        k = f.value if f is not None else None
        if isinstance(k, (int, float)) and k > 1:
            per = float(k)
            how += f", / {k:g} calls per range"
    return CallTimes(np.concatenate(values) / per, f"union of kernel intervals per call over all streams ({how})", np.concatenate(summed) / per, max(1, len(streams)), foreign / per, np.concatenate(main_only) / per, after)


def _whole_range(se: "SideEvidence", k: pl.DataFrame) -> CallTimes | None:
    calls, how = se.profiled_calls()
    if not calls:
        return None
    r = _named_ranges(se, "timed_range")
    if r is not None:
        total = 0.0
        for s, e in zip(r["start_ns"].to_list(), r["end_ns"].to_list()):
            m = (k["start_ns"] >= s) & (k["start_ns"] < e)
            kk = k.filter(m)
            total += union_ns(kk["start_ns"].to_numpy(), kk["end_ns"].to_numpy())
        where = f"inside the NVTX range {se.get('timed_range')!r}"
    else:
        total = union_ns(k["start_ns"].to_numpy(), k["end_ns"].to_numpy())
        where = "over the whole trace"
    return CallTimes(np.asarray([total / calls]), f"union of kernel intervals {where} / {how}")


@dataclass
class OneTime:
    """One-time work (compile, module load, autotune, allocation) inside the timed range."""

    total_ns: float
    calls_hit: list[int] = field(default_factory=list)  # indices of call ranges that hold it
    per_call_ns: np.ndarray | None = None  # host duration of each call range (ns)
    one_time_per_call_ns: np.ndarray | None = None
    timed_ns: float = 0.0
    names: dict[str, int] = field(default_factory=dict)
    recurring: list[str] = field(default_factory=list)  # one-time-looking names every call has

    @property
    def share(self) -> float:
        return self.total_ns / self.timed_ns if self.timed_ns > 0 else 0.0


# A first call this many times the typical call holds one-time work even where no API call
# names it (JIT in Python, lazy initialisation): FAIRNESS P1's "orders of magnitude" first call.
FIRST_CALL_FACTOR = 10.0
_CONFIG_COLS = ("grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z")


def one_time_work(se: "SideEvidence") -> OneTime | None:
    """One-time work inside the timed ranges: API calls and annotations that name it (module
    loads, compilation, autotuning, allocation); with per-call ranges also calls that launch
    kernel variants or launch configurations the steady calls never use (autotuning: the extra
    time of those calls), and a first call an order of magnitude longer than the typical call.
    Per call, so that the claimed statistic can be recomputed without it."""
    timed = _named_ranges(se, "timed_range")
    if timed is None:
        return None
    total = float((timed["end_ns"] - timed["start_ns"]).sum())
    if total <= 0:
        return None
    ot = se.ranges.filter(pl.col("name").is_not_null() & pl.col("start_ns").is_not_null() & pl.col("end_ns").is_not_null() & pl.col("name").cast(pl.Utf8).str.contains("(?i)" + ONE_TIME.pattern))
    res = OneTime(0.0, timed_ns=total)
    s, e = ot["start_ns"].to_numpy().astype(np.float64), ot["end_ns"].to_numpy().astype(np.float64)
    names = np.array(ot["name"].cast(pl.Utf8).to_list(), dtype=object)
    inside = np.zeros(s.size, dtype=bool)
    for ts, te in zip(timed["start_ns"].to_list(), timed["end_ns"].to_list()):
        inside |= (s >= ts) & (s < te)
    # A name that recurs in most calls is per-call work (an allocation every call, a compiled
    # region's wrapper), part of the steady state, not one-time work.
    cr = call_ranges(se)
    calls, _ = se.profiled_calls()
    n_calls = cr[0].height if cr is not None else (calls or timed.height)
    if n_calls >= 2 and inside.any():
        counts: dict[str, int] = {}
        for n in names[inside]:
            counts[n] = counts.get(n, 0) + 1
        res.recurring = sorted(n for n, k in counts.items() if k > 0.5 * n_calls)
        if res.recurring:
            inside &= ~np.isin(names, res.recurring)
    s, e, names = s[inside], e[inside], names[inside]
    for ts, te in zip(timed["start_ns"].to_list(), timed["end_ns"].to_list()):
        m = (s >= ts) & (s < te)
        if m.any():
            res.total_ns += union_ns(s[m], np.minimum(e[m], te))  # nested annotations count once
            for n in names[m]:
                res.names[n] = res.names.get(n, 0) + 1
    if cr is not None:
        _per_call(se, cr[0], res, s, e)
    res.names = dict(sorted(res.names.items(), key=lambda kv: -kv[1])[:8])
    return res


# A gap between API calls inside a call this many typical calls long is one-time host work.
GAP_FACTOR = 5.0


def _host_gaps(se: "SideEvidence", rr: pl.DataFrame) -> np.ndarray | None:
    """Per call range, the longest stretch of host time inside it that no API call on its thread
    covers (from the range start, between API calls, to the range end); None without API calls."""
    r = se.ranges
    if r is None or "thread_id" not in r.columns:
        return None
    pid = rr["profile_id"][0]
    api = r.filter((pl.col("profile_id") == pid) & pl.col("kind").is_in(list(_API_KINDS)) & pl.col("start_ns").is_not_null() & pl.col("end_ns").is_not_null())
    if api.height == 0:
        return None
    api = api.sort("start_ns")
    s_all, e_all = api["start_ns"].to_numpy().astype(np.float64), api["end_ns"].to_numpy().astype(np.float64)
    t_all = api["thread_id"].to_numpy()
    tids = rr["thread_id"].to_list() if "thread_id" in rr.columns else [None] * rr.height
    out = []
    for a, b, tid in zip(rr["start_ns"].to_list(), rr["end_ns"].to_list(), tids):
        i0, i1 = np.searchsorted(s_all, a, side="left"), np.searchsorted(s_all, b, side="left")
        st_, en, th = s_all[i0:i1], np.minimum(e_all[i0:i1], b), t_all[i0:i1]
        if tid is not None:
            keep = th == tid
            st_, en = st_[keep], en[keep]
        covered_to = np.maximum.accumulate(np.r_[a, en])
        out.append(float(np.max(np.r_[st_, b] - covered_to)))
    return np.asarray(out)


def _per_call(se: "SideEvidence", ranges: pl.DataFrame, res: OneTime, s: np.ndarray, e: np.ndarray) -> None:
    durs, once = [], []
    k = _kernel_frame(se)
    groups = _assigned(se, k, ranges) if k is not None else ((ranges.filter(pl.col("profile_id") == p), None, None) for p in ranges["profile_id"].unique(maintain_order=True).to_list())
    for rr, kk, idx in groups:
        rs, re_ = rr["start_ns"].to_numpy().astype(np.float64), rr["end_ns"].to_numpy().astype(np.float64)
        d = re_ - rs
        o = np.zeros(d.size)
        for i, (a, b) in enumerate(zip(rs, re_)):
            m = (s >= a) & (s < b)
            if m.any():
                o[i] = union_ns(s[m], np.minimum(e[m], b))
        typical = float(np.median(d[o == 0])) if (o == 0).any() else float(np.median(d))
        if kk is not None and kk.height and d.size >= 4:
            # kernel variants (name + launch configuration) that the second half of the calls,
            # the steady state, never launches: autotuning or one-time kernels
            cols = [c for c in _CONFIG_COLS if c in kk.columns]
            key = kk.select(pl.concat_str([pl.coalesce("short_name", "name").cast(pl.Utf8)] + [pl.col(c).cast(pl.Utf8).fill_null("") for c in cols], separator="|")).to_series().to_list()
            steady = {key[j] for j in range(len(key)) if idx[j] >= d.size // 2}
            odd = {int(idx[j]) for j in range(len(key)) if 0 <= idx[j] < d.size // 2 and key[j] not in steady}
            if odd:
                res.names[f"kernel variants the steady calls never launch ({plural(len(odd), 'call')})"] = len(odd)
            for i in odd:
                o[i] = max(o[i], d[i] - typical)
        gaps = _host_gaps(se, rr)
        if gaps is not None and d.size >= 3:
            # host time inside a call that no API call explains (Python-side JIT, a recompile on a
            # new shape): the call's longest gap beyond the typical call's longest gap
            excess = gaps - float(np.median(gaps))
            odd = np.flatnonzero(excess > GAP_FACTOR * typical)
            if odd.size:
                res.names[f"host time no API call explains ({plural(int(odd.size), 'call')})"] = int(odd.size)
                o[odd] = np.maximum(o[odd], excess[odd])
        if d.size >= 3 and d[0] > FIRST_CALL_FACTOR * typical and d[0] - typical > o[0]:
            res.names[f"first call {d[0] / typical:.0f}x the typical call"] = 1
            o[0] = d[0] - typical
        durs.append(d)
        once.append(np.minimum(o, d))
    res.per_call_ns = np.concatenate(durs)
    res.one_time_per_call_ns = np.concatenate(once)
    res.calls_hit = [int(i) for i in np.flatnonzero(res.one_time_per_call_ns > 0)]
    res.total_ns = max(res.total_ns, float(res.one_time_per_call_ns.sum()))


def _api_names(se: "SideEvidence", pattern: re.Pattern) -> pl.DataFrame | None:
    r = se.ranges
    if r is None or r.height == 0:
        return None
    return r.filter(pl.col("name").is_not_null() & pl.col("name").cast(pl.Utf8).str.contains(pattern.pattern))


def graph_launches(se: "SideEvidence") -> int | None:
    """Graph launches (cudaGraphLaunch, cuGraphLaunch, hipGraphLaunch) in the trace, or None
    without API ranges to look at."""
    g = _api_names(se, re.compile("(?i)" + GRAPH_LAUNCH.pattern))
    return None if g is None else g.height


def kernel_launches(se: "SideEvidence") -> int | None:
    g = _api_names(se, re.compile("(?i)" + KERNEL_LAUNCH.pattern))
    return None if g is None else g.height


def has_api_ranges(se: "SideEvidence") -> bool:
    r = se.ranges
    return r is not None and r.height > 0 and r.filter(pl.col("kind").is_in(list(_API_KINDS))).height > 0


def kernel_names(se: "SideEvidence") -> list[str]:
    if not se.has_kernels:
        return []
    return [str(n) for n in se.kernels.select(pl.coalesce("name", "short_name")).to_series().drop_nulls().unique().to_list()]


def reduced_precision_kernels(se: "SideEvidence") -> dict[str, list[str]]:
    """Kernel names of the side that reveal a non-FP32 path, by what they reveal (tf32, fp16/bf16,
    tensor cores)."""
    out: dict[str, list[str]] = {}
    for n in kernel_names(se):
        if not (MATMUL_NAME.search(n) or TENSOR_CORE_NAME.search(n) or "xmma" in n.lower()):
            continue  # an element-wise kernel's name says nothing about matmul precision
        if HALF_NAME.search(n):
            out.setdefault("FP16/BF16/FP8", []).append(n)
        elif TF32_NAME.search(n):
            out.setdefault("TF32", []).append(n)
        elif TENSOR_CORE_NAME.search(n):
            out.setdefault("tensor-core", []).append(n)
    return {k: sorted(v)[:4] for k, v in out.items()}


# The input precision a matmul/convolution kernel's name spells (cuBLAS, cuBLASLt, CUTLASS, cuDNN
# naming), tried in this order because the names also carry the accumulator type (bf16bf16_bf16f32
# accumulates in f32, f16_s16816gemm runs FP16 inputs on an FP32-accumulating MMA): the first
# input type that matches is the one the kernel reads. `sgemm` is the SIMT FP32 path.
PRECISION_NAMES: tuple[tuple[str, re.Pattern], ...] = (
    ("fp8", re.compile(r"e4m3|e5m2|fp8|f8f8|_f8_", re.IGNORECASE)),
    ("int8", re.compile(r"imma|i8i8|s8s8|int8|igemm|_i8_|_s8_", re.IGNORECASE)),
    ("bf16", re.compile(r"bf16|bfloat16", re.IGNORECASE)),
    ("fp16", re.compile(r"(?<![bt])f16|fp16|half|hgemm|h\d{3,5}gemm|hmma", re.IGNORECASE)),
    ("tf32", TF32_NAME),
    ("fp32", re.compile(r"sgemm|scudnn", re.IGNORECASE)),
)
# Names that are matmul/convolution kernels for the precision read above: stricter than
# MATMUL_NAME, whose "conv" also matches an element-wise "convert" kernel with Half in its
# template arguments (a cast says nothing about the precision of the product).
PRECISION_GATE = re.compile(r"gemm|gemv|matmul|xmma|hmma|imma|wgmma|mma_sync|tensorop|cutlass|cublas|cudnn|conv(?!ert)|fprop|dgrad|wgrad", re.IGNORECASE)
# From the cheapest to the most exact: a side that ran a class earlier in this list than its
# declared dtype did less precise (faster) work than it says.
PRECISION_ORDER = ("fp8", "int8", "fp16", "bf16", "tf32", "fp32", "fp64")


def traced_precisions(se: "SideEvidence") -> dict[str, list[str]]:
    """The input precisions the side's matmul/convolution kernel names spell, each with up to two
    of the names ({} when no kernel name says: an element-wise kernel or an unnamed path)."""
    out: dict[str, list[str]] = {}
    for n in kernel_names(se):
        if not PRECISION_GATE.search(n):
            continue
        for cls, pat in PRECISION_NAMES:
            if pat.search(n):
                out.setdefault(cls, []).append(n)
                break
    return {k: sorted(v)[:2] for k, v in sorted(out.items(), key=lambda kv: PRECISION_ORDER.index(kv[0]))}


def matmul_kernels(se: "SideEvidence") -> list[str]:
    return [n for n in kernel_names(se) if MATMUL_NAME.search(n)]


def _count_within(points: np.ndarray, ranges: pl.DataFrame) -> list[int]:
    """How many of `points` fall in [start, end) of each range (sorted search, not a scan)."""
    p = np.sort(points)
    lo = np.searchsorted(p, ranges["start_ns"].to_numpy(), side="left")
    hi = np.searchsorted(p, ranges["end_ns"].to_numpy(), side="left")
    return (hi - lo).astype(int).tolist()


def _calls_per_timed_range(se: "SideEvidence") -> tuple[int, str] | None:
    """Calls behind each timing sample when the trace has one timed range per sample: the range
    lasts k per-call times (the log reports time per call) and holds at least k kernel launches.
    Both are needed: a launch-bound call's range is longer than its device time for host reasons,
    but it does not hold k launches for it. None when the trace cannot say."""
    r = _named_ranges(se, "timed_range")
    t = se.typical_time_ns()
    k = _kernel_frame(se)
    if r is None or r.height < 2 or not t or k is None:
        return None
    ratio = float(np.median((r["end_ns"] - r["start_ns"]).to_numpy())) / t
    if ratio < 1.5:
        return None  # a range of one call's length may wrap one call of a larger sample: no answer
    launches = _count_within(k["start_ns"].to_numpy(), r)
    n = int(round(ratio))
    if float(np.median(launches)) >= n:
        return n, f"attached trace: each {se.get('timed_range')!r} range lasts {ratio:.1f} per-call times and holds a median {np.median(launches):.0f} kernel launches"
    return None


def derive_facts(se: "SideEvidence") -> None:
    """Facts the trace records about how the side ran, under their own keys (the rules weigh them
    against the claim's meta): `cuda_graphs_traced` from graph against kernel launches, and
    `calls_per_sample_traced` from call ranges nested in each timed range."""
    if has_api_ranges(se):
        g, k = graph_launches(se) or 0, kernel_launches(se) or 0
        if g or k:
            se.add("cuda_graphs_traced", g > 0, f"attached trace: {g} graph launches (cudaGraphLaunch/hipGraphLaunch), {k} kernel launches", "recorded")
    call, timed = se.get("call_range"), se.get("timed_range")
    if not call or call == timed:
        k = _calls_per_timed_range(se)
        if k is not None:
            se.add("calls_per_sample_traced", k[0], k[1], "recorded")
        return
    if call and timed and call != timed:
        outer, inner = _named_ranges(se, "timed_range"), _named_ranges(se, "call_range")
        if outer is not None and inner is not None:
            counts = [c for c in _count_within(inner["start_ns"].to_numpy(), outer) if c > 0]
            if counts:
                se.add("calls_per_sample_traced", int(np.median(counts)), f"attached trace: median {int(np.median(counts))} {call!r} ranges per {timed!r} range", "recorded")


ATTENTION_NAME = re.compile(r"attn|attention|flash|fmha|sdpa|mha_", re.IGNORECASE)
_CAUSAL_TRUE = re.compile(r"is_?causal\s*=\s*(true|1)\b|causal\s*=\s*(true|1)\b|(?<![a-z])causal(?![a-z_]*\s*=\s*(false|0))", re.IGNORECASE)


def attention_masking(se: "SideEvidence") -> tuple[bool, list[str]] | None:
    """(causal, attention kernel names) from the side's kernel names: causal when a name says so
    (`causal`, `Is_causal=true`), not causal when attention kernels exist and none does; None
    without attention kernels."""
    names = [n for n in kernel_names(se) if ATTENTION_NAME.search(n)]
    if not names:
        return None
    causal = [n for n in names if _CAUSAL_TRUE.search(n)]
    return (True, causal[:2]) if causal else (False, names[:2])
