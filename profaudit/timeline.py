"""Timeline analyses over the normalised tables: kernel summaries, GPU idle gaps, NVTX attribution.

Everything here works on the schema's `kernels` and `ranges` frames (or a `ProfileSet`), whatever
tool produced them: nsys SQLite and stats CSVs, Kineto/Chrome traces. All of it is vectorised
polars (sorts, windows, joins, binary searches over packed (group, time) keys); the only Python
loop walks up NVTX parents one nesting level at a time, bounded by the deepest range stack, not by
the number of events.
"""

from __future__ import annotations

from typing import Iterable, Sequence

import polars as pl

from profaudit.profile import ProfileSet

# Kernel-name keys the summary can group by, as nsys stats spells the options.
NAME_KEYS = {
    "name": "name",  # demangled, the nsys default
    "short": "short_name",  # `:base`
    "base": "short_name",
    "mangled": "mangled_name",  # `:mangled`, falling back to the demangled name like nsys
}

# Host ranges whose stack a launch can sit in. NVTX start/end ranges are not thread-scoped (they can
# end on another thread and overlap without nesting), so, like nsys's per-thread projection, they do
# not take part in launch attribution.
DEFAULT_ATTRIBUTION_KINDS = ("nvtx_push_pop", "user_annotation")
API_KINDS = ("cuda_runtime", "cuda_driver")

_I64_MAX = 2**63 - 1


def _kernels_of(obj) -> pl.DataFrame:
    return obj.kernels if isinstance(obj, ProfileSet) else obj


def _duration_expr() -> pl.Expr:
    # duration_ns is declared on every kernels table; fall back to end - start where a tool left it out.
    return pl.coalesce(pl.col("duration_ns"), (pl.col("end_ns") - pl.col("start_ns")).cast(pl.Float64))


def kernel_summary(kernels, by: str | Sequence[str] = "name", *, per_profile: bool = True) -> pl.DataFrame:
    """Per-kernel statistics as `nsys stats --report cuda_gpu_kern_sum` computes them.

    One row per (profile, name): `time_pct` (share of the summed kernel time of that profile, not
    of wall time), `total_ns`, `instances`, `avg_ns`, `med_ns` (mean of the two middle values for
    an even count), `min_ns`, `max_ns`, `stddev_ns` (sample standard deviation, n-1; 0 for a
    single instance, as nsys prints it). nsys rounds avg/med/stddev/time% to one decimal; these
    are unrounded. Sorted like nsys: total descending, then instances, then name.

    `by` is `name` (demangled, default), `short`/`base`, `mangled` (falls back to the demangled
    name where no mangled name was recorded, as nsys does), any kernels column, or a list of
    columns (e.g. `["nvtx_range", "name"]` for an nvtx_kern_sum-like table).
    """
    k = _kernels_of(kernels)
    keys = [by] if isinstance(by, str) else list(by)
    exprs, names = [], []
    for key in keys:
        col = NAME_KEYS.get(key, key)
        if col not in k.columns:
            raise KeyError(f"kernels have no column {col!r} to group by")
        if key == "mangled":
            exprs.append(pl.coalesce(pl.col("mangled_name"), pl.col("name")).alias("name"))
            names.append("name")
        elif key in ("short", "base"):
            exprs.append(pl.coalesce(pl.col("short_name"), pl.col("name")).alias("name"))
            names.append("name")
        else:
            exprs.append(pl.col(col))
            names.append(col)
    group = (["profile_id"] if per_profile and "profile_id" in k.columns else []) + names
    d = k.select([*([pl.col("profile_id")] if "profile_id" in group else []), *exprs, _duration_expr().alias("_d")])
    d = d.filter(pl.col("_d").is_not_null())
    out = d.group_by(group, maintain_order=True).agg(
        pl.col("_d").sum().alias("total_ns"),
        pl.len().cast(pl.Int64).alias("instances"),
        pl.col("_d").mean().alias("avg_ns"),
        pl.col("_d").median().alias("med_ns"),
        pl.col("_d").min().alias("min_ns"),
        pl.col("_d").max().alias("max_ns"),
        pl.col("_d").std(ddof=1).fill_null(0.0).alias("stddev_ns"),
        pl.col("_d").quantile(0.25, interpolation="linear").alias("q1_ns"),
        pl.col("_d").quantile(0.75, interpolation="linear").alias("q3_ns"),
    )
    part = ["profile_id"] if "profile_id" in group else []
    total = pl.col("total_ns").sum().over(part) if part else pl.col("total_ns").sum()
    out = out.with_columns((pl.col("total_ns") * 100.0 / total).alias("time_pct"))
    cols = part + ["time_pct", "total_ns", "instances", "avg_ns", "med_ns", "min_ns", "max_ns", "stddev_ns", "q1_ns", "q3_ns"] + names
    sort_by = part + ["total_ns", "instances"] + names
    return out.select(cols).sort(sort_by, descending=[False] * len(part) + [True, False] + [False] * len(names), nulls_last=True)


def kernel_summary_from_samples(samples: pl.DataFrame, reports: Sequence[str] = ("cuda_gpu_kern_sum",)) -> pl.DataFrame:
    """The `kernel_summary` table rebuilt from summary rows that a tool computed itself (the
    `samples` rows an `nsys stats` kern_sum CSV becomes: one row per (name, statistic)).
    Quartiles are not in those reports and stay null."""
    cols = ["profile_id", "time_pct", "total_ns", "instances", "avg_ns", "med_ns", "min_ns", "max_ns", "stddev_ns", "q1_ns", "q3_ns", "name"]
    empty = pl.DataFrame(schema={c: (pl.Utf8 if c in ("profile_id", "name") else pl.Int64 if c == "instances" else pl.Float64) for c in cols})
    if samples.height == 0:
        return empty
    s = samples.filter(pl.col("statistic").is_not_null() & pl.col("params").is_not_null())
    s = s.with_columns(pl.col("params").str.json_path_match("$.report").alias("_report")).filter(pl.col("_report").is_in(list(reports)))
    if s.height == 0:
        return empty
    wide = s.pivot(on="statistic", index=["profile_id", "benchmark", "params"], values="duration_ns", aggregate_function="first")
    counts = s.group_by(["profile_id", "benchmark", "params"]).agg(pl.col("sample_count").max().alias("instances"))
    wide = wide.join(counts, on=["profile_id", "benchmark", "params"], how="left")
    for stat in ("total", "mean", "median", "min", "max", "stddev"):
        if stat not in wide.columns:
            wide = wide.with_columns(pl.lit(None, dtype=pl.Float64).alias(stat))
    out = wide.select(
        "profile_id",
        pl.col("total").alias("total_ns"),
        pl.col("instances").cast(pl.Int64),
        pl.col("mean").alias("avg_ns"),
        pl.col("median").alias("med_ns"),
        pl.col("min").alias("min_ns"),
        pl.col("max").alias("max_ns"),
        pl.col("stddev").alias("stddev_ns"),
        pl.lit(None, dtype=pl.Float64).alias("q1_ns"),
        pl.lit(None, dtype=pl.Float64).alias("q3_ns"),
        pl.col("benchmark").alias("name"),
    ).with_columns((pl.col("total_ns") * 100.0 / pl.col("total_ns").sum().over("profile_id")).alias("time_pct"))
    return out.select(cols).sort(["profile_id", "total_ns", "instances", "name"], descending=[False, True, False, False], nulls_last=True)


_PER = {
    "device": ["profile_id", "device_id"],
    "stream": ["profile_id", "device_id", "stream"],
    "profile": ["profile_id"],
}


def _busy_intervals(kernels: pl.DataFrame, transfers: pl.DataFrame | None, keys: list[str]) -> pl.DataFrame:
    cols = keys + ["start_ns", "end_ns", "kernel_id"]
    k = kernels.select([c for c in cols if c in kernels.columns]).with_columns(pl.lit("kernel").alias("what"))
    frames = [k]
    if transfers is not None and transfers.height:
        t = transfers.select([c for c in keys + ["start_ns", "end_ns"] if c in transfers.columns]).with_columns(
            pl.lit(None, dtype=pl.Int64).alias("kernel_id"), pl.lit("transfer").alias("what")
        )
        frames.append(t.select(k.columns))
    b = pl.concat(frames, how="vertical_relaxed")
    return b.filter(pl.col("start_ns").is_not_null() & pl.col("end_ns").is_not_null())


def _per_keys(per: str) -> list[str]:
    keys = _PER.get(per)
    if keys is None:
        raise ValueError(f"per must be one of {sorted(_PER)}, not {per!r}")
    return keys


def idle_gaps(kernels, per: str = "device", *, transfers: pl.DataFrame | None = None, min_gap_ns: float = 0.0) -> pl.DataFrame:
    """Intervals in which a device (or stream, or profile) ran no kernel, between its first and last.

    Busy time is the union of kernel intervals (overlapping kernels on concurrent streams count
    once). Pass `transfers` to count memcpy/memset time as busy too. One row per gap:
    keys, `gap_start_ns`, `gap_end_ns`, `gap_ns`, `next_kernel_id` (the kernel that ends the gap).
    """
    keys = _per_keys(per)
    gaps = _gaps(_busy_intervals(_kernels_of(kernels), transfers, keys), keys)
    if min_gap_ns > 0:
        gaps = gaps.filter(pl.col("gap_ns") >= min_gap_ns)
    return gaps


def _gaps(busy: pl.DataFrame, keys: list[str]) -> pl.DataFrame:
    b = busy.sort(keys + ["start_ns", "end_ns"])
    # Running maximum of the ends seen so far: a start beyond it opens a gap.
    b = b.with_columns(pl.col("end_ns").cum_max().shift(1).over(keys).alias("_busy_until"))
    return b.filter(pl.col("start_ns") > pl.col("_busy_until")).select(
        *keys,
        pl.col("_busy_until").alias("gap_start_ns"),
        pl.col("start_ns").alias("gap_end_ns"),
        (pl.col("start_ns") - pl.col("_busy_until")).cast(pl.Float64).alias("gap_ns"),
        pl.col("kernel_id").alias("next_kernel_id"),
    )


def idle_summary(kernels, per: str = "device", *, transfers: pl.DataFrame | None = None, min_gap_ns: float = 0.0) -> pl.DataFrame:
    """Per device (stream, profile): span from first start to last end, busy (union) time, idle
    time, idle %, gap count, and the largest gap. `idle_ns` sums the gaps of `idle_gaps` (only
    those >= `min_gap_ns`), so `busy_ns + idle_ns == span_ns` when min_gap_ns is 0."""
    keys = _per_keys(per)
    b = _busy_intervals(_kernels_of(kernels), transfers, keys)
    span = b.group_by(keys).agg(
        pl.col("start_ns").min().alias("first_start_ns"),
        pl.col("end_ns").max().alias("last_end_ns"),
        pl.col("kernel_id").count().alias("kernels"),
    ).with_columns((pl.col("last_end_ns") - pl.col("first_start_ns")).cast(pl.Float64).alias("span_ns"))
    all_gaps = _gaps(b, keys)
    g_all = all_gaps.group_by(keys).agg(pl.col("gap_ns").sum().alias("_all_idle"))
    gaps = all_gaps.filter(pl.col("gap_ns") >= min_gap_ns) if min_gap_ns > 0 else all_gaps
    g = gaps.group_by(keys).agg(
        pl.col("gap_ns").sum().alias("idle_ns"),
        pl.len().cast(pl.Int64).alias("gap_count"),
        pl.col("gap_ns").max().alias("max_gap_ns"),
    )
    out = span.join(g, on=keys, how="left", nulls_equal=True).join(g_all, on=keys, how="left", nulls_equal=True)
    out = out.with_columns(
        pl.col("idle_ns").fill_null(0.0),
        pl.col("gap_count").fill_null(0),
        (pl.col("span_ns") - pl.col("_all_idle").fill_null(0.0)).alias("busy_ns"),
    ).with_columns(
        pl.when(pl.col("span_ns") > 0).then(pl.col("idle_ns") * 100.0 / pl.col("span_ns")).otherwise(0.0).alias("idle_pct")
    )
    return out.select(keys + ["kernels", "first_start_ns", "last_end_ns", "span_ns", "busy_ns", "idle_ns", "idle_pct", "gap_count", "max_gap_ns"]).sort(keys, nulls_last=True)


def _group_ids(df: pl.DataFrame, by: Sequence[str], name: str = "_gid") -> tuple[pl.DataFrame, pl.DataFrame]:
    """`df` with an integer id per distinct `by` tuple (nulls are a value), and the id table.

    Sorting, windows and as-of joins on one Int64 are several times faster than on a mix of
    string and integer columns."""
    keys = df.select(by).unique(maintain_order=True).with_row_index(name).with_columns(pl.col(name).cast(pl.Int64))
    return df.join(keys, on=list(by), how="left", nulls_equal=True), keys


def nest_ranges(ranges: pl.DataFrame, by: Sequence[str] = ("profile_id", "process_id", "thread_id")) -> pl.DataFrame:
    """Fill `depth` and `parent_range_id` from time containment within each `by` group.

    Ranges are ordered by start, longer first on ties (so an enclosing range precedes what it
    encloses), then range_id. A range's depth is the number of earlier ranges of its group still
    open when it starts (end > start; a never-closed range, null end, stays open). For properly
    nested ranges (NVTX push/pop, API calls on one thread) that is exactly its nesting level and
    the parent is the last earlier range one level up. Where ranges overlap without nesting the
    parent is kept only if it really encloses the range.
    """
    by = [c for c in by]
    base = ranges.drop([c for c in ("depth", "parent_range_id") if c in ranges.columns])
    if ranges.height == 0 or ranges.select(pl.col("start_ns").is_null().all() & pl.col("end_ns").is_null().all()).item():
        # no range has a recorded time (a damaged marker table): nothing to nest by, depth unknown
        return base.with_columns(pl.lit(None, dtype=pl.Int64).alias("depth"), pl.lit(None, dtype=pl.Int64).alias("parent_range_id"))
    r = base.select(by + ["range_id", "start_ns", "end_ns"]).with_row_index("_row")
    r, _ = _group_ids(r, by)
    # Times as dense ranks: equal instants stay equal, order is kept, and (group, time) packs into
    # one Int64 (groups x ranks <= n x 2n, far below 2^63 for any trace).
    tmax = max(v for v in (r["start_ns"].max(), r["end_ns"].max()) if v is not None)
    # (capped: one more than the largest Int64 time would make the column Int128)
    r = r.with_columns(pl.col("end_ns").fill_null(min(tmax + 1, 2**63 - 1)).alias("_end"))
    both = pl.concat([r["start_ns"], r["_end"]]).rank("dense").cast(pl.Int64)
    r = r.with_columns(both[: r.height].alias("_ts"), both[r.height :].alias("_te"))
    span = int(both.max()) + 2
    r = r.sort(["_gid", "_ts", "_te", "range_id"], descending=[False, False, True, False])
    sizes = r.group_by("_gid").len().with_columns(pl.col("len").cast(pl.Int64)).sort("_gid")
    sizes = sizes.with_columns((pl.col("len").cum_sum() - pl.col("len")).alias("_off"))
    r = r.join(sizes.select("_gid", "_off"), on="_gid", how="left", maintain_order="left").with_columns(
        (pl.int_range(pl.len(), dtype=pl.Int64) - pl.col("_off")).alias("_pos"),
    )
    # Ends at or before each start within the group: every end up to the packed key, minus the
    # ends of the groups before this one.
    ends = (r["_gid"] * span + r["_te"]).sort()
    closed = ends.search_sorted(r["_gid"] * span + r["_ts"], side="right").cast(pl.Int64) - r["_off"]
    r = r.with_columns(closed.clip(lower_bound=0).alias("_closed"))
    # A zero-length range ending exactly at this start sorts after every longer range starting
    # there, so it was counted as closed although it is not earlier; give those back.
    zl = r.filter(pl.col("_te") == pl.col("_ts")).select("_row", "_gid", "_ts", "_pos")
    if zl.height:
        zl = zl.sort("_pos").with_columns(
            pl.len().over(["_gid", "_ts"]).cast(pl.Int64).alias("_zl_here"),
            pl.int_range(pl.len(), dtype=pl.Int64).over(["_gid", "_ts"]).alias("_zl_rank"),
        )
        here = zl.group_by(["_gid", "_ts"]).agg(pl.col("_zl_here").first())
        r = r.join(here, on=["_gid", "_ts"], how="left", maintain_order="left").join(zl.select("_row", "_zl_rank"), on="_row", how="left", maintain_order="left")
        r = r.with_columns((pl.col("_closed") - (pl.col("_zl_here").fill_null(0) - pl.col("_zl_rank").fill_null(0))).alias("_closed"))
    r = r.with_columns((pl.col("_pos") - pl.col("_closed")).clip(lower_bound=0).cast(pl.Int64).alias("depth"))
    # Parent: the last earlier range one level up in the same group.
    right = r.select("_gid", (pl.col("depth") + 1).alias("depth"), pl.col("_pos").alias("_ppos"), pl.col("range_id").alias("_parent"), pl.col("_te").alias("_pte"))
    r = r.sort("_pos").join_asof(
        right.sort("_ppos"), left_on="_pos", right_on="_ppos", by=["_gid", "depth"], strategy="backward", allow_exact_matches=False, check_sortedness=False
    )
    r = r.select(
        "_row",
        "depth",
        pl.when(pl.col("_parent").is_not_null() & (pl.col("_pte") >= pl.col("_te"))).then(pl.col("_parent")).otherwise(None).cast(pl.Int64).alias("parent_range_id"),
    ).sort("_row")
    return base.with_columns(r["depth"], r["parent_range_id"]).sort("range_id")


def attribute_kernels_to_nvtx(
    ps: ProfileSet | None = None,
    *,
    kernels: pl.DataFrame | None = None,
    ranges: pl.DataFrame | None = None,
    range_kinds: Iterable[str] = DEFAULT_ATTRIBUTION_KINDS,
    api_kinds: Iterable[str] = API_KINDS,
) -> pl.DataFrame:
    """Kernels with `nvtx_range` set to the innermost range that encloses their launch.

    The join follows the format: a kernel's correlation id names the API call that launched it
    (within its process: correlation ids are only unique per process), and NVTX ranges live on CPU
    time on the launching thread, so the range must enclose the API call (range.start <= call.start
    and range.end >= call.end, an unclosed range encloses everything after its start) on the same
    process and thread. Kernels whose launch is not recorded, or that no range encloses, keep
    `nvtx_range` null. Adds `nvtx_range_id` (ranges.range_id of that range) and `launch_range_id`.
    """
    k = kernels if kernels is not None else ps.kernels
    r = ranges if ranges is not None else ps.ranges
    k = k.drop([c for c in ("nvtx_range_id", "launch_range_id") if c in k.columns])
    range_kinds, api_kinds = list(range_kinds), list(api_kinds)
    empty = k.with_columns(
        pl.lit(None, dtype=pl.Utf8).alias("nvtx_range"), pl.lit(None, dtype=pl.Int64).alias("nvtx_range_id"), pl.lit(None, dtype=pl.Int64).alias("launch_range_id")
    )
    if k.height == 0 or r.height == 0:
        return empty
    api = r.filter(pl.col("kind").is_in(api_kinds) & pl.col("correlation_id").is_not_null()).select(
        "profile_id", "process_id", "thread_id", "correlation_id",
        pl.col("range_id").alias("launch_range_id"), pl.col("start_ns").alias("_ls"), pl.col("end_ns").alias("_le"), "kind",
    )
    nvtx = r.filter(pl.col("kind").is_in(range_kinds))
    if api.height == 0 or nvtx.height == 0:
        return empty
    # Nest the attribution ranges among themselves: a parent of another kind (a framework op
    # between two annotations) must not stop the walk up the stack.
    nvtx = nest_ranges(nvtx, by=("profile_id", "process_id", "thread_id"))
    # One call per correlation id; if both a runtime and a driver row carry it, the runtime call is
    # the one the user wrote.
    api = api.sort(["kind", "launch_range_id"], descending=[True, False]).unique(["profile_id", "process_id", "correlation_id"], keep="first").drop("kind")
    kk = k.with_row_index("_row")
    sel = ["_row", "launch_range_id", "_ls", "_le", "profile_id", pl.col("process_id").alias("_lpid"), pl.col("thread_id").alias("_ltid")]
    with_pid = kk.filter(pl.col("process_id").is_not_null()).join(api, on=["profile_id", "process_id", "correlation_id"], how="inner").select(sel)
    # Tools that give GPU rows no host pid (Kineto) have correlation ids unique per trace.
    api_any = api.unique(["profile_id", "correlation_id"], keep="first")
    no_pid = kk.filter(pl.col("process_id").is_null()).drop("process_id").join(api_any, on=["profile_id", "correlation_id"], how="inner").select(sel)
    launches = pl.concat([with_pid, no_pid], how="vertical_relaxed").filter(pl.col("_ls").is_not_null())
    if launches.height == 0:
        return _attach(kk, None, k)
    # Every NVTX range gets a dense uid (its row here); parents are translated to uids once, so
    # walking up the stack is array gathers, not joins.
    nv = nvtx.select(
        "profile_id",
        pl.col("process_id").fill_null(-1).alias("_lpid"),
        pl.col("thread_id").fill_null(-1).alias("_ltid"),
        "range_id", "parent_range_id", "start_ns", pl.col("end_ns").fill_null(_I64_MAX).alias("_end"), "name",
    ).with_row_index("_uid").with_columns(pl.col("_uid").cast(pl.Int64))
    parents = nv.select("profile_id", pl.col("range_id").alias("parent_range_id"), pl.col("_uid").alias("_puid"))
    nv = nv.join(parents, on=["profile_id", "parent_range_id"], how="left", maintain_order="left")
    nv, keys = _group_ids(nv, ["profile_id", "_lpid", "_ltid"])
    launches = launches.with_columns(pl.col("_lpid").fill_null(-1), pl.col("_ltid").fill_null(-1), pl.col("_le").fill_null(pl.col("_ls")))
    launches = launches.join(keys, on=["profile_id", "_lpid", "_ltid"], how="left", maintain_order="left").filter(pl.col("_gid").is_not_null())
    # The last range of the launching thread that starts at or before the call: (thread, time)
    # packed into one Int64 over dense time ranks, then one binary search.
    t = pl.concat([nv["start_ns"], launches["_ls"]]).rank("dense").cast(pl.Int64)
    span = int(t.max()) + 2
    nv_key = nv["_gid"] * span + t[: nv.height]
    order = nv_key.arg_sort()
    sorted_keys = nv_key.gather(order)
    pos = sorted_keys.search_sorted(launches["_gid"] * span + t[nv.height :], side="right").cast(pl.Int64) - 1
    hit = pos >= 0
    cand_uid = order.cast(pl.Int64).gather(pos.clip(lower_bound=0))
    same_thread = nv["_gid"].gather(cand_uid) == launches["_gid"]
    cand = pl.when(pl.lit(hit) & pl.lit(same_thread)).then(pl.lit(cand_uid)).otherwise(None)
    cur = launches.select("_row", "launch_range_id", "_le").with_columns(cand.alias("_cand"))
    ends, pu, names = nv["_end"], nv["_puid"], nv["name"]
    done: list[pl.DataFrame] = []
    max_depth = nvtx["depth"].max() if "depth" in nvtx.columns and nvtx["depth"].null_count() < nvtx.height else None
    # Walk up the parent chain until the candidate encloses the whole call (bounded by stack depth).
    for _ in range(int(max_depth) + 2 if max_depth is not None else 10_000):
        c = cur["_cand"]
        safe = c.fill_null(0)
        cend = ends.gather(safe)
        ok = c.is_null() | (cend >= cur["_le"])
        fin = cur.filter(ok).with_columns(
            pl.col("_cand").alias("_nv_uid"),
        )
        done.append(fin.select("_row", "launch_range_id", "_nv_uid"))
        nxt = pu.gather(safe)
        cur = cur.with_columns(nxt.alias("_cand")).filter(~ok)
        if cur.height == 0:
            break
    if cur.height:
        done.append(cur.select("_row", "launch_range_id", pl.lit(None, dtype=pl.Int64).alias("_nv_uid")))
    res = pl.concat(done, how="vertical_relaxed")
    u = res["_nv_uid"]
    res = res.with_columns(
        pl.when(u.is_not_null()).then(pl.lit(names.gather(u.fill_null(0)))).otherwise(None).alias("nvtx_range"),
        pl.when(u.is_not_null()).then(pl.lit(nv["range_id"].gather(u.fill_null(0)))).otherwise(None).cast(pl.Int64).alias("nvtx_range_id"),
    ).drop("_nv_uid")
    return _attach(kk, res, k)


def _attach(kk: pl.DataFrame, res: pl.DataFrame | None, k: pl.DataFrame) -> pl.DataFrame:
    out = kk.drop("nvtx_range", strict=False)
    if res is not None and res.height:
        out = out.join(res, on="_row", how="left")
    else:
        out = out.with_columns(pl.lit(None, dtype=pl.Int64).alias("launch_range_id"), pl.lit(None, dtype=pl.Int64).alias("nvtx_range_id"), pl.lit(None, dtype=pl.Utf8).alias("nvtx_range"))
    cols = list(k.columns) + ([] if "nvtx_range" in k.columns else ["nvtx_range"])
    return out.sort("_row").select(cols + ["nvtx_range_id", "launch_range_id"])


__all__ = [
    "kernel_summary",
    "kernel_summary_from_samples",
    "idle_gaps",
    "idle_summary",
    "nest_ranges",
    "attribute_kernels_to_nvtx",
]
