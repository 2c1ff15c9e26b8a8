"""What moved inside matched kernels: counters (ncu), launch configuration, and roofline position.

`metrics_moved` compares, per matched group, the mean of every numeric kernel column and every
aggregate ncu metric present on both sides, and ranks them by a symmetric relative change,
|c - b| / max(|b|, |c|), which is bounded (0..1), treats 0 -> x and x -> 0 alike and never
divides by zero. `rel_change_pct` ((c - b) / |b|) is reported beside it for people.

`roofline_movement` places each matched group before and after on the device roofline through
`profaudit.roofline`: total FLOPs and bytes over total time of the group's launches.
"""

from __future__ import annotations

import re

import polars as pl

from profaudit.compare.match import mode_of
from profaudit.schema import PRECISIONS

# Changes smaller than this (symmetric, 1 %) are counter noise, not movement.
MIN_MOVEMENT = 0.01

# Kernel-table columns worth comparing (identity, timestamps and duration are not "metrics").
KERNEL_METRIC_COLUMNS: tuple[str, ...] = (
    "dram_bytes",
    "dram_read_bytes",
    "dram_write_bytes",
    "l2_bytes",
    "l1_bytes",
    "flops_total",
    "achieved_occupancy_pct",
    "theoretical_occupancy_pct",
    "registers_per_thread",
    "shared_mem_bytes",
    "grid_size",
    "block_size",
    "sm_clock_hz",
    "mem_clock_hz",
)

# ncu metrics that duplicate a kernel column, or are constants of the device/profiler session.
_EXCLUDE = re.compile(
    r"^(?:device__attribute|profiler__|launch__|numa__|nvlink__|TriageA|SM\.TriageA|group:|breakdown:|pmsampling)"
    r"|^gpu__time_duration\.|^dram__bytes_(?:read|write)\.sum$|\.peak_sustained(?:$|_)|^sm__warps_active\.avg\.pct_of_peak_sustained_active$"
)

_CATEGORIES: tuple[tuple[str, re.Pattern], ...] = tuple(
    (c, re.compile(rx, re.I))
    for c, rx in (
        ("stall", r"stall"),
        ("occupancy", r"occupancy|warps_active|registers|shared_mem|block_size|grid_size|waves"),
        ("memory", r"dram|lts__|l1tex__|l2_|l1_|bytes|sector|hit_rate|memory|bank_conflict"),
        ("clock", r"clock|cycles_elapsed\.avg\.per_second"),
        ("compute", r"inst_executed|flop|pipe_|sm__throughput|ipc|issue_active|fma|tensor"),
    )
)

# Shown first when present: the metrics kernel engineers look at before anything else.
KEY_METRICS: tuple[str, ...] = (
    "dram_bytes",
    "lts__t_sector_hit_rate.pct",
    "l1tex__t_sector_hit_rate.pct",
    "achieved_occupancy_pct",
    "registers_per_thread",
    "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
    "dram__throughput.avg.pct_of_peak_sustained_elapsed",
    "smsp__inst_executed.sum",
    "flops_total",
)


def category(metric: str) -> str:
    for c, rx in _CATEGORIES:
        if rx.search(metric):
            return c
    return "other"


def _kernel_column_means(k: pl.DataFrame) -> pl.DataFrame:
    cols = [c for c in KERNEL_METRIC_COLUMNS if c in k.columns and k[c].is_not_null().any()]
    if not cols:
        return pl.DataFrame(schema={"group_id": pl.Int64, "metric": pl.Utf8, "unit": pl.Utf8, "value": pl.Float64})
    from profaudit import schema

    # the means per group first, then one row per (group, column): unpivoting the launches made a
    # long frame of launches x columns (28 M rows for a 200 MB capture's 2 M launches)
    long = (
        k.select("group_id", *[pl.col(c).cast(pl.Float64) for c in cols])
        .filter(pl.col("group_id").is_not_null())
        .group_by("group_id")
        .agg(pl.col(c).mean() for c in cols)
        .unpivot(index="group_id", variable_name="metric", value_name="value")
        .drop_nulls("value")
    )
    units = {c: schema.KERNELS.column(c).unit for c in cols}
    return long.with_columns(pl.col("metric").replace_strict(units, default="", return_dtype=pl.Utf8).alias("unit")).select(
        "group_id", "metric", "unit", "value"
    )


def _table_metric_means(k: pl.DataFrame, metrics: pl.DataFrame) -> pl.DataFrame:
    empty = pl.DataFrame(schema={"group_id": pl.Int64, "metric": pl.Utf8, "unit": pl.Utf8, "value": pl.Float64})
    if metrics.height == 0:
        return empty
    # lazy: the filters, the column selection and the join run as one plan, so the aggregate
    # metric rows are not copied whole once per step (a 200 MB Neuron blow-up's 9.9 M metric rows:
    # compare peaked 860 MB above the loaded profile, per side)
    aggregate = pl.col("value").is_not_null() & pl.col("instance").is_null() & (pl.col("kind").is_null() | (pl.col("kind") == "metric"))
    names = metrics.lazy().filter(aggregate).select(pl.col("metric").unique()).collect()["metric"]
    if names.len() == 0:
        return empty
    keep = [n for n in names.to_list() if n is not None and not _EXCLUDE.search(n)]
    keys = k.lazy().filter(pl.col("group_id").is_not_null()).select("profile_id", "kernel_id", "group_id")
    return (
        metrics.lazy().filter(aggregate & pl.col("metric").is_in(keep))
        .select("profile_id", "kernel_id", "metric", "unit", "value")
        .join(keys, on=["profile_id", "kernel_id"], how="inner")
        .group_by("group_id", "metric")
        .agg(pl.col("unit").drop_nulls().first(), pl.col("value").mean())
        .select("group_id", "metric", "unit", "value")
        .collect()
    )


def metrics_moved(b, c, kb: pl.DataFrame, kc: pl.DataFrame) -> pl.DataFrame:
    """Per matched group, every metric present on both sides with its change, most moved first.

    Columns: group_id, metric, category, unit, baseline, candidate, rel_change_pct, movement,
    key_metric, rank (within the group). Metrics that moved less than `MIN_MOVEMENT` are left out.
    """
    vb = pl.concat([_kernel_column_means(kb), _table_metric_means(kb, b.metrics)], how="vertical")
    # a profile compared with itself (compare.kernels gives both sides one frame): one side's means
    vc = vb if kc is kb and c.ps is b.ps else pl.concat([_kernel_column_means(kc), _table_metric_means(kc, c.metrics)], how="vertical")
    j = vb.join(vc.drop("unit"), on=["group_id", "metric"], how="inner", suffix="_c").rename({"value": "baseline", "value_c": "candidate"})
    if j.height == 0:
        return pl.DataFrame(
            schema={
                "group_id": pl.Int64, "metric": pl.Utf8, "category": pl.Utf8, "unit": pl.Utf8, "baseline": pl.Float64,
                "candidate": pl.Float64, "rel_change_pct": pl.Float64, "movement": pl.Float64, "key_metric": pl.Boolean, "rank": pl.Int64,
            }
        )
    d = pl.col("candidate") - pl.col("baseline")
    denom = pl.max_horizontal(pl.col("baseline").abs(), pl.col("candidate").abs())
    j = j.with_columns(
        pl.when(pl.col("baseline") != 0).then(d / pl.col("baseline").abs() * 100).alias("rel_change_pct"),
        pl.when(denom > 0).then(d.abs() / denom).otherwise(0.0).alias("movement"),
        pl.col("metric").is_in(list(KEY_METRICS)).alias("key_metric"),
    ).filter(pl.col("movement") >= MIN_MOVEMENT)
    cats = {m: category(m) for m in j["metric"].unique().to_list()}
    j = j.with_columns(pl.col("metric").replace_strict(cats, return_dtype=pl.Utf8).alias("category"))
    j = j.sort(["group_id", "movement", "metric"], descending=[False, True, False]).with_columns(
        pl.int_range(1, pl.len() + 1, dtype=pl.Int64).over("group_id").alias("rank")
    )
    return j.select("group_id", "metric", "category", "unit", "baseline", "candidate", "rel_change_pct", "movement", "key_metric", "rank")


_SUM_COLUMNS = tuple(f"flops_{p}" for p in PRECISIONS) + ("flops_total", "dram_bytes", "dram_read_bytes", "dram_write_bytes", "l2_bytes", "l1_bytes")

ROOFLINE_SCHEMA = {
    "group_id": pl.Int64, "label": pl.Utf8, "side": pl.Utf8, "device_key": pl.Utf8, "duration_ns": pl.Float64,
    "flops": pl.Float64, "flops_precisions": pl.Utf8, "dram_bytes": pl.Float64,
    "intensity_flop_per_byte": pl.Float64, "achieved_flop_per_s": pl.Float64, "achieved_dram_bytes_per_s": pl.Float64,
    "peak_flop_per_s": pl.Float64, "peak_bytes_per_s": pl.Float64, "attainable_flop_per_s": pl.Float64,
    "pct_of_roof": pl.Float64, "binding": pl.Utf8, "pct_of_roof_at_kernel_clock": pl.Float64,
    "binding_at_kernel_clock": pl.Utf8, "kernel_clock_hz": pl.Float64, "roof_note": pl.Utf8,
}


def _group_aggregate(k: pl.DataFrame, side: str) -> pl.DataFrame:
    """One kernels-schema row per matched group: the group as one kernel (sums of work and time)."""
    g = k.filter(pl.col("group_id").is_not_null() & pl.col("duration_ns").is_not_null())
    if g.height == 0:
        return pl.DataFrame()
    # a sum over all-null values must stay null (absent counters are not zero work)
    sums = [pl.when(pl.col(c).count() > 0).then(pl.col(c).sum()).otherwise(None).alias(c) for c in _SUM_COLUMNS]
    w = pl.col("duration_ns")
    clk = pl.when(pl.col("sm_clock_hz").count() > 0).then((pl.col("sm_clock_hz") * w).sum() / w.filter(pl.col("sm_clock_hz").is_not_null()).sum())
    from profaudit.roofline import TENSOR_PIPE_COLUMN, UNCOUNTED_COLUMN

    extra = []
    if UNCOUNTED_COLUMN in g.columns:
        # one launch whose tensor FLOPs went uncounted leaves the group's FLOP total incomplete
        extra = [pl.col(UNCOUNTED_COLUMN).fill_null(False).any().alias(UNCOUNTED_COLUMN), pl.col(TENSOR_PIPE_COLUMN).max().alias(TENSOR_PIPE_COLUMN)]
    agg = g.group_by("group_id").agg(
        *sums,
        w.sum().alias("duration_ns"),
        clk.alias("sm_clock_hz"),
        mode_of("device_name"),
        *extra,
    )
    return agg.with_columns(pl.lit(side).alias("profile_id"), pl.col("group_id").alias("kernel_id"))


def roofline_movement(b, c, kb: pl.DataFrame, kc: pl.DataFrame, *, device: str | None = None) -> pl.DataFrame:
    """Before/after roofline position of each matched group with FLOP or byte counts on both sides.

    Each side's group is placed as if it were one kernel (total FLOPs and bytes over total time),
    through `profaudit.roofline.roofline` at the boost clock and at the clock the kernels ran at.
    Device metadata fills a missing per-kernel device name; `device` overrides both.
    """
    from profaudit.roofline import roofline, tensor_pipe_activity

    frames = []
    for side, src, k in (("baseline", b, kb), ("candidate", c, kc)):
        act = tensor_pipe_activity(k, src.ps.metrics)
        if act.height:
            k = k.join(act, on=["profile_id", "kernel_id"], how="left")
        agg = _group_aggregate(k, side)
        if agg.height == 0:
            return pl.DataFrame(schema=ROOFLINE_SCHEMA)
        if agg["device_name"].null_count() and src.ps.metadata.height:
            md_dev = src.ps.metadata["device_name"].drop_nulls()
            if md_dev.len():
                agg = agg.with_columns(pl.col("device_name").fill_null(md_dev[0]))
        has_work = agg.filter(pl.any_horizontal([pl.col(c_).is_not_null() for c_ in _SUM_COLUMNS]))
        if has_work.height == 0:
            return pl.DataFrame(schema=ROOFLINE_SCHEMA)
        rf = roofline(has_work.drop("group_id"), device=device, clock="both")
        frames.append(rf.with_columns(pl.lit(side).alias("side")))
    both = pl.concat(frames, how="vertical").filter(
        pl.col("achieved_flops_per_s").is_not_null() | pl.col("achieved_dram_bytes_per_s").is_not_null() | pl.col("roof_pct_at_boost").is_not_null()
    )
    keep = both.group_by("kernel_id").agg(pl.col("side").n_unique().alias("n")).filter(pl.col("n") == 2)["kernel_id"]
    both = both.filter(pl.col("kernel_id").is_in(keep.implode()))
    if both.height == 0:
        return pl.DataFrame(schema=ROOFLINE_SCHEMA)
    return both.select(
        pl.col("kernel_id").alias("group_id"),
        pl.lit(None, pl.Utf8).alias("label"),
        "side",
        "device_key",
        "duration_ns",
        "flops",
        "flops_precisions",
        "dram_bytes",
        pl.col("ai_dram_flops_per_byte").alias("intensity_flop_per_byte"),
        pl.col("achieved_flops_per_s").alias("achieved_flop_per_s"),
        "achieved_dram_bytes_per_s",
        pl.col("compute_roof_flops_per_s_at_boost").alias("peak_flop_per_s"),
        pl.col("dram_roof_bytes_per_s_at_boost").alias("peak_bytes_per_s"),
        pl.col("attainable_flops_per_s_at_boost").alias("attainable_flop_per_s"),
        pl.col("roof_pct_at_boost").alias("pct_of_roof"),
        pl.col("bound_at_boost").alias("binding"),
        pl.col("roof_pct_at_kernel_clock").alias("pct_of_roof_at_kernel_clock"),
        pl.col("bound_at_kernel_clock").alias("binding_at_kernel_clock"),
        "kernel_clock_hz",
        "roof_note",
    ).sort("group_id", "side")
