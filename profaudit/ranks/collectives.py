"""Collectives across ranks: one row per communication kernel with its launching op's arguments,
nccl-tests bandwidths, the same call matched on every rank, and the clock alignment built on it.

A kernel gets its arguments from its own args (Kineto >= PyTorch 2.3) or from the
`record_param_comms` op around the host call that launched it (the launch is found through the
correlation id, the op as the innermost enclosing `record_param_comms` on the same thread). The
same call on every rank is the n-th call of the rank on that process group (name and member
ranks) within the step its launch was issued in, counted in start order: c10d issues a group's
collectives in the same order on every member, and counting within steps keeps ranks whose
captures begin or end at different calls matched.
"""

from __future__ import annotations

import os
from concurrent.futures import Executor

import polars as pl

from profaudit import schema
from profaudit.profile import ProfileSet
from profaudit.ranks.activity import launch_steps
from profaudit.ranks.kinds import COMM_KERNEL_RE, SYNCHRONISING, algorithm_protocol, busbw_factor, collective_kind, msg_bytes

_ARG_COLS = ("collective_name", "in_msg_nelems", "out_msg_nelems", "dtype", "group_size", "process_group", "group_ranks")
# the same call on every rank: its process group, the step it was launched in, its position there
_CALL_KEY = ["process_group", "group_ranks", "step", "call_index"]


def _comm_args_worker(item: tuple[str, str]) -> pl.DataFrame:
    from profaudit.parsers.kineto_comms import read_comm_args

    pid, path = item
    return read_comm_args(path).with_columns(pl.lit(pid).alias("profile_id"))


def read_run_comm_args(ps: ProfileSet, executor: Executor | None = None) -> pl.DataFrame:
    """The collective arguments of every Kineto trace of the run, with their `profile_id`."""
    from profaudit.parsers import kineto_comms

    md = ps.metadata
    items = [(r["profile_id"], r["path"]) for r in md.select("profile_id", "path", "format").iter_rows(named=True)
             if r["format"] == "chrome-trace" and r["path"] and os.path.isfile(r["path"])]
    empty = pl.DataFrame(schema={**kineto_comms.SCHEMA, "profile_id": pl.Utf8})
    if not items:
        return empty
    if executor is None and len(items) >= 4 and sum(os.path.getsize(p) for _, p in items) >= (64 << 20) and (os.cpu_count() or 1) > 1:
        from profaudit.loader import _workers_can_start

        if _workers_can_start():
            import multiprocessing as mp
            from concurrent.futures import ProcessPoolExecutor

            with ProcessPoolExecutor(max_workers=min(len(items), os.cpu_count() or 1), mp_context=mp.get_context("spawn")) as pool:
                frames = list(pool.map(_comm_args_worker, items))
            return pl.concat([empty, *frames], how="vertical_relaxed")
    frames = list(executor.map(_comm_args_worker, items)) if executor is not None else [_comm_args_worker(i) for i in items]
    return pl.concat([empty, *frames], how="vertical_relaxed")


def _op_args(run, k: pl.DataFrame, args: pl.DataFrame) -> pl.DataFrame:
    """Arguments of the `record_param_comms` op enclosing each kernel's launch call."""
    ops = args.filter(pl.col("event") == "op")
    if ops.height == 0 or k.height == 0:
        return pl.DataFrame(schema={"profile_id": pl.Utf8, "kernel_id": pl.Int64, **{c: ops.schema[c] for c in _ARG_COLS}})
    r = run.rank_rows("ranges")
    launches = r.filter(pl.col("kind").is_in(["cuda_runtime", "cuda_driver"]) & pl.col("correlation_id").is_not_null()).select(
        "profile_id", "correlation_id", "process_id", "thread_id", pl.col("start_ns").alias("t"))
    launches = launches.unique(["profile_id", "correlation_id"], keep="first")
    rpc = r.filter(pl.col("name") == "record_param_comms").select(
        "profile_id", "process_id", "thread_id", "external_id", pl.col("start_ns").alias("t"), pl.col("end_ns").alias("op_end"))
    rpc = rpc.join(ops.unique(["profile_id", "external_id"], keep="first").select("profile_id", "external_id", *_ARG_COLS),
                   on=["profile_id", "external_id"], how="inner")
    kl = k.select("profile_id", "kernel_id", "correlation_id").join(launches, on=["profile_id", "correlation_id"], how="inner")
    m = kl.sort("t").join_asof(rpc.sort("t"), on="t", by=["profile_id", "process_id", "thread_id"], strategy="backward", check_sortedness=False)
    # only an op still open when the launch happened encloses it
    m = m.filter(pl.col("op_end").is_not_null() & (pl.col("op_end") >= pl.col("t")))
    return m.select("profile_id", "kernel_id", *_ARG_COLS)


def collective_rows(run) -> pl.DataFrame:
    """Communication kernels per rank with arguments and bandwidths, on each rank's own clock."""
    k = run.rank_rows("kernels").filter(pl.col("name").fill_null("").str.contains(COMM_KERNEL_RE))
    args = run.comm_args
    kernel_args = args.filter((pl.col("event") == "kernel") & pl.col("correlation_id").is_not_null()).unique(
        ["profile_id", "correlation_id"], keep="first").select("profile_id", "correlation_id", *[pl.col(c).alias(f"_k_{c}") for c in _ARG_COLS])
    op_args = _op_args(run, k, args).select("profile_id", "kernel_id", *[pl.col(c).alias(f"_o_{c}") for c in _ARG_COLS])
    k = k.join(kernel_args, on=["profile_id", "correlation_id"], how="left").join(op_args, on=["profile_id", "kernel_id"], how="left")
    k = k.with_columns(
        *[pl.coalesce(pl.col(f"_k_{c}"), pl.col(f"_o_{c}")).alias(c) for c in _ARG_COLS],
        pl.when(pl.col("_k_collective_name").is_not_null() | pl.col("_k_in_msg_nelems").is_not_null()).then(pl.lit("kernel"))
        .when(pl.col("_o_collective_name").is_not_null() | pl.col("_o_in_msg_nelems").is_not_null()).then(pl.lit("cpu_op"))
        .otherwise(pl.lit("none")).alias("args_source"),
    )
    world = run._identity.select("rank", pl.col("world_size").alias("_world"))
    k = k.join(world, on="rank", how="left")
    algo, proto = algorithm_protocol(pl.col("name"))
    # what the launching op said, else the `nccl:<collective>` annotation c10d wraps the launch in
    # (older traces record no arguments), else the kernel's own name (an all-to-all runs as SendRecv)
    annotation = pl.when(pl.col("nvtx_range").str.starts_with("nccl:")).then(pl.col("nvtx_range"))
    kind = pl.coalesce(collective_kind(pl.col("collective_name")).replace("unknown", None),
                       collective_kind(annotation).replace("unknown", None), collective_kind(pl.col("name")))
    k = k.with_columns(
        kind.alias("collective"), algo.alias("algorithm"), proto.alias("protocol"),
        pl.coalesce(pl.col("group_size"), pl.col("_world")).alias("group_size"),
        pl.coalesce(pl.col("short_name"), pl.col("name")).alias("kernel_name"),
        pl.coalesce(pl.col("duration_ns"), (pl.col("end_ns") - pl.col("start_ns")).cast(pl.Float64)).alias("duration_ns"),
    )
    k = k.with_columns(msg_bytes(pl.col("collective"), pl.col("in_msg_nelems"), pl.col("out_msg_nelems"), pl.col("dtype")).alias("msg_bytes"),
                       busbw_factor(pl.col("collective"), pl.col("group_size")).alias("busbw_factor"))
    k = k.with_columns(pl.when(pl.col("duration_ns") > 0).then(pl.col("msg_bytes") / (pl.col("duration_ns") * 1e-9)).alias("algbw_bytes_per_s"))
    k = k.with_columns((pl.col("algbw_bytes_per_s") * pl.col("busbw_factor")).alias("busbw_bytes_per_s"))
    # a call's step is the one its launch was issued in (the GPU may run it after the host moved on,
    # by a lag that differs between ranks); without a recorded launch, the step it started in
    k = launch_steps(run, k, run.host_steps)
    # the table's own columns only from here: the sort copies every column it carries (the kernel
    # table's ~55 and the arguments': a 200 MB trace's 2 M communication kernels peaked 2.2 GB)
    k = k.select([c for c in schema.COLLECTIVES.names if c in k.columns])
    # counted within the step: ranks whose captures start or end at different calls still match.
    # A window keeps the rows where they are, so one sort serves both the count and the table
    k = k.sort("rank", "start_ns", "kernel_id").with_columns(
        (pl.int_range(pl.len()).over("rank", "process_group", "group_ranks", "step")).cast(pl.Int64).alias("call_index"))
    return k.select([c for c in schema.COLLECTIVES.names if c in k.columns])


def align_clocks(ident: pl.DataFrame, coll: pl.DataFrame, method: str, n_profiles: int) -> pl.DataFrame:
    """Per rank: `clock_offset_ns` (own clock - reference clock), `clock_offset_error_ns`, `clock_method`.

    The reference is the lowest rank. `collective_end`: the offset of a rank is the median, over the
    synchronising collectives (all-reduce, all-gather, reduce-scatter, all-to-all, barrier) it
    shares with an already aligned rank, of the difference of their end times (every member leaves
    such a collective at the same moment); its error is the largest deviation from that median.
    With the recorded clocks (`trace_clock`, or `shared_clock` when all ranks come from one capture
    or one host) the error is the largest end difference itself: how far the clocks disagree."""
    ranks = ident["rank"].to_list()
    hosts = ident["host"].to_list()
    shared = n_profiles == 1 or (all(h is not None for h in hosts) and len(set(hosts)) == 1)
    ends = coll.filter(pl.col("collective").is_in(list(SYNCHRONISING)) & pl.col("end_ns").is_not_null()).select("rank", *_CALL_KEY, "end_ns")
    # each call's anchor: its lowest rank, against which the others' ends are measured
    anchor = ends.with_columns(pl.col("rank").min().over(_CALL_KEY).alias("anchor"), pl.len().over(_CALL_KEY).alias("_n"))
    anchored = anchor.filter(pl.col("_n") > 1)
    anchor_end = anchored.filter(pl.col("rank") == pl.col("anchor")).select(*_CALL_KEY, pl.col("end_ns").alias("_aend"))
    d = anchored.filter(pl.col("rank") != pl.col("anchor")).join(anchor_end, on=_CALL_KEY, how="inner", nulls_equal=True).with_columns(
        (pl.col("end_ns") - pl.col("_aend")).alias("d"))
    pairs = d.group_by("rank", "anchor").agg(pl.col("d").median().alias("med"), pl.col("d").alias("ds"), pl.len().alias("n"))
    if method == "auto":
        method = "shared_clock" if shared else ("collective_end" if pairs.height else "trace_clock")
    offsets: dict[int, int] = {}
    errors: dict[int, float | None] = {}
    methods: dict[int, str] = {}
    if method == "collective_end" and pairs.height:
        prs = sorted(pairs.iter_rows(named=True), key=lambda p: (p["anchor"], -p["n"]))
        for r in sorted(ranks):
            if r in offsets:
                continue
            # the reference of its component: the global reference, or a rank sharing no synchronising
            # collective with it (pipeline stages), whose recorded clock is kept as it is
            offsets[r], errors[r], methods[r] = 0, None, "collective_end" if r == min(ranks) else "trace_clock"
            changed = True
            while changed:
                changed = False
                for p in prs:
                    if p["anchor"] in offsets and p["rank"] not in offsets:
                        med = int(round(p["med"]))
                        offsets[p["rank"]] = offsets[p["anchor"]] + med
                        worst = float(max(abs(x - med) for x in p["ds"]))
                        errors[p["rank"]] = worst + (errors[p["anchor"]] or 0.0)
                        methods[p["rank"]] = "collective_end"
                        changed = True
        ref = min(ranks)
        errors[ref] = 0.0
    else:
        label = "shared_clock" if method == "shared_clock" else "trace_clock"
        worst = {p["rank"]: float(max(abs(x) for x in p["ds"])) for p in pairs.iter_rows(named=True)}
        for r in ranks:
            # the reference rank has no error by definition; the others as far as collectives show
            offsets[r], methods[r], errors[r] = 0, label, 0.0 if r == min(ranks) else worst.get(r)
    return pl.DataFrame({"rank": ranks, "clock_offset_ns": [offsets[r] for r in ranks],
                         "clock_offset_error_ns": [errors.get(r) for r in ranks], "clock_method": [methods[r] for r in ranks]},
                        schema={"rank": pl.Int64, "clock_offset_ns": pl.Int64, "clock_offset_error_ns": pl.Float64, "clock_method": pl.Utf8})


def aligned_collectives(run) -> pl.DataFrame:
    off = run.ranks.select("rank", "clock_offset_ns")
    k = run._raw_collectives.join(off, on="rank", how="left").with_columns(
        (pl.col("start_ns") - pl.col("clock_offset_ns")).alias("start_ns"), (pl.col("end_ns") - pl.col("clock_offset_ns")).alias("end_ns"))
    return schema.conform(schema.COLLECTIVES, k.select([c for c in schema.COLLECTIVES.names if c in k.columns]))


def match_calls(coll: pl.DataFrame) -> pl.DataFrame:
    """One row per call matched across ranks (aligned clock): who arrived last, the wait it caused,
    and the bandwidth once every rank had arrived."""
    if coll.height == 0:
        return schema.CALLS.empty()
    g = coll.group_by(_CALL_KEY, maintain_order=True).agg(
        pl.col("collective").mode().sort().first().alias("collective"),
        ((pl.col("collective").n_unique() == 1) & (pl.col("msg_bytes").n_unique() <= 1)).alias("consistent"),
        pl.len().cast(pl.Int64).alias("ranks"),
        pl.col("group_size").max().alias("group_size"),
        pl.col("msg_bytes").median().alias("msg_bytes"),
        pl.col("rank").sort_by("start_ns").first().alias("first_rank"),
        pl.col("rank").sort_by("start_ns").last().alias("last_rank"),
        (pl.col("start_ns").max() - pl.col("start_ns").min()).alias("arrival_spread_ns"),
        (pl.col("start_ns").max() * pl.len() - pl.col("start_ns").sum()).cast(pl.Int64).alias("wait_total_ns"),
        (pl.col("end_ns").max() - pl.col("end_ns").min()).alias("end_spread_ns"),
        (pl.col("end_ns").min() - pl.col("start_ns").max()).cast(pl.Float64).alias("sync_duration_ns"),
        pl.col("start_ns").min().alias("start_ns"),
    )
    g = g.with_columns(pl.when(pl.col("sync_duration_ns") > 0).then(pl.col("msg_bytes") / (pl.col("sync_duration_ns") * 1e-9)).alias("sync_algbw_bytes_per_s"))
    g = g.with_columns((pl.col("sync_algbw_bytes_per_s") * busbw_factor(pl.col("collective"), pl.col("group_size"))).alias("sync_busbw_bytes_per_s"))
    return schema.conform(schema.CALLS, g.sort("start_ns").select(schema.CALLS.names))


def by_size(calls: pl.DataFrame) -> pl.DataFrame:
    """Matched calls per collective kind, message size and group size (an nccl-tests table's rows)."""
    g = calls.group_by("collective", "msg_bytes", "group_size").agg(
        pl.len().cast(pl.Int64).alias("calls"),
        pl.col("sync_duration_ns").median().alias("median_sync_duration_ns"),
        pl.col("sync_algbw_bytes_per_s").median().alias("median_sync_algbw_bytes_per_s"),
        pl.col("sync_busbw_bytes_per_s").median().alias("median_sync_busbw_bytes_per_s"),
        pl.col("wait_total_ns").sum().cast(pl.Int64).alias("total_wait_ns"),
    ).sort("collective", "msg_bytes", "group_size", nulls_last=True)
    return schema.conform(schema.COLLECTIVE_SIZES, g.select(schema.COLLECTIVE_SIZES.names))
