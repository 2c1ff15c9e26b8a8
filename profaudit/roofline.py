"""Hierarchical roofline per kernel: arithmetic intensity per memory level, attainable performance,
percent of roof and the binding ceiling, at the datasheet (boost) clock and at the clock the kernel ran at.

Method
------
For one kernel with FLOPs f_p per precision p (the kernels table's `flops_<p>` columns), bytes B_l per
memory level l (`dram_bytes`, `l2_bytes`, `l1_bytes`) and duration d, against a device with compute
peaks P_p and bandwidths W_l:

* the time each resource needs at its peak: t_compute = sum_p f_p / P_p (precisions executed one
  after another at their own peak: the *time-weighted* ceiling), t_l = B_l / W_l;
* the bound is the resource with the largest time; attainable FLOP/s = F / max(t_compute, t_l) with
  F = sum_p f_p. This equals min(compute ceiling, AI_l x W_l over levels) where the compute ceiling of
  a mixed-precision kernel is F / t_compute, the FLOP-weighted harmonic mean of the peaks used;
* percent of roof = 100 x max(t) / d, which equals achieved / attainable x 100 and stays defined for
  kernels without FLOPs (a copy kernel's percent of its DRAM roof).

Pipes of different precisions can overlap (FP32 vector work beside tensor-core MMA), so a kernel that
overlaps them can exceed 100 % of the time-weighted ceiling; the ceiling is the right one for a kernel
whose work is one precision, and the conservative one otherwise.

Clocks: "boost" uses the peaks as the vendor prints them (each at the clock it assumes, see
`DeviceSpec`); "kernel_clock" rescales compute peaks and on-chip bandwidth linearly to the kernel's
`sm_clock_hz` (Nsight Compute locks clocks to base by default, so profiled kernels usually ran well
below boost). DRAM bandwidth does not scale with the SM clock. The kernel clock is whatever the parser
put in `sm_clock_hz` (for ncu, `gpc__cycles_elapsed.avg.per_second`, i.e. elapsed cycles / duration,
which launch overhead drags down a little on very short kernels, making their kernel-clock roof
slightly low). Missing inputs give nulls, never zeros, and
`roof_note` says what was missing. A kernel whose tensor pipe was busy while the report counted only
its vector FLOPs (ncu sections with tensor utilisation but no `sm__ops_path_tensor_*` counters) gets
no FLOP-based position at all: its vector FLOPs alone would place a GEMM as memory-bound.
"""

from __future__ import annotations

import os
from functools import reduce
from typing import Iterable, Literal, Mapping, Sequence

import polars as pl

from profaudit.errors import UsageError
from profaudit.profile import Profile, ProfileSet
from profaudit.schema import MEMORY_LEVELS, PRECISIONS
from profaudit.specs import DeviceSpec, get_spec, load_specs, resolve_device

ClockChoice = Literal["both", "boost", "kernel"]
CLOCKS = {"boost": "at_boost", "kernel": "at_kernel_clock"}
BOUND_ORDER = ("compute",) + MEMORY_LEVELS


def _clock_suffixes(clock: str) -> list[tuple[str, str]]:
    if clock == "both":
        return [("boost", "at_boost"), ("kernel", "at_kernel_clock")]
    if clock in CLOCKS:
        return [(clock, CLOCKS[clock])]
    raise UsageError(f"clock must be both, boost or kernel, got {clock!r}")


def roofline_columns(clock: ClockChoice = "both") -> list[str]:
    """The columns `roofline()` returns, in order."""
    cols = [
        "profile_id", "kernel_id", "name", "short_name", "device_name", "device_key", "duration_ns",
        "flops", "flops_precisions", "dram_bytes", "l2_bytes", "l1_bytes",
        "ai_dram_flops_per_byte", "ai_l2_flops_per_byte", "ai_l1_flops_per_byte",
        "achieved_flops_per_s", "achieved_dram_bytes_per_s", "achieved_l2_bytes_per_s", "achieved_l1_bytes_per_s",
        "boost_clock_hz", "kernel_clock_hz", "kernel_clock_source", "clock_control",
    ]
    for _, sfx in _clock_suffixes(clock):
        cols += [f"compute_roof_flops_per_s_{sfx}"]
        cols += [f"{lv}_roof_bytes_per_s_{sfx}" for lv in MEMORY_LEVELS]
        cols += [f"attainable_flops_per_s_{sfx}", f"roof_pct_{sfx}", f"bound_{sfx}"]
        cols += [f"{lv}_bandwidth_pct_{sfx}" for lv in MEMORY_LEVELS]
    cols += ["roof_note"]
    return cols


# --------------------------------------------------------------------------------------------------
# Inputs


def _inputs(ps_or_kernels) -> tuple[pl.DataFrame, pl.DataFrame | None]:
    """(kernels frame, metadata frame or None) from a ProfileSet, a Profile, profiles, or a frame.

    The kernels frame carries `tensor_flops_uncounted` and `tensor_pipe_pct` (see
    `tensor_pipe_activity`): from the metrics of a ProfileSet, or as given on a kernels DataFrame
    that has those columns."""
    from profaudit import schema

    ps = None
    if isinstance(ps_or_kernels, ProfileSet):
        ps = ps_or_kernels
    elif isinstance(ps_or_kernels, Profile):
        ps = ProfileSet([ps_or_kernels])
    elif isinstance(ps_or_kernels, pl.DataFrame):
        k = schema.conform("kernels", ps_or_kernels.drop(UNCOUNTED_COLUMN, TENSOR_PIPE_COLUMN, strict=False))
        cols = []
        for col, dt in ((UNCOUNTED_COLUMN, pl.Boolean), (TENSOR_PIPE_COLUMN, pl.Float64)):
            given = ps_or_kernels.get_column(col).cast(dt) if col in ps_or_kernels.columns else pl.Series(col, [None] * k.height, dtype=dt)
            cols.append(given)
        k = k.with_columns(*cols).with_columns(pl.col(UNCOUNTED_COLUMN).fill_null(False))
        return k, None
    elif isinstance(ps_or_kernels, (list, tuple)) and ps_or_kernels and all(isinstance(p, Profile) for p in ps_or_kernels):
        ps = ProfileSet(ps_or_kernels)
    elif isinstance(ps_or_kernels, (str, os.PathLike)) or (
        isinstance(ps_or_kernels, (list, tuple)) and ps_or_kernels and all(isinstance(p, (str, os.PathLike)) for p in ps_or_kernels)
    ):
        from profaudit.loader import load

        ps = load(ps_or_kernels)
    if ps is not None:
        k = ps.kernels
        return _with_tensor_activity(k, tensor_pipe_activity(k, ps.metrics)), ps.metadata
    raise UsageError(f"roofline() takes paths, a ProfileSet, a Profile or a kernels DataFrame, not {type(ps_or_kernels).__name__}")


TENSOR_PIPE_COLUMN = "tensor_pipe_pct"
UNCOUNTED_COLUMN = "tensor_flops_uncounted"
# ncu tensor-pipe utilisation and instruction counters (sm__pipe_tensor_cycles_active...,
# sm__inst_executed_pipe_tensor_op_hmma...): they say whether the tensor cores worked, not how many
# FLOPs they did (an HMMA's FLOPs depend on its shape, which they do not record).
_TENSOR_PIPE_METRIC = r"^(?:sm|smsp)__(?:inst_executed_)?pipe_tensor"


def tensor_pipe_activity(kernels: pl.DataFrame, metrics: pl.DataFrame | None) -> pl.DataFrame:
    """(profile_id, kernel_id, tensor_flops_uncounted, tensor_pipe_pct) for the kernels whose
    tensor-core FLOPs are unknown (`flops_method` says `tensor:unknown`) although a tensor-pipe
    metric is non-zero: their FLOP columns hold the vector FLOPs alone, so a roofline from them
    would understate the work and could name the wrong bound.

    `tensor_pipe_pct` is the largest tensor-pipe percentage recorded (null when only instruction
    counts were). A kernels DataFrame given to `roofline()` may carry these two columns itself.
    """
    out_schema = {"profile_id": pl.Utf8, "kernel_id": pl.Int64, UNCOUNTED_COLUMN: pl.Boolean, TENSOR_PIPE_COLUMN: pl.Float64}
    if metrics is None or metrics.height == 0 or "flops_method" not in kernels.columns:
        return pl.DataFrame(schema=out_schema)
    unknown = kernels.filter(pl.col("flops_method").str.contains("tensor:unknown", literal=True)).select("profile_id", "kernel_id")
    if unknown.height == 0:
        return pl.DataFrame(schema=out_schema)
    m = metrics.filter(pl.col("metric").str.contains(_TENSOR_PIPE_METRIC) & (pl.col("value") > 0))
    m = m.join(unknown, on=["profile_id", "kernel_id"], how="semi")
    if m.height == 0:
        return pl.DataFrame(schema=out_schema)
    act = m.group_by("profile_id", "kernel_id").agg(pl.col("value").filter(pl.col("metric").str.contains("pct")).max().alias(TENSOR_PIPE_COLUMN))
    return act.select(
        pl.col("profile_id").cast(pl.Utf8), pl.col("kernel_id").cast(pl.Int64),
        pl.lit(True).alias(UNCOUNTED_COLUMN), pl.col(TENSOR_PIPE_COLUMN).cast(pl.Float64),
    )


def _with_tensor_activity(k: pl.DataFrame, act: pl.DataFrame) -> pl.DataFrame:
    if act.height:
        k = k.join(act, on=["profile_id", "kernel_id"], how="left")
        return k.with_columns(pl.col(UNCOUNTED_COLUMN).fill_null(False))
    return k.with_columns(pl.lit(False).alias(UNCOUNTED_COLUMN), pl.lit(None, pl.Float64).alias(TENSOR_PIPE_COLUMN))


def _device_column(k: pl.DataFrame, md: pl.DataFrame | None) -> pl.DataFrame:
    """Attach `_device` (the name used for matching) and `clock_control` (from run metadata)."""
    if md is not None and md.height:
        cc = (
            pl.when(pl.col("clock_control").is_null()).then(None)
            .when(pl.col("clock_control_origin").is_null()).then(pl.col("clock_control"))
            .otherwise(pl.concat_str([pl.col("clock_control"), pl.lit(" ("), pl.col("clock_control_origin"), pl.lit(")")]))
        )
        m = md.select("profile_id", pl.col("device_name").alias("_md_device"), cc.alias("clock_control"))
        k = k.join(m, on="profile_id", how="left")
    else:
        k = k.with_columns(pl.lit(None, dtype=pl.Utf8).alias("_md_device"), pl.lit(None, dtype=pl.Utf8).alias("clock_control"))
    return k.with_columns(pl.coalesce("device_name", "_md_device").alias("_device")).drop("_md_device")


def _sparse_or_dense(spec: DeviceSpec, precision: str, sparse: bool) -> bool:
    """Whether `precision`'s roof is its 2:4-sparse peak: only where one is asked for and published
    (sparsity is a tensor-core feature; a vector precision keeps its dense roof)."""
    return sparse and spec.peak(precision, sparse=True) is not None


def _roof_precisions(spec: DeviceSpec, sparse: bool) -> list[str]:
    return [p for p in PRECISIONS if spec.peak(p) is not None or (sparse and spec.peak(p, sparse=True) is not None)]


def _spec_frame(specs_by_device: Mapping[str, DeviceSpec | None], *, sparse: bool) -> pl.DataFrame:
    """One row per device name: the ceilings as columns, so the per-kernel arithmetic is columnar."""
    rows = []
    for dev, spec in specs_by_device.items():
        r: dict = {"_device": dev, "device_key": None if spec is None else spec.key, "boost_clock_hz": None if spec is None else spec.boost_clock_hz}
        for p in PRECISIONS:
            v = None if spec is None else spec.peak(p, sparse=_sparse_or_dense(spec, p, sparse))
            r[f"_peak_{p}"] = None if v is None else v.value
            r[f"_peakclk_{p}"] = None if v is None else v.clock_hz
        for lv in MEMORY_LEVELS:
            v = None if spec is None else spec.bandwidths.get(lv)
            r[f"_bw_{lv}"] = None if v is None else v.value
            r[f"_bwclk_{lv}"] = None if v is None else v.clock_hz
        rows.append(r)
    schema = {"_device": pl.Utf8, "device_key": pl.Utf8, "boost_clock_hz": pl.Float64}
    for p in PRECISIONS:
        schema[f"_peak_{p}"] = pl.Float64
        schema[f"_peakclk_{p}"] = pl.Float64
    for lv in MEMORY_LEVELS:
        schema[f"_bw_{lv}"] = pl.Float64
        schema[f"_bwclk_{lv}"] = pl.Float64
    return pl.DataFrame(rows, schema=schema)


def _resolve_devices(names: Sequence[str | None], device, extra_specs, cores) -> tuple[dict, dict]:
    """Spec (or None) per device name, and the reason for each unmatched one."""
    out: dict[str | None, DeviceSpec | None] = {}
    why: dict[str | None, str] = {}
    if device is not None:
        spec = get_spec(device, extra_specs)
        if cores is not None:
            spec = spec.scaled_to_cores(cores)
        return {n: spec for n in names or [None]}, why
    specs = load_specs(extra_specs)
    for n in names:
        m = resolve_device(n, specs=specs)
        spec = m.spec
        if spec is not None and cores is not None:
            spec = spec.scaled_to_cores(cores)
        out[n] = spec
        if spec is None:
            why[n] = m.reason
    return out, why


# --------------------------------------------------------------------------------------------------
# The computation


def _sum_terms(terms: Iterable[pl.Expr]) -> pl.Expr:
    # `+` propagates nulls (pl.sum_horizontal would skip them and hide a missing peak).
    return reduce(lambda a, b: a + b, terms)


def _max_of(exprs: Sequence[pl.Expr]) -> pl.Expr:
    return pl.max_horizontal(exprs)


def roofline(
    ps_or_kernels,
    device: "str | DeviceSpec | None" = None,
    *,
    clock: ClockChoice = "both",
    extra_specs: Iterable = (),
    sparse: bool = False,
    flops_precision: str | None = None,
    cores: int | None = None,
) -> pl.DataFrame:
    """Per-kernel hierarchical roofline (see the module docstring for the method).

    `device` (a spec key, a reported name or a DeviceSpec) overrides the device every profile
    reports; otherwise each kernel's `device_name` (or its profile's metadata device) is matched,
    and kernels on an unknown or ambiguous device get null ceilings with the reason in `roof_note`.
    `sparse=True` uses the 2:4-sparse tensor peaks where the device publishes them (vector
    precisions keep their dense roofs). `flops_precision` names the precision of untyped
    FLOP totals (XLA cost analysis, Neuron) when no per-precision column is set. `cores` scales a TPU
    or Neuron chip's ceilings to the cores the profiled program ran on.
    """
    suffixes = _clock_suffixes(clock)
    if flops_precision is not None and flops_precision not in PRECISIONS:
        raise UsageError(f"flops_precision must be one of {', '.join(PRECISIONS)}, got {flops_precision!r}")
    kernels, md = _inputs(ps_or_kernels)
    k = _device_column(kernels, md)
    names = k.get_column("_device").unique(maintain_order=True).to_list()
    specs_by_device, unmatched = _resolve_devices(names, device, extra_specs, cores)
    if device is not None:
        # An override applies to every kernel, whatever (or whether) it reports a device name.
        sf = _spec_frame({"": next(iter(specs_by_device.values()))}, sparse=sparse).drop("_device")
        k = k.join(sf, how="cross")
    else:
        sf = _spec_frame({n: s for n, s in specs_by_device.items() if n is not None}, sparse=sparse)
        k = k.join(sf, on="_device", how="left")

    fcols = [f"flops_{p}" for p in PRECISIONS]
    # Vector FLOPs without the tensor cores' FLOPs are not the kernel's work: no FLOP-based position.
    k = k.with_columns([pl.when(pl.col(UNCOUNTED_COLUMN)).then(None).otherwise(pl.col(c)).alias(c) for c in fcols + ["flops_total"]])
    typed_any = pl.any_horizontal([pl.col(c).is_not_null() for c in fcols])
    untyped = (~typed_any) & pl.col("flops_total").is_not_null()
    if flops_precision is not None:
        k = k.with_columns(pl.when(untyped).then(pl.col("flops_total")).otherwise(pl.col(f"flops_{flops_precision}")).alias(f"flops_{flops_precision}"))
        typed_any = pl.any_horizontal([pl.col(c).is_not_null() for c in fcols])

    flops = pl.when(typed_any).then(pl.sum_horizontal(fcols)).otherwise(None)
    dram = pl.coalesce("dram_bytes", pl.col("dram_read_bytes") + pl.col("dram_write_bytes"))
    dur_s = pl.when(pl.col("duration_ns") > 0).then(pl.col("duration_ns") * 1e-9).otherwise(None)
    precisions_used = pl.concat_str([pl.when(pl.col(c) > 0).then(pl.lit(p)) for c, p in zip(fcols, PRECISIONS)], separator="+", ignore_nulls=True)
    k = k.with_columns(
        flops.alias("flops"),
        pl.when(typed_any & (precisions_used != "")).then(precisions_used).otherwise(None).alias("flops_precisions"),
        dram.alias("dram_bytes"),
        dur_s.alias("_dur_s"),
        pl.col("sm_clock_hz").alias("kernel_clock_hz"),
        pl.when(pl.col("sm_clock_hz").is_not_null()).then(pl.lit("sm_clock_hz")).otherwise(None).alias("kernel_clock_source"),
        pl.col("short_name").fill_null(pl.col("name")).alias("short_name"),
    )
    F = pl.col("flops")
    exprs = []
    for lv in MEMORY_LEVELS:
        b = pl.col(f"{lv}_bytes")
        exprs.append(pl.when(b > 0).then(F / b).otherwise(None).alias(f"ai_{lv}_flops_per_byte"))
        exprs.append((b / pl.col("_dur_s")).alias(f"achieved_{lv}_bytes_per_s"))
    exprs.append((F / pl.col("_dur_s")).alias("achieved_flops_per_s"))
    k = k.with_columns(exprs)

    for which, sfx in suffixes:
        kclk = pl.col("kernel_clock_hz")

        def peak(p: str) -> pl.Expr:
            base = pl.col(f"_peak_{p}")
            if which == "boost":
                return base
            return base * kclk / pl.col(f"_peakclk_{p}")

        def bw(lv: str) -> pl.Expr:
            base = pl.col(f"_bw_{lv}")
            if which == "boost" or lv == "dram":
                return base
            return base * kclk / pl.col(f"_bwclk_{lv}")

        terms = [pl.when(pl.col(f"flops_{p}").is_null() | (pl.col(f"flops_{p}") == 0)).then(0.0).otherwise(pl.col(f"flops_{p}") / peak(p)) for p in PRECISIONS]
        t_compute = pl.when(F.is_null()).then(None).otherwise(_sum_terms(terms))
        t_levels = {lv: pl.col(f"{lv}_bytes") / bw(lv) for lv in MEMORY_LEVELS}
        k = k.with_columns(
            t_compute.alias("_t_compute"),
            *[t.alias(f"_t_{lv}") for lv, t in t_levels.items()],
            *[bw(lv).alias(f"{lv}_roof_bytes_per_s_{sfx}") for lv in MEMORY_LEVELS],
        )
        tc = pl.col("_t_compute")
        t_all = [tc] + [pl.col(f"_t_{lv}") for lv in MEMORY_LEVELS]
        # The roof is defined when the compute time is known (even 0 for FLOP-free kernels) and at
        # least one time is positive.
        t_max = pl.when(tc.is_null()).then(None).otherwise(_max_of(t_all))
        t_max = pl.when(t_max > 0).then(t_max).otherwise(None)
        bound = pl.when(t_max.is_null()).then(None)
        for name, t in zip(BOUND_ORDER, t_all):
            bound = bound.when(t == t_max).then(pl.lit(name))
        k = k.with_columns(
            pl.when(F > 0).then(F / tc).otherwise(None).alias(f"compute_roof_flops_per_s_{sfx}"),
            (F / t_max).alias(f"attainable_flops_per_s_{sfx}"),
            (100.0 * t_max / pl.col("_dur_s")).alias(f"roof_pct_{sfx}"),
            bound.otherwise(None).alias(f"bound_{sfx}"),
            *[(100.0 * pl.col(f"_t_{lv}") / pl.col("_dur_s")).alias(f"{lv}_bandwidth_pct_{sfx}") for lv in MEMORY_LEVELS],
        )

    k = k.with_columns(_notes(k, unmatched, suffixes, flops_precision).alias("roof_note"))
    cols = roofline_columns(clock)
    from profaudit.notebook import RooflineFrame  # a polars frame with a short notebook display

    return RooflineFrame.of(k.select(cols))


def _notes(k: pl.DataFrame, unmatched: Mapping, suffixes, flops_precision) -> pl.Expr:
    """Why a kernel's roof is partial or null, as one '; '-joined string (null when nothing is missing)."""
    parts: list[pl.Expr] = []
    if unmatched:
        reasons = {n: r for n, r in unmatched.items() if n is not None}
        parts.append(pl.when(pl.col("device_key").is_null() & pl.col("_device").is_not_null())
                     .then(pl.col("_device").replace_strict(reasons, default=None, return_dtype=pl.Utf8)))
    parts.append(pl.when(pl.col("_device").is_null() & pl.col("device_key").is_null()).then(pl.lit("no device name in the profile: pass device= (--device NAME)")))
    fcols = [f"flops_{p}" for p in PRECISIONS]
    no_typed = ~pl.any_horizontal([pl.col(c).is_not_null() for c in fcols])
    parts.append(pl.when(no_typed & pl.col("flops_total").is_not_null())
                 .then(pl.lit("FLOPs are an untyped total: pass flops_precision= (--flops-precision) to set the compute ceiling")))
    # a small but non-zero reading must not print as 0.0 %
    tp = pl.col(TENSOR_PIPE_COLUMN)
    tensor_pct = pl.when(tp < 0.1).then(pl.lit("<0.1")).otherwise(tp.round(1).cast(pl.Utf8))
    parts.append(pl.when(pl.col(UNCOUNTED_COLUMN)).then(
        pl.lit("tensor pipe active") + pl.when(tensor_pct.is_not_null()).then(pl.lit(" (") + tensor_pct + pl.lit("% of peak)")).otherwise(pl.lit(""))
        + pl.lit(" but its FLOPs were not counted (collect the sm__ops_path_tensor_* counters): FLOPs and compute roof unknown")
    ))
    parts.append(pl.when(no_typed & pl.col("flops_total").is_null() & ~pl.col(UNCOUNTED_COLUMN)).then(pl.lit("no FLOP counts: compute roof unknown")))
    missing_peak = pl.concat_str(
        [pl.when((pl.col(f"flops_{p}") > 0) & pl.col(f"_peak_{p}").is_null() & pl.col("device_key").is_not_null()).then(pl.lit(p)) for p in PRECISIONS],
        separator=", ", ignore_nulls=True,
    )
    parts.append(pl.when(missing_peak != "").then(pl.lit("device has no published peak for ") + missing_peak))
    parts.append(pl.when(pl.all_horizontal([pl.col(f"{lv}_bytes").is_null() for lv in MEMORY_LEVELS])).then(pl.lit("no byte counts: memory roofs unknown")))
    if any(w == "kernel" for w, _ in suffixes):
        parts.append(pl.when(pl.col("kernel_clock_hz").is_null() & pl.col("device_key").is_not_null()).then(pl.lit("kernel clock not measured: no kernel-clock roof")))
        noclk = pl.concat_str(
            [pl.when((pl.col(f"flops_{p}") > 0) & pl.col(f"_peak_{p}").is_not_null() & pl.col(f"_peakclk_{p}").is_null()).then(pl.lit(p)) for p in PRECISIONS],
            separator=", ", ignore_nulls=True,
        )
        parts.append(pl.when((noclk != "") & pl.col("kernel_clock_hz").is_not_null()).then(pl.lit("vendor states no clock for ") + noclk + pl.lit(": no kernel-clock compute roof")))
    parts.append(pl.when(pl.col("_dur_s").is_null()).then(pl.lit("no duration")))
    s = pl.concat_str(parts, separator="; ", ignore_nulls=True)
    return pl.when(s == "").then(None).otherwise(s)


# --------------------------------------------------------------------------------------------------
# Ceilings for charts


def ceilings(spec: "DeviceSpec | str", clock_hz: float | None = None, *, sparse: bool = False, extra_specs: Iterable = ()) -> pl.DataFrame:
    """The device's roofs as rows: one per compute precision, one per memory level.

    With `clock_hz`, compute peaks and on-chip bandwidth are rescaled to that clock (null where the
    vendor states no clock); DRAM is unchanged. `ridge_flops_per_byte` is the arithmetic intensity at
    which a compute roof meets the DRAM roof.
    """
    spec = get_spec(spec, extra_specs)
    dram = spec.bandwidth_bytes_per_s("dram", clock_hz)
    rows = []
    for p in _roof_precisions(spec, sparse):
        sp = _sparse_or_dense(spec, p, sparse)
        v = spec.peak(p, sparse=sp)
        val = spec.peak_flops_per_s(p, sparse=sp, clock_hz=clock_hz)
        rows.append({
            "device_key": spec.key, "kind": "compute", "ceiling": p, "flops_per_s": val, "bytes_per_s": None,
            "clock_hz": clock_hz if clock_hz is not None and val is not None else v.clock_hz,
            "ridge_flops_per_byte": None if val is None or not dram else val / dram,
            "source": spec.source_titles(v.source), "derivation": v.derivation,
        })
    from profaudit.specs import BANDWIDTH_LEVELS

    for lv in BANDWIDTH_LEVELS:
        v = spec.bandwidths.get(lv)
        if v is None:
            continue
        val = spec.bandwidth_bytes_per_s(lv, clock_hz)
        rows.append({
            "device_key": spec.key, "kind": "memory", "ceiling": lv, "flops_per_s": None, "bytes_per_s": val,
            "clock_hz": None if lv == "dram" else (clock_hz if clock_hz is not None and val is not None else v.clock_hz),
            "ridge_flops_per_byte": None, "source": spec.source_titles(v.source), "derivation": v.derivation,
        })
    schema = {"device_key": pl.Utf8, "kind": pl.Utf8, "ceiling": pl.Utf8, "flops_per_s": pl.Float64, "bytes_per_s": pl.Float64,
              "clock_hz": pl.Float64, "ridge_flops_per_byte": pl.Float64, "source": pl.Utf8, "derivation": pl.Utf8}
    return pl.DataFrame(rows, schema=schema)


def roofs_at(
    spec: DeviceSpec,
    clock_hz: float | None = None,
    *,
    sparse: bool = False,
    precisions: Iterable[str] | None = None,
    levels: Iterable[str] | None = None,
) -> tuple[dict[str, float], dict[str, float]]:
    """(peak FLOP/s by precision, bandwidth in bytes/s by level) a chart draws for `spec`.

    `precisions` and `levels` choose (in that order) among those the spec publishes; None means
    all of them. With `clock_hz`, figures are rescaled as in `ceilings()`; a figure the vendor
    states no clock for cannot be moved to it and is left out.
    """
    available = _roof_precisions(spec, sparse)
    precisions = available if precisions is None else [p for p in precisions if p in available]
    levels = spec.levels() if levels is None else [lv for lv in levels if lv in spec.levels()]
    peaks = {p: v for p in precisions if (v := spec.peak_flops_per_s(p, sparse=_sparse_or_dense(spec, p, sparse), clock_hz=clock_hz))}
    bws = {lv: w for lv in levels if (w := spec.bandwidth_bytes_per_s(lv, clock_hz))}
    return peaks, bws


def median_kernel_clock(rf: pl.DataFrame, device_key: str) -> float | None:
    """Median measured SM clock of one device's kernels in a `roofline()` frame (the clock charts
    draw 'at the measured clock' ceilings at), None when none was measured."""
    s = rf.filter(pl.col("device_key") == device_key)["kernel_clock_hz"].drop_nulls()
    return float(s.median()) if s.len() else None


def unmatched_devices(ps_or_kernels, extra_specs: Iterable = ()) -> dict[str, str]:
    """Device names in the input that match no spec, with the reason for each."""
    kernels, md = _inputs(ps_or_kernels)
    names = _device_column(kernels, md).get_column("_device").unique(maintain_order=True).to_list()
    specs = load_specs(extra_specs)
    out = {}
    for n in names:
        m = resolve_device(n, specs=specs)
        if m.spec is None:
            out[str(n)] = m.reason
    return out


__all__ = ["roofline", "ceilings", "roofs_at", "median_kernel_clock", "roofline_columns", "unmatched_devices", "tensor_pipe_activity"]


from profaudit._callable import make_module_callable  # noqa: E402

# `profaudit.roofline(ps)` calls roofline(); the module's other helpers stay reachable
make_module_callable(__name__, roofline)
