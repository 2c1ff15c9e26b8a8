"""Helpers several rules share: time-source families, cache state, roofline floors, formatting."""

from __future__ import annotations

import math
import re
from typing import Any

from profaudit.audit.evidence import Evidence, Fact, SideEvidence, dtype_of

# Host launch costs 4-6 us (FAIRNESS P11); kernels under 2 x this are launch-bound (P14).
LAUNCH_FLOOR_NS = 5_000.0

_FAMILIES: tuple[tuple[str, re.Pattern], ...] = (
    ("host", re.compile(r"^.*[_ ](cpu|cpu_only|host)$")),
    ("ncu", re.compile(r"^(ncu|nsight[ _-]?compute|gpu__time_duration.*)$")),
    ("trace", re.compile(r"^(nsys|nsight[ _-]?systems|kineto|cupti|torch[._]?profiler|chrome|xla|xprof|xplane|proton|rocprof|neuron[-_]?profile|neuron|trace|kernel[_ ]?durations?)$")),
    ("events", re.compile(r"^(cuda[_ ]?events?|events?|cudaevent.*|torch\.cuda\.event|hip[_ ]?events?|do[_ ]?bench.*|triton.*|nvbench.*|cuda[_ ]?graph[_ ]?events?|gpu[_ ]?timer)$")),
    ("device-timer", re.compile(r"^(nki\.benchmark|nki|neuron[_ ]?benchmark|xla[_ ]?device[_ ]?timer)$")),
    ("host", re.compile(r"^(host|wall|wall[_ ]?clock|time\.time|perf[_ ]?counter|time\.perf_counter|timeit|chrono|std::chrono|python|cpu|gettimeofday|pyperf|pytest[-_ ]?benchmark|google[-_ ]?benchmark|torch\.utils\.benchmark|clock_gettime|host[_ ]?timer)$")),
)


def time_family(value: Any) -> str | None:
    """Which kind of clock produced the times: events, ncu, trace, device-timer, host, mixed."""
    if value is None:
        return None
    s = str(value).strip().lower()
    if s.startswith("mixed:"):
        return "mixed"
    for fam, pat in _FAMILIES:
        if pat.match(s):
            return fam
    return "other:" + s


_COLD_SOURCES = {"nvbench_cold", "do_bench", "triton.do_bench", "triton_do_bench"}
_HOT_SOURCES = {"nvbench_batch", "do_bench_cudagraph", "nvbench_hot"}


def cache_state(se: SideEvidence) -> tuple[str | None, Fact | None]:
    """cold (caches flushed before each timed call) or hot, and the fact that says so."""
    f = se.fact("l2_flush")
    if f is not None:
        return ("cold" if f.value else "hot"), f
    f = se.fact("cache_state")
    if f is not None and str(f.value) in ("cold", "hot"):
        return str(f.value), f
    f = se.fact("cache_control")
    if f is not None:
        v = str(f.value).lower()
        if v in ("all", "flush", "flush_all"):
            return "cold", f
        if v in ("none", "off", "no"):
            return "hot", f
    f = se.fact("time_source")
    if f is not None:
        v = str(f.value).lower()
        if v in _COLD_SOURCES:
            return "cold", Fact("cold", f"{f.source} ({v} flushes L2 before each call)", "derived")
        if v in _HOT_SOURCES:
            return "hot", Fact("hot", f"{f.source} ({v} runs calls back to back)", "derived")
    return None, None


def clock_state(value: Any) -> str | None:
    if value is None:
        return None
    v = str(value).strip().lower()
    if v in ("base", "locked", "lock", "locked_base", "boost", "force-boost", "force_boost", "fixed", "application", "app_clocks"):
        return "locked"
    if v in ("none", "unlocked", "default", "auto", "dynamic", "free"):
        return "unlocked"
    return v


def fmt_time(ns: float | None) -> str:
    """Through the one formatter (profaudit.fmt): 97.8 ms, 1.00 µs, — for unknown."""
    from profaudit.fmt import fmt_ns

    return fmt_ns(ns)


def fmt_bytes(b: float | None) -> str:
    from profaudit.fmt import fmt_bytes as _fmt_bytes

    return _fmt_bytes(b)


def pct(x: float | None, digits: int = 1) -> str:
    if x is None or not math.isfinite(x):
        return "—"
    return f"{100 * x:.{digits}f}%"


def fx(x: float | None) -> str:
    """A ratio through the one formatter: 2.00x, 1.81x (trailing zeros kept: a rounded 2 never looks exact)."""
    from profaudit.fmt import fmt_x

    return fmt_x(x)


def _call(fn, *args, **kw) -> float | None:
    try:
        v = fn(*args, **kw)
    except (KeyError, ValueError, TypeError, AttributeError, LookupError):
        return None
    try:
        v = float(v) if v is not None else None
    except (TypeError, ValueError):
        return None
    return v if v is not None and math.isfinite(v) and v > 0 else None


def peak_precisions(ev: Evidence, se: SideEvidence) -> list[str]:
    """Precisions whose dense peak bounds this side's FLOP rate (the highest applies: a floor
    must never be above what the hardware could do)."""
    p = ev.workload.get("precision")
    if p is not None:
        return [str(p.value)]
    dt = dtype_of(se)
    tf32 = se.get("tf32")
    table = {
        "fp64": ["fp64_tensor", "fp64"],
        "fp32": (["tf32_tensor", "fp32"] if tf32 is not False else ["fp32"]),
        "fp16": ["fp16_tensor", "fp16"],
        "bf16": ["bf16_tensor", "bf16", "fp16_tensor"],
        "fp8": ["fp8_tensor"],
        "fp4": ["fp4_tensor"],
        "int8": ["int8_tensor"],
    }
    return table.get(dt or "", [])


def peak_flops(ev: Evidence, se: SideEvidence) -> tuple[float | None, str]:
    spec = se.spec
    if spec is None:
        return None, ""
    sparse = bool(ev.workload["sparse"].value) if "sparse" in ev.workload else bool(se.get("sparse", False))
    best, which = None, ""
    for prec in peak_precisions(ev, se):
        v = _call(spec.peak_flops_per_s, prec, sparse=sparse)
        if v is not None and (best is None or v > best):
            best, which = v, prec
    return best, which


def bandwidth(se: SideEvidence, level: str) -> float | None:
    if se.spec is None:
        return None
    return _call(se.spec.bandwidth_bytes_per_s, level)


def l2_bytes(se: SideEvidence) -> float | None:
    if se.spec is None:
        return None
    v = getattr(se.spec, "l2_cache_bytes", None)
    try:
        v = float(v) if v is not None else None
    except (TypeError, ValueError):
        return None
    return v if v and v > 0 else None


def roofline_floor(ev: Evidence, se: SideEvidence, level: str = "dram") -> tuple[float | None, dict]:
    """t_min = max(F / peak FLOP/s, W / bandwidth at `level`) in ns, with the numbers behind it."""
    if se.spec is None:
        return None, {"reason": se.spec_note or "no device spec"}
    flops, fsrc = ev.workload_value("flops", se)
    nbytes, bsrc = ev.workload_value("bytes", se)
    if flops is None and nbytes is None:
        return None, {"reason": "the claim gives no workload FLOPs or bytes"}
    detail: dict[str, Any] = {"device_spec": getattr(se.spec, "name", str(se.spec))}
    t_fl = t_bw = None
    if flops is not None:
        peak, prec = peak_flops(ev, se)
        if peak is not None:
            t_fl = flops / peak * 1e9
            detail.update(flops=flops, flops_source=fsrc, peak_flops_per_s=peak, peak_precision=prec, t_compute_ns=t_fl)
    if nbytes is not None:
        bw = bandwidth(se, level)
        if bw is not None:
            t_bw = nbytes / bw * 1e9
            detail.update(bytes=nbytes, bytes_source=bsrc, bandwidth_bytes_per_s=bw, level=level, t_memory_ns=t_bw)
    terms = [t for t in (t_fl, t_bw) if t is not None]
    if not terms:
        return None, {"reason": f"the device spec has no peak for this precision or {level} bandwidth", **detail}
    t_min = max(terms)
    detail["t_min_ns"] = t_min
    detail["bound"] = "compute" if t_fl is not None and t_min == t_fl else "memory"
    return t_min, detail


def unrecorded(ev: Evidence, baseline_value: Any, candidate_value: Any) -> str:
    """The sides whose value is None, as a message names them: "baseline", "candidate",
    "baseline and candidate", or "" when both are known."""
    return " and ".join(se.role for se, v in zip(ev.sides, (baseline_value, candidate_value)) if v is None)


def differ_text(key: str, fb: Fact, fc: Fact) -> str:
    return f"{key}: baseline {fb.value!r} ({fb.source}) vs candidate {fc.value!r} ({fc.source})"
