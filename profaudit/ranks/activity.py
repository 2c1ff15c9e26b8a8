"""Per-rank GPU activity: which rows belong to which rank, step windows, and the temporal
breakdown (computation / communication / memory / idle, overlapped and exposed communication).

The breakdown is one sweep over interval boundaries per rank (vectorised: a sort, cumulative sums
and an as-of join), so a union or an intersection never needs a Python loop: between two
consecutive boundaries the set of running activity kinds is constant, and every step boundary is a
boundary too, so no segment straddles two windows. It reproduces HTA's `get_temporal_breakdown`
(idle = span - union of all kernels, compute = union of computation kernels, non-compute = the
rest) on the whole-trace row and adds the same split per step.
"""

from __future__ import annotations

import re

import polars as pl

from profaudit import schema
from profaudit.errors import UsageError
from profaudit.ranks.kinds import COMM_KERNEL_RE, MEMORY_KERNEL_RE

DEFAULT_STEP_PATTERN = r"^ProfilerStep#(\d+)$"
COMPUTE, COMM, MEMORY = 0, 1, 2


def with_rank(df: pl.DataFrame, ident: pl.DataFrame, table: str) -> pl.DataFrame:
    """`df` (a table of the run's ProfileSet) with a `rank` column; rows of no rank are dropped.

    A profile that is one rank gives all its rows to it; in a capture of several GPUs, device rows
    go by device and host rows (ranges) by the process that drove the device."""
    whole = ident.filter(~pl.col("_per_device")).select("profile_id", "rank")
    out = [_with_profile_rank(df, whole)]
    per = ident.filter(pl.col("_per_device"))
    if per.height:
        if table == "ranges":
            # device-side ranges (XLA step and op lines, GPU annotations) go by device, host ones by process
            on_dev = df.filter(pl.col("device_id").is_not_null())
            out.append(on_dev.join(per.select("profile_id", "device_id", "rank"), on=["profile_id", "device_id"], how="inner"))
            keys = per.select("profile_id", "process_id", "rank").unique(["profile_id", "process_id"], keep="first")
            out.append(df.filter(pl.col("device_id").is_null()).join(keys, on=["profile_id", "process_id"], how="inner"))
        else:
            out.append(_with_device_rank(df, per.select("profile_id", "device_id", "rank")))
    return pl.concat(out, how="vertical") if len(out) > 1 else out[0]


def _with_profile_rank(df: pl.DataFrame, whole: pl.DataFrame) -> pl.DataFrame:
    """The inner join of `df` with (profile_id, rank) as a new column beside the table's own: the
    join copied every column (a 2 M-launch kernel table: 330 MB, kept for the run's life by
    `rank_rows`). Rows of other profiles are dropped as the join drops them; a profile listed
    twice (which the join would repeat) keeps the join."""
    if whole["profile_id"].is_duplicated().any():
        return df.join(whole, on="profile_id", how="inner")
    ranks = dict(zip(whole["profile_id"].to_list(), whole["rank"].to_list()))
    out = df.with_columns(pl.col("profile_id").replace_strict(ranks, default=None, return_dtype=whole.schema["rank"]).alias("rank"))
    # (a null profile_id is not one of them: is_in gives null there, which all() would skip)
    mine = pl.col("profile_id").is_in(list(ranks)).fill_null(False)
    return out if out.select(mine.all()).item() else out.filter(mine)


def _with_device_rank(df: pl.DataFrame, per: pl.DataFrame) -> pl.DataFrame:
    """The inner join of `df` with (profile_id, device_id, rank), the rank found through the two
    key columns alone and added beside the table's own (see `_with_profile_rank`)."""
    on = ["profile_id", "device_id"]
    if per.select(on).is_duplicated().any():
        return df.join(per, on=on, how="inner")
    rank = df.select(on).join(per, on=on, how="left", maintain_order="left")["rank"]
    out = df.with_columns(rank)
    return out if rank.null_count() == 0 else out.filter(pl.col("rank").is_not_null())


def step_windows(run, pattern: str | None = None) -> pl.DataFrame:
    """Step ranges per rank: `rank`, `step`, `step_name`, `ws`, `we` (the rank's own clock).

    Steps are host ranges named like `pattern` (default `ProfilerStep#N`; for NVTX or other markers
    give a regex, its first group the step number) or XLA step markers (kind `step`). The device
    copies of ProfilerStep that newer Kineto writes (`gpu_user_annotation`) are left out so that a
    step is not counted twice."""
    r = run.rank_rows("ranges")
    pat = pattern or DEFAULT_STEP_PATTERN
    try:
        re.compile(pat)
    except re.error as exc:
        raise UsageError(f"step pattern {pat!r} is not a regular expression: {exc}") from None
    is_step = pl.col("name").str.contains(pat) & (pl.col("kind") != "gpu_user_annotation")
    if pattern is None:
        is_step = is_step | (pl.col("kind") == "step")
    s = r.filter(is_step & pl.col("start_ns").is_not_null() & pl.col("end_ns").is_not_null())
    if re.compile(pat).groups:
        num = pl.col("name").str.extract(pat, 1).cast(pl.Int64, strict=False)
    else:
        num = pl.col("name").str.extract(r"(\d+)", 1).cast(pl.Int64, strict=False)
    # XLA step lines name the step by its number
    xla_num = pl.when(pl.col("kind") == "step").then(pl.col("name").str.extract(r"(\d+)", 1).cast(pl.Int64, strict=False))
    s = s.sort("rank", "start_ns").with_columns(
        pl.coalesce(num, xla_num, (pl.int_range(pl.len()).over("rank")).cast(pl.Int64)).alias("step"))
    s = s.unique(["rank", "step"], keep="first", maintain_order=True)
    return s.select("rank", "step", pl.col("name").alias("step_name"), pl.col("start_ns").alias("ws"), pl.col("end_ns").alias("we"))


def launch_steps(run, df: pl.DataFrame, steps: pl.DataFrame) -> pl.DataFrame:
    """`df` (rank rows of kernels or transfers) with `step`: the host step its launch call was
    issued in (through the correlation id), or, where no launch was recorded, the step it started in."""
    launches = run.rank_rows("ranges").filter(pl.col("kind").is_in(["cuda_runtime", "cuda_driver"]) & pl.col("correlation_id").is_not_null())
    launches = launches.select("rank", "profile_id", "correlation_id", pl.col("start_ns").alias("_launch")).unique(
        ["rank", "profile_id", "correlation_id"], keep="first")
    df = df.join(launches, on=["rank", "profile_id", "correlation_id"], how="left").with_columns(
        pl.coalesce(pl.col("_launch"), pl.col("start_ns")).alias("_t"))
    if not (steps.height and df.height):
        return df.with_columns(pl.lit(None, dtype=pl.Int64).alias("step")).drop("_launch", "_t")
    df = df.sort("_t").join_asof(steps.sort("ws").select("rank", pl.col("ws").alias("_ws"), pl.col("we").alias("_we"), pl.col("step").alias("_step")),
                                 left_on="_t", right_on="_ws", by="rank", strategy="backward", check_sortedness=False)
    return df.with_columns(pl.when(pl.col("_t") < pl.col("_we")).then(pl.col("_step")).alias("step")).drop("_launch", "_t", "_ws", "_we", "_step")


def gpu_step_windows(run, host: pl.DataFrame) -> pl.DataFrame:
    """Per rank and step, the GPU's window: from the first to the last kernel or copy launched in
    the host step. A window is cut where the next step's begins, so that windows never overlap
    (a tail still running when the next step's first kernel starts counts for the next step)."""
    parts = []
    for table in ("kernels", "transfers"):
        d = run.rank_rows(table).filter(pl.col("start_ns").is_not_null() & pl.col("end_ns").is_not_null())
        parts.append(launch_steps(run, d.select("rank", "profile_id", "correlation_id", "start_ns", "end_ns"), host))
    act = pl.concat(parts, how="vertical").filter(pl.col("step").is_not_null())
    w = act.group_by("rank", "step").agg(pl.col("start_ns").min().alias("ws"), pl.col("end_ns").max().alias("we")).sort("rank", "ws")
    w = w.with_columns(pl.min_horizontal(pl.col("we"), pl.col("ws").shift(-1).over("rank")).fill_null(pl.col("we")).alias("we"))
    return w.join(host.select("rank", "step", "step_name"), on=["rank", "step"], how="left").select("rank", "step", "step_name", "ws", "we")


def intervals(run) -> pl.DataFrame:
    """GPU activity per rank: `rank`, `cat` (0 compute, 1 communication, 2 memory), `s`, `e`."""
    k = run.rank_rows("kernels").filter(pl.col("start_ns").is_not_null() & pl.col("end_ns").is_not_null())
    name = pl.col("name").fill_null("")
    cat = (pl.when(name.str.contains(COMM_KERNEL_RE)).then(COMM)
           .when(name.str.contains(MEMORY_KERNEL_RE)).then(MEMORY).otherwise(COMPUTE))
    kk = k.select("rank", cat.cast(pl.Int8).alias("cat"), pl.col("start_ns").alias("s"), pl.col("end_ns").alias("e"))
    t = run.rank_rows("transfers").filter(pl.col("start_ns").is_not_null() & pl.col("end_ns").is_not_null())
    tt = t.select("rank", pl.lit(MEMORY, dtype=pl.Int8).alias("cat"), pl.col("start_ns").alias("s"), pl.col("end_ns").alias("e"))
    return pl.concat([kk, tt], how="vertical").filter(pl.col("e") >= pl.col("s"))


def _segments(iv: pl.DataFrame, windows: pl.DataFrame) -> pl.DataFrame:
    """Constant-state segments per rank: `rank`, `t`, `len`, and whether compute/comm/memory run."""
    def ev(col: str, sign: int) -> pl.DataFrame:
        return iv.select("rank", pl.col(col).alias("t"),
                         *[(pl.when(pl.col("cat") == c).then(sign).otherwise(0)).cast(pl.Int64).alias(f"d{c}") for c in (COMPUTE, COMM, MEMORY)])

    zero = [pl.lit(0, dtype=pl.Int64).alias(f"d{c}") for c in (COMPUTE, COMM, MEMORY)]
    bounds = pl.concat([windows.select("rank", pl.col("ws").alias("t"), *zero), windows.select("rank", pl.col("we").alias("t"), *zero)])
    e = pl.concat([ev("s", 1), ev("e", -1), bounds], how="vertical")
    e = e.group_by("rank", "t").agg(pl.col("d0", "d1", "d2").sum()).sort("rank", "t")
    return e.select(
        "rank", "t",
        (pl.col("t").shift(-1).over("rank") - pl.col("t")).alias("len"),
        (pl.col("d0").cum_sum().over("rank") > 0).alias("c"),
        (pl.col("d1").cum_sum().over("rank") > 0).alias("m"),
        (pl.col("d2").cum_sum().over("rank") > 0).alias("y"),
    ).filter(pl.col("len").is_not_null() & (pl.col("len") > 0))


def _sum_where(cond: pl.Expr, name: str) -> pl.Expr:
    return pl.col("len").filter(cond).sum().cast(pl.Int64).alias(name)


def temporal_breakdown(run) -> pl.DataFrame:
    iv = intervals(run)
    steps = run.steps
    ranks = run.ranks.select("profile_id", "rank", "clock_offset_ns")
    span = iv.group_by("rank").agg(pl.col("s").min().alias("ws"), pl.col("e").max().alias("we")).with_columns(
        pl.lit(None, dtype=pl.Int64).alias("step"), pl.lit("(trace)").alias("step_name"))
    windows = pl.concat([steps.select("rank", "step", "step_name", "ws", "we"), span.select("rank", "step", "step_name", "ws", "we")])
    if windows.height == 0:
        return schema.STEP_BREAKDOWN.empty()
    seg = _segments(iv, windows).sort("t")
    # steps: each segment to the step that starts at or before it (steps of a rank do not overlap)
    st = steps.sort("ws").with_columns(pl.int_range(pl.len()).alias("_w"))
    a = seg.join_asof(st.select("rank", "ws", "we", "_w"), left_on="t", right_on="ws", by="rank", strategy="backward", check_sortedness=False)
    a = a.filter(pl.col("_w").is_not_null() & (pl.col("t") < pl.col("we")))
    b = seg.join(span.select("rank", "ws", "we"), on="rank").filter((pl.col("t") >= pl.col("ws")) & (pl.col("t") < pl.col("we")))
    busy = pl.col("c") | pl.col("m") | pl.col("y")
    aggs = [
        _sum_where(busy, "busy_ns"), _sum_where(pl.col("c"), "compute_ns"), _sum_where(pl.col("m"), "communication_ns"),
        _sum_where(pl.col("y"), "memory_ns"), _sum_where(pl.col("m") & pl.col("c"), "overlapped_communication_ns"),
        _sum_where(pl.col("m") & ~pl.col("c"), "exposed_communication_ns"),
        _sum_where(pl.col("y") & ~pl.col("c") & ~pl.col("m"), "exposed_memory_ns"), _sum_where(~busy, "idle_ns"),
    ]
    per_step = st.join(a.group_by("_w").agg(aggs), on="_w", how="left").drop("_w")
    per_trace = span.join(b.group_by("rank").agg(aggs), on="rank", how="left")
    out = pl.concat([per_step, per_trace.select(per_step.columns)], how="vertical_relaxed")
    ns = [c for c in out.columns if c.endswith("_ns")]
    # every window boundary is a sweep boundary, so the segments tile each window; only an empty
    # window has none
    out = out.with_columns(pl.col(ns).fill_null(0)).with_columns((pl.col("we") - pl.col("ws")).alias("window_ns"))
    out = out.join(ranks, on="rank", how="left").with_columns(
        (pl.col("ws") - pl.col("clock_offset_ns")).alias("start_ns"), (pl.col("we") - pl.col("clock_offset_ns")).alias("end_ns"),
        pl.when(pl.col("communication_ns") > 0).then(100.0 * pl.col("overlapped_communication_ns") / pl.col("communication_ns")).alias("overlap_pct"))
    out = out.sort("rank", pl.col("step").is_null(), "step")
    return schema.conform(schema.STEP_BREAKDOWN, out.select(schema.STEP_BREAKDOWN.names))
