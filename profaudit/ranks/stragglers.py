"""Stragglers: which rank the others waited for, in collectives and in steps.

In a collective every rank's kernel starts when that rank's stream reaches it and ends when the
last member has arrived and the data moved; the rank that started last is the one the others waited
for, and each other rank's wait is the last start minus its own (aligned clocks). Over the run the
ranks are ranked by the wait they caused.
"""

from __future__ import annotations

import polars as pl

from profaudit import schema


def rank_stragglers(calls: pl.DataFrame, ranks: pl.DataFrame) -> pl.DataFrame:
    """Per rank: how often it arrived last at a collective, and the wait that cost the others."""
    multi = calls.filter((pl.col("ranks") > 1) & (pl.col("arrival_spread_ns") > 0))
    total = multi.height
    g = multi.group_by("last_rank").agg(
        pl.len().cast(pl.Int64).alias("times_last"),
        pl.col("wait_total_ns").sum().cast(pl.Int64).alias("wait_caused_ns"),
        pl.col("arrival_spread_ns").max().alias("max_late_ns"),
        pl.col("arrival_spread_ns").median().alias("median_late_ns"),
    ).rename({"last_rank": "rank"})
    out = ranks.select("rank").join(g, on="rank", how="left").with_columns(
        pl.col("times_last", "wait_caused_ns").fill_null(0),
        pl.lit(total, dtype=pl.Int64).alias("calls"),
    ).with_columns(
        pl.when(pl.col("calls") > 0).then(100.0 * pl.col("times_last") / pl.col("calls")).alias("last_pct"))
    out = out.sort(["wait_caused_ns", "times_last", "rank"], descending=[True, True, False])
    out = out.with_columns(pl.int_range(1, pl.len() + 1, dtype=pl.Int64).alias("straggler_rank"))
    return schema.conform(schema.STRAGGLERS, out.select(schema.STRAGGLERS.names))


def step_skew(bd: pl.DataFrame) -> pl.DataFrame:
    s = bd.filter(pl.col("step").is_not_null())
    if s.height == 0:
        return schema.STEP_SKEW.empty()
    g = s.group_by("step").agg(
        pl.len().cast(pl.Int64).alias("ranks"),
        pl.col("window_ns").min().alias("min_step_ns"),
        pl.col("window_ns").max().alias("max_step_ns"),
        pl.col("rank").sort_by("window_ns").last().alias("slowest_rank"),
        (pl.col("start_ns").max() - pl.col("start_ns").min()).alias("start_spread_ns"),
        (pl.col("end_ns").max() - pl.col("start_ns").min()).alias("job_step_ns"),
        pl.col("exposed_communication_ns").max().alias("max_exposed_communication_ns"),
        pl.col("idle_ns").max().alias("max_idle_ns"),
    ).with_columns((pl.col("max_step_ns") - pl.col("min_step_ns")).alias("skew_ns")).sort("step")
    return schema.conform(schema.STEP_SKEW, g.select(schema.STEP_SKEW.names))


SUMMARY_COLUMNS = (
    "rank", "host", "node", "local_rank", "device_name", "clock_method", "clock_offset_ns", "clock_offset_error_ns",
    "kernel_count", "collective_count", "step_count", "window_ns", "compute_ns", "communication_ns", "exposed_communication_ns",
    "overlap_pct", "idle_ns", "times_last", "wait_caused_ns",
)


def rank_summary(run) -> pl.DataFrame:
    """Per rank: identity, clock alignment, whole-trace breakdown and straggler counts."""
    trace = run.step_breakdown.filter(pl.col("step").is_null()).select(
        "rank", "window_ns", "compute_ns", "communication_ns", "exposed_communication_ns", "overlap_pct", "idle_ns")
    out = run.ranks.join(trace, on="rank", how="left").join(run.stragglers.select("rank", "times_last", "wait_caused_ns"), on="rank", how="left")
    return out.select(SUMMARY_COLUMNS).sort("rank")
