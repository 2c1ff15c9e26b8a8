"""A distributed run: the profiles of many ranks loaded as one ProfileSet, each rank identified
(rank, world size, host, node, local rank) and its clock aligned to the others.

Inputs: a folder (or glob, or list) of PyTorch profiler traces, one per rank, the rank taken from
the trace's `distributedInfo` or from `rank-N`/`rank_N`/`rankN` in the file name; or one capture
(an Nsight Systems export) holding several GPUs, each GPU one rank in device order.
"""

from __future__ import annotations

import os
import re
from concurrent.futures import Executor
from functools import cached_property
from typing import Sequence

import polars as pl

from profaudit import schema
from profaudit.errors import InputError, UsageError
from profaudit.profile import ProfileSet

_RANK_IN_NAME = re.compile(r"(?i)(?:^|[^a-z])rank[-_]?(\d+)(?!\d)")
ALIGN_METHODS = ("auto", "trace_clock", "collective_end")
STEP_BASES = ("host", "gpu")


def _rank_from_name(path: str | None) -> int | None:
    if not path:
        return None
    m = _RANK_IN_NAME.search(os.path.basename(path))
    return int(m.group(1)) if m else None


def identify_ranks(ps: ProfileSet) -> pl.DataFrame:
    """One row per rank (before clock alignment): which profile (and, in a multi-GPU capture, which
    device) it is, and how its rank number was found."""
    md = ps.metadata
    # the GPUs of every profile in one pass (a filter per profile would rescan all kernels each time)
    by_profile = (ps.kernels.filter(pl.col("device_id").is_not_null()).group_by("profile_id", "device_id")
                  .agg(pl.len().alias("n"), pl.col("process_id").mode().first().alias("pid"), pl.col("device_name").drop_nulls().first().alias("dn"))
                  .sort("profile_id", "device_id").partition_by("profile_id", as_dict=True))
    no_devices = pl.DataFrame(schema={"profile_id": pl.Utf8, "device_id": pl.Int64, "n": pl.UInt32, "pid": pl.Int64, "dn": pl.Utf8})
    rows: list[dict] = []
    for p in ps:
        if not (p.tables["kernels"].height or p.tables["transfers"].height):
            continue  # a timing log or CPU-only trace beside the ranks is not a rank
        extra = p.extra
        devices = by_profile.get((p.profile_id,), no_devices)
        rank = extra.get("rank")
        source = "distributed_info" if isinstance(rank, int) else None
        if source is None and (r := _rank_from_name(p.metadata.get("path"))) is not None:
            rank, source = r, "file_name"
        base = {"profile_id": p.profile_id, "host": p.metadata.get("host"), "world_size": extra.get("world_size")}
        if source is None and devices.height > 1:
            # one capture of several GPUs (nsys of a multi-process or multi-GPU job): a rank per GPU
            for d in devices.iter_rows(named=True):
                rows.append({**base, "rank": None, "rank_source": "device_order", "device_id": d["device_id"],
                             "process_id": d["pid"], "device_name": d["dn"], "_per_device": True})
            continue
        dev = devices.sort("n", descending=True).row(0, named=True) if devices.height else {"device_id": None, "dn": p.metadata.get("device_name")}
        rows.append({**base, "rank": rank, "rank_source": source or "process_order", "device_id": dev["device_id"],
                     "process_id": None, "device_name": dev["dn"] or p.metadata.get("device_name"), "_per_device": False})
    if not rows:
        raise InputError(", ".join(md["path"].drop_nulls().to_list()[:3]) or "run",
                         "no GPU kernels or copies in these inputs: a distributed run is one trace per rank or a multi-GPU capture")
    df = pl.DataFrame(rows, schema_overrides={"rank": pl.Int64, "world_size": pl.Int64, "device_id": pl.Int64, "process_id": pl.Int64},
                      infer_schema_length=None)
    # ranks without a recorded number: numbered after the known ones, in path / device order
    known = df["rank"].drop_nulls()
    if known.n_unique() != known.len():
        dup = known.filter(known.is_duplicated()).unique().sort().to_list()
        paths = md.filter(pl.col("profile_id").is_in(df.filter(pl.col("rank").is_in(dup))["profile_id"].to_list()))["path"].to_list()
        raise InputError(paths[0] if paths else "run", f"rank {dup[0]} appears in more than one trace ({', '.join(map(str, paths[:3]))})")
    start = int(known.max()) + 1 if known.len() else 0
    df = df.join(md.select("profile_id", "path"), on="profile_id", how="left")
    missing = df.filter(pl.col("rank").is_null()).sort("path", "device_id").with_row_index("_i")
    df = df.join(missing.select("profile_id", "device_id", "_i"), on=["profile_id", "device_id"], how="left", nulls_equal=True)
    df = df.with_columns(pl.coalesce(pl.col("rank"), pl.col("_i").cast(pl.Int64) + start).alias("rank")).drop("_i")
    n = df.height
    df = df.with_columns(pl.col("world_size").fill_null(pl.col("world_size").max()).fill_null(n))
    # nodes numbered in order of their lowest rank, local rank = order within the node; the GPUs of
    # one capture share its node even when it does not name the host; unknown hosts stay unknown
    df = df.sort("rank").with_columns(
        pl.coalesce(pl.col("host"), pl.when(pl.col("_per_device")).then(pl.col("profile_id"))).alias("_node"))
    first = (df.filter(pl.col("_node").is_not_null()).group_by("_node").agg(pl.col("rank").min().alias("_first"))
             .sort("_first").with_row_index("node"))
    df = df.join(first.select("_node", pl.col("node").cast(pl.Int64)), on="_node", how="left")
    df = df.with_columns(pl.when(pl.col("_node").is_not_null())
                         .then((pl.col("rank").rank("ordinal").over("_node") - 1).cast(pl.Int64)).alias("local_rank")).drop("_node")
    return df.sort("rank")


class DistributedRun:
    """The ranks of one distributed job and the analyses across them.

    `profiles` is the ProfileSet; `ranks`, `collectives`, `calls`, `step_breakdown`, `step_skew` and
    `stragglers` are polars frames declared in `profaudit.schema` (computed on first use).
    `align` chooses the clock alignment: `auto` (one capture or one host: the recorded clock, which
    is shared; several hosts: the ends of matched collectives), `trace_clock` or `collective_end`.
    `step_basis` chooses the breakdown's step windows: `host` (the step ranges as recorded, HTA's
    and the profiler's view) or `gpu` (the span of the GPU work launched in each step).
    """

    def __init__(self, profiles: ProfileSet, *, align: str = "auto", step_pattern: str | None = None, step_basis: str = "host",
                 comm_args: pl.DataFrame | None = None):
        if align not in ALIGN_METHODS:
            raise UsageError(f"align must be one of {', '.join(ALIGN_METHODS)}, not {align!r}")
        if step_basis not in STEP_BASES:
            raise UsageError(f"step basis must be one of {', '.join(STEP_BASES)}, not {step_basis!r}")
        self.step_basis = step_basis
        self.profiles = profiles
        self.align = align
        self.step_pattern = step_pattern
        self._comm_args = comm_args
        self._rank_rows: dict[str, pl.DataFrame] = {}

    def __len__(self) -> int:
        return self.ranks.height

    def __repr__(self) -> str:
        return f"DistributedRun({self.ranks.height} ranks, {self.collectives.height} collective kernels)"

    # -- building blocks -------------------------------------------------------------------
    @cached_property
    def _identity(self) -> pl.DataFrame:
        return identify_ranks(self.profiles)

    @cached_property
    def comm_args(self) -> pl.DataFrame:
        if self._comm_args is None:
            from profaudit.ranks.collectives import read_run_comm_args

            self._comm_args = read_run_comm_args(self.profiles)
        return self._comm_args

    def rank_rows(self, table: str) -> pl.DataFrame:
        """A table's rows with the rank they belong to (`rank` column added), raw clock. Built once
        per table: the collectives, the step windows and the breakdown each ask for the kernels
        and the ranges, and each build stacks every profile's rows and joins the ranks again."""
        cached = self._rank_rows.get(table)
        if cached is None:
            from profaudit.ranks.activity import with_rank

            cached = self._rank_rows[table] = with_rank(self.profiles.table(table), self._identity, table)
        return cached

    @cached_property
    def _raw_collectives(self) -> pl.DataFrame:
        from profaudit.ranks.collectives import collective_rows

        return collective_rows(self)

    @cached_property
    def _alignment(self) -> pl.DataFrame:
        from profaudit.ranks.collectives import align_clocks

        return align_clocks(self._identity, self._raw_collectives, self.align, len(self.profiles))

    @cached_property
    def host_steps(self) -> pl.DataFrame:
        """The step ranges as recorded on the host, per rank (raw clock): rank, step, step_name, ws, we."""
        from profaudit.ranks.activity import step_windows

        return step_windows(self, self.step_pattern)

    @cached_property
    def steps(self) -> pl.DataFrame:
        """The windows the breakdown uses (raw clock): the host's step ranges, or with
        `step_basis="gpu"` the span of the GPU work launched in each (see `activity.gpu_step_windows`)."""
        if self.step_basis == "gpu":
            from profaudit.ranks.activity import gpu_step_windows

            return gpu_step_windows(self, self.host_steps)
        return self.host_steps

    # -- the declared tables ----------------------------------------------------------------
    @cached_property
    def ranks(self) -> pl.DataFrame:
        ident = self._identity.join(self._alignment, on="rank", how="left")
        counts = self.rank_rows("kernels").group_by("rank").agg(pl.len().cast(pl.Int64).alias("kernel_count"))
        coll = self._raw_collectives.group_by("rank").agg(pl.len().cast(pl.Int64).alias("collective_count"))
        steps = self.steps.group_by("rank").agg(pl.len().cast(pl.Int64).alias("step_count"))
        out = ident
        for extra in (counts, coll, steps):
            out = out.join(extra, on="rank", how="left")
        out = out.with_columns(pl.col("kernel_count", "collective_count", "step_count").fill_null(0))
        return schema.conform(schema.RANKS, out.select([c for c in schema.RANKS.names if c in out.columns]))

    def offsets(self) -> pl.DataFrame:
        return self.ranks.select("rank", "clock_offset_ns")

    @cached_property
    def collectives(self) -> pl.DataFrame:
        from profaudit.ranks.collectives import aligned_collectives

        return aligned_collectives(self)

    @cached_property
    def calls(self) -> pl.DataFrame:
        from profaudit.ranks.collectives import match_calls

        return match_calls(self.collectives)

    @cached_property
    def step_breakdown(self) -> pl.DataFrame:
        from profaudit.ranks.activity import temporal_breakdown

        return temporal_breakdown(self)

    @cached_property
    def step_skew(self) -> pl.DataFrame:
        from profaudit.ranks.stragglers import step_skew

        return step_skew(self.step_breakdown)

    @cached_property
    def stragglers(self) -> pl.DataFrame:
        from profaudit.ranks.stragglers import rank_stragglers

        return rank_stragglers(self.calls, self.ranks)

    def summary(self) -> pl.DataFrame:
        """Per rank: identity, clock, whole-trace breakdown and straggler counts (the `ranks` command)."""
        from profaudit.ranks.stragglers import rank_summary

        return rank_summary(self)


def load_run(paths: str | os.PathLike | Sequence[str | os.PathLike], *, align: str = "auto", step_pattern: str | None = None,
             step_basis: str = "host", parallel: bool | None = None, progress=None, executor: Executor | None = None,
             **load_kw) -> DistributedRun:
    """Load the ranks of a distributed run (folders, globs or files) as one `DistributedRun`.

    Traces are parsed with `profaudit.load` (in worker processes when there are many, or as tasks
    of `executor`: a process pool, a Dask cluster's `Client.get_executor()`); the collective
    arguments of Kineto traces are read in a second, cheap pass (`profaudit.parsers.kineto_comms`),
    through the same executor. Remote (fsspec) inputs get no second pass: their collectives carry
    no message sizes.
    """
    from profaudit.loader import load
    from profaudit.ranks.collectives import read_run_comm_args

    ps = load(paths, parallel=parallel, progress=progress, executor=executor, **load_kw)
    args = read_run_comm_args(ps, executor=executor)
    return DistributedRun(ps, align=align, step_pattern=step_pattern, step_basis=step_basis, comm_args=args)
