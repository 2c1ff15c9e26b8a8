"""Two distributed runs side by side: steps matched by number (the job's step time, not one rank's),
collectives matched by kind and message size (the n-th call of a process group need not be the
same call in another implementation; kind and size are what it moves).

The hook `profaudit.compare` can call for a pair of multi-rank runs; the CLI's
`profaudit ranks BASE --against CAND` prints it."""

from __future__ import annotations

import polars as pl

from profaudit import schema
from profaudit.ranks.collectives import by_size


def compare_steps(baseline, candidate) -> pl.DataFrame:
    cols = ["step", "job_step_ns", "max_exposed_communication_ns", "skew_ns"]
    a = baseline.step_skew.select(cols).rename({c: f"baseline_{c}" for c in cols[1:]})
    b = candidate.step_skew.select(cols).rename({c: f"candidate_{c}" for c in cols[1:]})
    j = a.join(b, on="step", how="inner").with_columns(
        (pl.col("candidate_job_step_ns") - pl.col("baseline_job_step_ns")).alias("job_step_diff_ns")).sort("step")
    return schema.conform(schema.RUN_COMPARE_STEPS, j.select(schema.RUN_COMPARE_STEPS.names))


def compare_collectives(baseline, candidate) -> pl.DataFrame:
    def side(run, name: str) -> pl.DataFrame:
        s = by_size(run.calls).group_by("collective", "msg_bytes").agg(
            pl.col("calls").sum(),
            # the median over matched calls of each size; sizes split only by group size are pooled
            pl.col("median_sync_duration_ns").median(), pl.col("median_sync_busbw_bytes_per_s").median(), pl.col("total_wait_ns").sum())
        return s.rename({"calls": f"{name}_calls", "median_sync_duration_ns": f"{name}_median_sync_duration_ns",
                         "median_sync_busbw_bytes_per_s": f"{name}_median_sync_busbw_bytes_per_s", "total_wait_ns": f"{name}_total_wait_ns"})

    j = side(baseline, "baseline").join(side(candidate, "candidate"), on=["collective", "msg_bytes"], how="full", coalesce=True, nulls_equal=True)
    j = j.with_columns((pl.col("candidate_median_sync_duration_ns") / pl.col("baseline_median_sync_duration_ns")).alias("sync_duration_ratio"))
    j = j.sort("collective", "msg_bytes", nulls_last=True)
    return schema.conform(schema.RUN_COMPARE_COLLECTIVES, j.select(schema.RUN_COMPARE_COLLECTIVES.names))


def compare_runs(baseline, candidate) -> dict[str, pl.DataFrame]:
    """`{"steps": ..., "collectives": ...}` for two `DistributedRun`s."""
    return {"steps": compare_steps(baseline, candidate), "collectives": compare_collectives(baseline, candidate)}
