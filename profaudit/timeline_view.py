"""Timeline lanes for a zoomable view: kernels and transfers per device and stream, ranges per host
thread, and server-side decimation so a trace of any size draws a bounded number of bars.

    ev = timeline_events(profile)                       # one row per timed event, with its lane
    seg = decimate(ev, x0_ns, x1_ns, max_segments=2000) # what a chart of that window draws

Times are nanoseconds from the profile's first event (`origin_ns`, the same in every row, keeps
where that is). Decimation merges, lane by lane, events that start within a resolution of the
end of the events before them; the resolution grows until the window fits `max_segments`. Every
segment keeps its event count, its busy time (the union of its events' intervals, so nested
ranges count once) and the name of its longest event: nothing in the window is dropped, it is
only drawn coarser.
"""

from __future__ import annotations

import polars as pl

from profaudit.profile import Profile
from profaudit.timeline import _duration_expr

COLUMNS = ("lane", "lane_order", "kind", "name", "start_ns", "end_ns")


def _str(c: str) -> pl.Expr:
    return pl.col(c).cast(pl.Utf8).fill_null("?")


def _frame(df: pl.DataFrame, lane: pl.Expr, order: pl.Expr, kind: pl.Expr) -> pl.DataFrame:
    dur = _duration_expr()
    return df.filter(pl.col("start_ns").is_not_null() & dur.is_not_null()).select(
        lane.alias("lane"), order.alias("lane_order"), kind.alias("kind"), pl.col("name").fill_null("?"),
        pl.col("start_ns").cast(pl.Int64), (pl.col("start_ns").cast(pl.Float64) + dur).round(0).cast(pl.Int64).alias("end_ns"),
    )


def timeline_events(p: Profile) -> pl.DataFrame:
    """Kernels, transfers and ranges of one profile with their lanes (see the module docstring)."""
    gpu = pl.concat_str([pl.lit("GPU "), _str("device_id"), pl.lit(" stream "), _str("stream")])
    gpu_order = pl.col("device_id").fill_null(-1) * 1_000_000 + pl.col("stream").fill_null(-1)
    parts = [
        _frame(p.tables["kernels"], gpu, gpu_order, pl.lit("kernel")),
        _frame(p.tables["transfers"].with_columns(pl.coalesce(pl.col("name"), pl.concat_str([pl.col("kind"), pl.col("direction")], separator=" ", ignore_nulls=True)).alias("name")),
               gpu, gpu_order, pl.lit("transfer")),
    ]
    r = p.tables["ranges"]
    if r.height:
        host = pl.when(pl.col("thread_id").is_not_null()).then(
            pl.concat_str([pl.lit("host "), _str("process_id"), pl.lit(" thread "), _str("thread_id")])
        ).otherwise(pl.concat_str([pl.lit("ranges ("), pl.col("kind").fill_null("?"), pl.lit(")")]))
        # host lanes after every GPU lane
        order = pl.lit(10**15) + pl.col("thread_id").fill_null(-1)
        parts.append(_frame(r, host, order, pl.col("kind").fill_null("range")))
    ev = pl.concat([x for x in parts if x.height], how="vertical") if any(x.height for x in parts) else pl.DataFrame(
        schema={"lane": pl.Utf8, "lane_order": pl.Int64, "kind": pl.Utf8, "name": pl.Utf8, "start_ns": pl.Int64, "end_ns": pl.Int64})
    if ev.height == 0:
        return ev.with_columns(pl.lit(None, pl.Int64).alias("origin_ns")).select("origin_ns", *COLUMNS)
    origin = int(ev["start_ns"].min())
    ev = ev.with_columns(pl.lit(origin, pl.Int64).alias("origin_ns"), pl.col("start_ns") - origin, pl.col("end_ns") - origin)
    return ev.select("origin_ns", *COLUMNS).sort("lane_order", "lane", "start_ns")


def decimate(ev: pl.DataFrame, x0_ns: float | None = None, x1_ns: float | None = None, *, max_segments: int = 2000) -> tuple[pl.DataFrame, float]:
    """The segments to draw for the window [x0, x1] (default: everything) and the resolution
    (ns) they were merged at (0: every event as it is). Columns: lane, lane_order, kind, name,
    start_ns, end_ns, count, busy_ns."""
    lo = float(ev["start_ns"].min()) if x0_ns is None and ev.height else (x0_ns or 0.0)
    hi = float(ev["end_ns"].max()) if x1_ns is None and ev.height else (x1_ns or 0.0)
    w = ev.filter((pl.col("end_ns") >= lo) & (pl.col("start_ns") <= hi))
    if w.height <= max_segments:
        return w.select(*COLUMNS).with_columns(pl.lit(1, pl.Int64).alias("count"), (pl.col("end_ns") - pl.col("start_ns")).cast(pl.Float64).alias("busy_ns")), 0.0
    # start fine and double: the coarsest resolution that fits would merge far more than needed
    gap = max(1.0, (hi - lo) / (8 * max_segments))
    w = w.sort("lane", "start_ns")
    while True:
        seg = _merge(w, gap)
        if seg.height <= max_segments:
            return seg, gap
        gap *= 2


def _merge(w: pl.DataFrame, gap: float) -> pl.DataFrame:
    # a new segment starts where an event begins more than `gap` after every earlier event of its
    # lane has ended (running maximum of the ends, so nested and overlapping events stay together)
    reach = pl.col("end_ns").cum_max().shift(1).over("lane")
    w = w.with_columns(((pl.col("start_ns") - reach) > gap).fill_null(True).cast(pl.Int64).cum_sum().over("lane").alias("_seg"))
    dur = pl.col("end_ns") - pl.col("start_ns")
    return (
        w.group_by("lane", "_seg", maintain_order=True)
        .agg(
            pl.col("lane_order").first(),
            pl.col("kind").sort_by(dur, descending=True).first(),
            pl.col("name").sort_by(dur, descending=True).first(),
            pl.col("start_ns").min(),
            pl.col("end_ns").max(),
            pl.len().cast(pl.Int64).alias("count"),
            _busy(),
        )
        .select(*COLUMNS, "count", "busy_ns")
    )


def _busy() -> pl.Expr:
    """Union length of a segment's intervals: each event adds what extends past the running end."""
    prev = pl.col("end_ns").cum_max().shift(1)
    start = pl.max_horizontal(pl.col("start_ns"), prev.fill_null(pl.col("start_ns")))
    return (pl.col("end_ns") - start).clip(lower_bound=0).sum().cast(pl.Float64).alias("busy_ns")
