"""Everything the rules may read, gathered once per claim, each fact with its provenance.

`gather(claim)` turns a `Claim` into an `Evidence`: per side, the facts asserted in the claim's
`meta`, the facts recorded by the tools (profile metadata: device, driver, clock and cache
control with their origin; sample columns: clocks, temperature, throttle reasons, phase, cache
state, time source; kernel tables: durations, DRAM bytes, streams, launches per call), the
per-iteration times split into warm-up head and steady state, and the device spec. Rules read
only this object, so a rule never parses a file and the same facts back every finding.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

from profaudit.audit.claim import META_KEYS, Claim, Side, normalise_dtype, validate_meta
from profaudit.audit.stats import SteadyState, Statistic, steady_state

if TYPE_CHECKING:  # pragma: no cover
    from profaudit.audit.shared_run import SharedRun
    from profaudit.audit.speedup import Comparison

# Fact kinds, most trusted first: what a tool recorded beats what a claim asserts, which beats
# what we derived, which beats a tool default nobody confirmed.
KIND_RANK = {"recorded": 0, "meta": 1, "derived": 2, "default": 3}

# Where profile metadata columns land among the fact keys.
_METADATA_FACTS = {
    "device_name": "device",
    "driver_version": "driver",
    "cuda_version": "cuda_version",
    "clock_control": "clock_control",
    "cache_control": "cache_control",
    "tool": "tool",
    "tool_version": "tool_version",
    "host": "host",
}

_SUMMARY_ALIASES = {
    "mean": "mean",
    "avg": "mean",
    "average": "mean",
    "median": "median",
    "p50": "median",
    "min": "min",
    "minimum": "min",
    "max": "max",
    "maximum": "max",
    "std": "std",
    "stdev": "std",
    "stddev": "std",
    "sd": "std",
    "total": "total",
    "sum": "total",
}


@dataclass(frozen=True)
class Fact:
    value: Any
    source: str  # where it came from, in words a reviewer can follow
    kind: str = "meta"  # recorded, meta, derived, default

    def as_dict(self) -> dict:
        from profaudit.audit.findings import _jsonable

        return {"value": _jsonable(self.value), "source": self.source, "kind": self.kind}

    def __str__(self) -> str:
        return f"{self.value} ({self.source})"


def range_named(ranges: pl.DataFrame, name: Any) -> pl.Expr:
    """Ranges called `name`; when none is, the numbered ones torch.profiler writes for it
    ("ProfilerStep#12" for `ProfilerStep`): each is one step of the same loop."""
    name = str(name)
    exact = pl.col("name").cast(pl.Utf8) == name
    if ranges.height and ranges.filter(exact).height == 0:
        import re

        return pl.col("name").cast(pl.Utf8).str.contains("^" + re.escape(name) + r"#\d+$")
    return exact


@dataclass
class SideEvidence:
    role: str
    label: str
    facts: dict[str, list[Fact]] = field(default_factory=dict)
    # Per-iteration times (ns per call), measure phase only, in execution order, all runs.
    times: np.ndarray | None = None
    runs: np.ndarray | None = None  # run index aligned with `times` (None: one run)
    steady_mask: np.ndarray | None = None
    steady_states: list[SteadyState] = field(default_factory=list)
    warmup_rows: int = 0  # rows the log itself labelled phase=warmup (already excluded)
    invalid_rows: int = 0  # null, NaN or negative durations (excluded)
    columns: dict[str, np.ndarray] = field(default_factory=dict)  # aligned with `times`
    throttle: pl.Series | None = None  # throttle_reasons, aligned with `times`
    summaries: dict[str, float] = field(default_factory=dict)  # statistic -> ns per call
    summary_count: int | None = None
    kernels: pl.DataFrame | None = None  # kernel rows of the attached profiles
    ranges: pl.DataFrame | None = None
    spec: Any = None  # DeviceSpec or None
    spec_note: str = ""
    sources: tuple[str, ...] = ()
    sweep: pl.DataFrame | None = None  # Side.sweep: median time per parameter set of the same benchmark

    # ------------------------------------------------------------------ facts
    def add(self, key: str, value: Any, source: str, kind: str = "meta") -> None:
        if value is None or (isinstance(value, float) and not math.isfinite(value)):
            return
        if isinstance(value, str) and not value.strip():
            return
        self.facts.setdefault(key, []).append(Fact(value, source, kind))
        self.facts[key].sort(key=lambda f: KIND_RANK.get(f.kind, 9))

    def fact(self, key: str) -> Fact | None:
        fs = self.facts.get(key)
        return fs[0] if fs else None

    def get(self, key: str, default: Any = None) -> Any:
        f = self.fact(key)
        return f.value if f is not None else default

    def all(self, key: str) -> list[Fact]:
        return list(self.facts.get(key, ()))

    def has(self, key: str) -> bool:
        return bool(self.facts.get(key))

    # ------------------------------------------------------------------ samples
    @property
    def has_samples(self) -> bool:
        return self.times is not None and self.times.size > 0

    # The sample arrays are set once by `gather`; what is derived from them is computed once.
    @cached_property
    def steady(self) -> np.ndarray:
        """Steady-state times (the warm-up head of every run removed)."""
        if not self.has_samples:
            return np.empty(0)
        return self.times[self.steady_mask] if self.steady_mask is not None else self.times

    @cached_property
    def steady_sorted(self) -> np.ndarray:
        return np.sort(self.steady)

    @cached_property
    def times_sorted(self) -> np.ndarray:
        if not self.has_samples:
            return np.empty(0)
        return self.steady_sorted if self.head_count == 0 else np.sort(self.times)

    @property
    def steady_runs(self) -> np.ndarray | None:
        if self.runs is None or self.steady_mask is None:
            return self.runs
        return self.runs[self.steady_mask]

    def steady_column(self, name: str) -> np.ndarray | None:
        col = self.columns.get(name)
        if col is None:
            return None
        return col[self.steady_mask] if self.steady_mask is not None else col

    @property
    def head_count(self) -> int:
        return sum(s.start for s in self.steady_states)

    @property
    def n(self) -> int:
        """Steady-state samples, or the reported sample count for summaries."""
        if self.has_samples:
            return int(self.steady.size)
        return int(self.summary_count or 0)

    def typical_time_ns(self) -> float | None:
        """Median steady-state time per call, else a reported median or mean."""
        if self.has_samples:
            s = self.steady_sorted
            return float(0.5 * (s[(s.size - 1) // 2] + s[s.size // 2]))
        for k in ("median", "mean", "min"):
            if k in self.summaries:
                return self.summaries[k]
        return None

    def clock_mhz(self) -> tuple[np.ndarray | float | None, str]:
        """SM clock per steady sample when logged (>= 90 % non-null), else a constant from a fact
        (looked up on every call: `compare` adds clock facts after gathering)."""
        if self._clock_column is not None:
            return self._clock_column, "sample column sm_clock_mhz"
        f = self.fact("sm_clock_mhz")
        if f is not None:
            return float(f.value), f.source
        return None, ""

    @cached_property
    def _clock_column(self) -> np.ndarray | None:
        col = self.steady_column("sm_clock_mhz")
        if col is None or not col.size or np.isfinite(col).mean() < 0.9:
            return None
        c = col.copy()
        bad = ~np.isfinite(c)
        if bad.any():
            c[bad] = np.nanmedian(c)
        return c

    # ------------------------------------------------------------------ kernels
    @property
    def has_kernels(self) -> bool:
        return self.kernels is not None and self.kernels.height > 0

    def profiled_calls(self) -> tuple[float | None, str]:
        """How many timed calls the attached profile covers, and how we know."""
        pc = self.get("profiled_calls")
        if pc:
            return float(pc), "meta profiled_calls"
        name = self.get("call_range")
        if name and self.ranges is not None and self.ranges.height:
            n = self.ranges.filter(range_named(self.ranges, name)).height
            if n:
                return float(n), f"{n} NVTX ranges named {name!r}"
        return None, ""

    def _per_call(self, value: pl.Expr, total: str, each: str) -> tuple[float | None, str]:
        """A kernel quantity per timed call from the attached profile: its total / profiled calls,
        or (without a call count) the sum over distinct kernels of each kernel's median."""
        if not self.has_kernels:
            return None, ""
        k = self.kernels.select(pl.coalesce("short_name", "name").alias("_kernel"), value.alias("_v")).filter(pl.col("_v").is_not_null())
        if k.height == 0:
            return None, ""
        calls, how = self.profiled_calls()
        if calls:
            return float(k["_v"].sum()) / calls, f"{total} / {how}"
        per = k.group_by("_kernel").agg(pl.col("_v").median())
        return float(per["_v"].sum()), f"sum of each distinct kernel's median {each} (one launch each per call assumed)"

    def kernel_time_per_call_ns(self) -> tuple[float | None, str]:
        """Device time of one call from the attached profile (see `_per_call`)."""
        return self._per_call(pl.col("duration_ns"), "kernel time", "duration")

    def dram_bytes_per_call(self) -> tuple[float | None, str]:
        return self._per_call(pl.coalesce("dram_bytes", pl.col("dram_read_bytes") + pl.col("dram_write_bytes")), "profile DRAM bytes", "DRAM bytes")

    def timed_ranges(self) -> pl.DataFrame | None:
        """The closed ranges named by `timed_range` in the attached trace, or None."""
        return self.named_ranges("timed_range")

    def named_ranges(self, key: str) -> pl.DataFrame | None:
        """The closed ranges named by the meta `key` (`timed_range`, `call_range`), or None."""
        name = self.get(key)
        if not name or self.ranges is None or self.ranges.height == 0:
            return None
        r = self.ranges.filter(range_named(self.ranges, name) & pl.col("start_ns").is_not_null() & pl.col("end_ns").is_not_null())
        return r if r.height else None

    @cached_property
    def kernel_intervals(self) -> tuple[np.ndarray, np.ndarray] | None:
        """(start_ns, end_ns) of the attached kernels that have both, ordered by start; or None."""
        if not self.has_kernels:
            return None
        k = self.kernels.filter(pl.col("start_ns").is_not_null() & pl.col("end_ns").is_not_null())
        if k.height == 0:
            return None
        starts = k["start_ns"].to_numpy()
        order = np.argsort(starts)
        return starts[order], k["end_ns"].to_numpy()[order]

    def calls_per_sample(self) -> Fact | None:
        """Back-to-back calls one timing sample holds: what the attached trace shows (call ranges
        nested in each timed range) beats what the log or the claim says."""
        return self.fact("calls_per_sample_traced") or self.fact("calls_per_sample")

    def cuda_graphs(self) -> Fact | None:
        """CUDA-graph use: graph launches in the attached trace beat what the meta says."""
        return self.fact("cuda_graphs_traced") or self.fact("cuda_graphs")

    def launches_per_call(self) -> tuple[float | None, str]:
        f = self.fact("kernels_per_call")
        if f is not None:
            return float(f.value), f.source
        if self.has_kernels:
            calls, how = self.profiled_calls()
            if calls:
                return self.kernels.height / calls, f"{self.kernels.height} kernel launches / {how}"
        return None, ""


@dataclass
class Evidence:
    """The facts of both sides of one claim plus the claim itself and the recomputed speedup."""

    claim: Claim
    baseline: SideEvidence
    candidate: SideEvidence
    workload: dict[str, Fact] = field(default_factory=dict)

    @property
    def sides(self) -> tuple[SideEvidence, SideEvidence]:
        return (self.baseline, self.candidate)

    @property
    def claimed_speedup(self) -> float | None:
        return self.claim.speedup

    @property
    def statistic(self) -> Statistic | None:
        return self.claim.statistic

    @property
    def confidence(self) -> float:
        return self.claim.confidence

    @property
    def noise_threshold(self) -> float:
        return self.claim.noise_threshold

    def intended(self, key: str) -> bool:
        return key in self.claim.intended_differences

    @cached_property
    def shared_run(self) -> "SharedRun | None":
        """Both sides' timings from one file and run (a wide log): what it settles for both sides."""
        from profaudit.audit.shared_run import shared_run

        return shared_run(self.claim)

    @cached_property
    def comparison(self) -> "Comparison":
        from profaudit.audit.speedup import compare

        return compare(self)

    def workload_value(self, key: str, side: SideEvidence | None = None) -> tuple[float | None, str]:
        """Workload FLOPs or bytes: the claim's `workload`, else recomputed from the side's op, shape
        and dtype (FAIRNESS P3: not the author's formula), else the side's own count."""
        f = self.workload.get(key)
        if f is not None:
            return float(f.value), f.source
        if side is not None:
            for k in (f"{key}_from_shape", key):
                sf = side.fact(k)
                if sf is not None:
                    return float(sf.value), sf.source
        return None, ""


# ---------------------------------------------------------------------------------------------
# gathering
# ---------------------------------------------------------------------------------------------


def gather(claim: Claim) -> Evidence:
    """Collect the evidence of both sides of `claim`."""
    sides = []
    for side in claim.sides:
        sides.append(_gather_side(side, claim))
    workload: dict[str, Fact] = {}
    for key, value in claim.workload.items():
        workload[key] = Fact(value, f"{claim.origin}: workload.{key}", "meta")
    ev = Evidence(claim, sides[0], sides[1], workload)
    for se in ev.sides:
        _attach_spec(se, claim)
    return ev


def _gather_side(side: Side, claim: Claim) -> SideEvidence:
    se = SideEvidence(side.role, side.label, sources=tuple(side.timing_paths) + tuple(side.profile_paths))
    for key, value in side.meta.items():
        if key.startswith("x_"):
            continue
        se.add(key, value, f"{side.meta_origin}.{key}", "meta")
    if claim.device:
        se.add("device", claim.device, f"{claim.origin}: device (asserted for both sides)", "meta")
    for ps, what in ((side.timing_profiles, "timings"), (side.profiles, "profile")):
        if ps is not None:
            _facts_from_profiles(se, ps, what)
    _samples(se, side)
    _kernels(se, side)
    from profaudit.audit.trace import derive_facts

    derive_facts(se)
    se.sweep = side.sweep
    _derive_workload(se)
    return se


def _derive_workload(se: SideEvidence) -> None:
    """FLOPs and minimum bytes recomputed from meta op + shape + dtype (profaudit.workload)."""
    op, shape = se.fact("op"), se.fact("shape")
    if op is None or shape is None:
        return
    from profaudit.workload import from_shape

    wl, why = from_shape(op.value, shape.value, dtype_of(se))
    if wl is None:
        se.add("workload_from_shape_problem", why, f"{op.source}, {shape.source}", "derived")
        return
    src = f"{wl.formula}; from {op.source}, {shape.source} and the dtype"
    if wl.flops is not None:
        se.add("flops_from_shape", wl.flops, src, "derived")
    se.add("bytes_from_shape", wl.bytes, src, "derived")


def _short(path: Any) -> str:
    from pathlib import Path

    return Path(str(path)).name if path else "?"


def _facts_from_profiles(se: SideEvidence, ps, what: str) -> None:
    for prof in ps:
        md = prof.metadata
        src_name = _short(md.get("path")) if md.get("path") else prof.profile_id
        for col, key in _METADATA_FACTS.items():
            value = md.get(col)
            if value is None:
                continue
            if col == "device_name" and (md.get("device_count") or 0) > 1 and _samples_name_devices(ps, prof.profile_id):
                # a log of several devices: its metadata names one of them, not this side's; the
                # side's own rows say which (the samples' device_name column, read in _samples)
                continue
            kind = "recorded"
            if col in ("clock_control", "cache_control"):
                origin = md.get(f"{col}_origin")
                kind = "default" if origin == "default" else "recorded"
                value = str(value).lower()
            se.add(key, value, f"{what} {src_name}: metadata {col}" + (" (tool default assumed)" if kind == "default" else ""), kind)
        for key, value in prof.extra.items():
            if key in META_KEYS and value is not None:
                try:
                    norm = validate_meta({key: value}, "metadata", None).get(key)
                except Exception:  # a harness wrote something we cannot read as this key: skip it
                    continue
                se.add(key, norm, f"{what} {src_name}: metadata {key}", "recorded")


def _samples_name_devices(ps, profile_id: str) -> bool:
    s = ps.samples
    return bool(s.height) and s.filter((pl.col("profile_id") == profile_id) & pl.col("device_name").is_not_null()).height > 0


def _samples(se: SideEvidence, side: Side) -> None:
    df = side.samples
    if df is None or df.height == 0:
        return
    shown = ", ".join(_short(p) for p in side.timing_paths) or f"{side.role} samples"
    summary = df.filter(pl.col("statistic").is_not_null())
    raw = df.filter(pl.col("statistic").is_null())
    # Sample-level facts (same column in raw and summary rows).
    for col, key in (("device_name", "device"), ("time_source", "time_source"), ("cache_state", "cache_state")):
        vals = [v for v in df[col].drop_nulls().unique().to_list() if str(v).strip() and str(v).lower() != "unknown"]
        if len(vals) == 1:
            se.add(key, str(vals[0]).lower() if key != "device" else str(vals[0]), f"{shown}: column {col}", "recorded")
        elif len(vals) > 1:
            se.add(key, "mixed:" + ",".join(sorted(map(str, vals))), f"{shown}: column {col} ({len(vals)} values)", "recorded")
    cps = [int(v) for v in df["calls_per_sample"].drop_nulls().unique().to_list()] if "calls_per_sample" in df.columns else []
    if len(cps) == 1:
        se.add("calls_per_sample", cps[0], f"{shown}: column calls_per_sample", "recorded")
    params = df["params"].drop_nulls().unique().to_list()
    if len(params) == 1:
        se.add("params", str(params[0]), f"{shown}: column params", "recorded")
    if summary.height:
        for row in summary.iter_rows(named=True):
            name = _SUMMARY_ALIASES.get(str(row["statistic"]).strip().lower(), str(row["statistic"]).strip().lower())
            if row["duration_ns"] is not None and math.isfinite(row["duration_ns"]):
                se.summaries[name] = float(row["duration_ns"])
            if row["sample_count"] is not None:
                se.summary_count = max(se.summary_count or 0, int(row["sample_count"]))
    if raw.height == 0:
        return
    if raw["iteration"].null_count() == 0 or raw["run"].null_count() == 0:
        keys = [c for c in ("run", "iteration") if raw[c].null_count() == 0]
        # Logs are nearly always written in order: sort only when they are not.
        if not _in_order(*(raw[k].to_numpy() for k in keys)):
            raw = raw.sort(keys, maintain_order=True)
    phase = raw["phase"].cast(pl.Utf8).str.to_lowercase()
    is_warm = (phase == "warmup").fill_null(False)
    se.warmup_rows = int(is_warm.sum())
    raw = raw.filter(~is_warm)
    d = raw["duration_ns"].to_numpy().astype(np.float64, copy=False)
    valid = np.isfinite(d) & (d >= 0)
    se.invalid_rows = int((~valid).sum())
    raw = raw.filter(pl.Series(valid))
    if raw.height == 0:
        return
    se.times = raw["duration_ns"].to_numpy().astype(np.float64)
    runs = raw["run"]
    if runs.null_count() == 0 and runs.n_unique() > 1:
        se.runs = runs.to_numpy().astype(np.int64)
    for col in ("sm_clock_mhz", "mem_clock_mhz", "temperature_c", "power_w", "timestamp_ns"):
        s = raw[col]
        if s.null_count() < s.len():
            se.columns[col] = s.cast(pl.Float64).fill_null(float("nan")).to_numpy()
    tr = raw["throttle_reasons"]
    if tr.null_count() < tr.len():
        se.throttle = tr
    # Steady state per process-level run: every process warms up on its own.
    mask = np.ones(se.times.size, dtype=bool)
    if se.runs is None:
        st = steady_state(se.times)
        se.steady_states = [st]
        mask[: st.start] = False
    else:
        order_runs = np.unique(se.runs)
        for r in order_runs:
            idx = np.flatnonzero(se.runs == r)
            st = steady_state(se.times[idx])
            se.steady_states.append(st)
            mask[idx[: st.start]] = False
    se.steady_mask = mask
    clocks = se.columns.get("sm_clock_mhz")
    if clocks is not None and np.isfinite(clocks).any():
        se.add("observed_sm_clock_mhz", float(np.nanmedian(clocks)), f"{shown}: median of column sm_clock_mhz", "derived")


def _in_order(first: np.ndarray, second: np.ndarray | None = None) -> bool:
    """Whether rows are already sorted by (first, second)."""
    if first.size < 2:
        return True
    a, b = first[1:], first[:-1]
    if second is None:
        return bool(np.all(a >= b))
    return bool(np.all((a > b) | ((a == b) & (second[1:] >= second[:-1]))))


def _kernels(se: SideEvidence, side: Side) -> None:
    """Kernel rows that can cross-check the timings: the attached profile's, narrowed to the
    timed kernel when the side names one and it matches there; the timing files' own kernels only
    when the times are not those kernels' durations (a trace used as timings checks nothing)."""
    frames, ranges = [], []
    sources = [(side.profiles, "profile")]
    if not getattr(side, "times_from_kernels", False):
        sources.append((side.timing_profiles, "timings"))
    for ps, what in sources:
        if ps is None:
            continue
        k = ps.kernels
        regex = getattr(side, "kernel_filter", None)
        if regex and k.height:
            hit = k.filter(pl.coalesce("name", "short_name").str.contains(regex) | pl.col("short_name").fill_null("").str.contains(regex))
            if hit.height:
                k = hit
            else:
                se.add("kernel_filter_note", f"{regex!r} matches no kernel of the attached {what}; all its kernels are used", f"{what}", "derived")
        if k.height:
            frames.append(k)
        if ps.ranges.height:
            ranges.append(ps.ranges)
    if frames:
        se.kernels = pl.concat(frames, how="vertical")
        srcs = [s for s in se.kernels["source"].drop_nulls().unique().to_list()]
        if len(srcs) == 1:
            se.add("kernel_source", str(srcs[0]).lower(), "attached profile: kernels.source", "recorded")
    if ranges:
        se.ranges = pl.concat(ranges, how="vertical")
    _derive_busy(se)


def _derive_busy(se: SideEvidence) -> None:
    """GPU busy share of the timed NVTX range, from kernel intervals clipped to the range."""
    r, kv = se.timed_ranges(), se.kernel_intervals
    if r is None or kv is None:
        return
    ks, ke = kv
    busy = total = 0.0
    for s, e in zip(r["start_ns"].to_list(), r["end_ns"].to_list()):
        total += e - s
        i0, i1 = np.searchsorted(ks, s), np.searchsorted(ks, e)
        if i1 > i0:
            # Union of the kernel intervals inside the range (kernels on other streams overlap):
            # ordered by start, a kernel that starts after every earlier one ended opens a new
            # busy stretch, which lasts until the running maximum of the ends.
            st = np.maximum(ks[i0:i1], s)
            en = np.minimum(ke[i0:i1], e)
            run_end = np.maximum.accumulate(en)
            opens = np.flatnonzero(np.r_[True, st[1:] > run_end[:-1]])
            closes = np.r_[opens[1:] - 1, st.size - 1]
            busy += float(np.maximum(run_end[closes] - st[opens], 0).sum())
    if total > 0 and not se.has("gpu_busy_pct"):
        se.add("gpu_busy_pct", 100.0 * busy / total, f"attached trace: kernel time inside NVTX ranges {se.get('timed_range')!r}", "derived")


def _attach_spec(se: SideEvidence, claim: Claim) -> None:
    """The device spec for this side's device (device_specs/*.yaml through profaudit.specs)."""
    dev = se.fact("device")
    if dev is None:
        se.spec_note = "no device named for this side"
        return
    from profaudit import specs

    try:
        spec = specs.match_device(str(dev.value))
    except Exception as exc:  # a malformed spec file must not stop the audit
        se.spec_note = f"device spec lookup failed: {type(exc).__name__}: {exc}"
        return
    if spec is None:
        se.spec_note = f"no device spec matches {dev.value!r}"
        return
    se.spec = spec
    se.spec_note = f"device spec {getattr(spec, 'name', dev.value)!r} for {dev.value!r} ({dev.source})"


# ---------------------------------------------------------------------------------------------
# small helpers the rules share
# ---------------------------------------------------------------------------------------------


def device_relation(a: str, b: str) -> str:
    """"same" (one product), "compatible" (one name is a less specific form of the other, e.g.
    "H100" and "NVIDIA H100 80GB HBM3", and no spec tells them apart) or "different"."""
    na, nb = _norm_device(a), _norm_device(b)
    if na == nb:
        return "same"
    try:
        from profaudit import specs

        sa, sb = specs.match_device(a), specs.match_device(b)
        if sa is not None and sb is not None:
            return "same" if getattr(sa, "name", sa) == getattr(sb, "name", sb) else "different"
    except Exception:  # no spec module or a broken spec: fall back to the names
        pass
    ta, tb = set(na.split()), set(nb.split())
    if ta and tb and (ta <= tb or tb <= ta):
        return "compatible"
    return "different"


def _norm_device(name: str) -> str:
    s = str(name).lower().replace("nvidia", "").replace("geforce", "").replace("tesla", "").replace("-", " ").replace("_", " ")
    return " ".join(s.split())


def dtype_of(se: SideEvidence) -> str | None:
    v = se.get("dtype")
    return normalise_dtype(v) if v is not None else None
