"""Timing-log comparison: benchmark case by benchmark case (benchmark name x parameters).

A case's time is the median of its raw samples (warm-up rows dropped, the most direct time source
kept per case through `profaudit.samples.preferred`); a case with summaries only uses its reported
median, else its reported mean, and gets an interval only where a standard deviation and a count
are reported too. Benchmark names are matched with the kernel matcher's name levels (spelling,
generated-name families, fuzzy as the mode allows) and cases then pair on identical canonical
parameters. Several profiles on a side (repeated runs) pool their samples per case; the run
index widens the interval through the audit's run-to-run factor.
"""

from __future__ import annotations

import math

import numpy as np
import polars as pl

from profaudit.compare.core import BASELINE, CANDIDATE, Comparison, Side
from profaudit.compare.match import UNNAMED, match_entities
from profaudit.fmt import fmt_x, plural

_LEVELS = ("exact", "normal", "short", "family")


def case_rows(samples: pl.DataFrame) -> pl.DataFrame:
    """Rows that count, with `entity` (benchmark, plus variant where one side has several)."""
    from profaudit.samples import preferred

    s = preferred(samples).filter(pl.col("duration_ns").is_not_null() & (pl.col("phase").is_null() | (pl.col("phase") != "warmup")))
    s = s.with_columns(pl.col("params").fill_null("{}"), pl.coalesce(pl.col("benchmark"), pl.lit(UNNAMED)).alias("benchmark"))
    multi = pl.col("variant").n_unique().over("benchmark", "params") > 1
    return s.with_columns(
        pl.when(multi & pl.col("variant").is_not_null())
        .then(pl.concat_str([pl.col("benchmark"), pl.lit(" ["), pl.col("variant"), pl.lit("]")]))
        .otherwise(pl.col("benchmark"))
        .alias("entity")
    )


def case_table(rows: pl.DataFrame) -> pl.DataFrame:
    """One row per (entity, params): sample count, centre and its statistic, mean, sd, min.

    Raw samples give the median as centre; a case with summaries only takes its reported median,
    else its mean, and keeps the reported standard deviation for a delta-method interval.
    """
    raw = rows.filter(pl.col("statistic").is_null())
    d = pl.col("duration_ns")
    r = raw.group_by("entity", "params").agg(
        pl.len().alias("count"),
        d.median().alias("center_ns"),
        d.mean().alias("mean_ns"),
        d.std().alias("sd_ns"),
        d.min().alias("min_ns"),
        pl.col("run").n_unique().alias("runs"),
        pl.col("time_source").drop_nulls().first(),
    ).with_columns(pl.lit("median").alias("statistic"))
    summ = rows.filter(pl.col("statistic").is_not_null()).with_columns(pl.col("statistic").str.to_lowercase().alias("_s"))
    if summ.height:
        def pick(names: tuple[str, ...]) -> pl.Expr:
            return d.filter(pl.col("_s").is_in(list(names))).first()

        summ = (
            summ.group_by("entity", "params", maintain_order=True)
            .agg(
                pl.col("sample_count").max().alias("count"),
                pick(("median", "p50")).alias("_median"),
                pick(("mean", "avg", "average")).alias("mean_ns"),
                pick(("stdev", "std", "stddev", "sd")).alias("sd_ns"),
                pick(("min", "minimum")).alias("min_ns"),
                pl.lit(1, pl.UInt32).alias("runs"),
                pl.col("time_source").drop_nulls().first(),
            )
            .with_columns(
                pl.coalesce("_median", "mean_ns").alias("center_ns"),
                pl.when(pl.col("_median").is_not_null()).then(pl.lit("median (reported)")).otherwise(pl.lit("mean (reported)")).alias("statistic"),
            )
            .filter(pl.col("center_ns").is_not_null())
            .join(r.select("entity", "params"), on=["entity", "params"], how="anti")
        )
        r = pl.concat([r, summ.select(r.columns)], how="vertical_relaxed")
    return r.with_columns(pl.col("count").cast(pl.Int64), pl.col("runs").cast(pl.Int64)).sort("entity", "params")


def _entities(cases: pl.DataFrame) -> pl.DataFrame:
    return cases.group_by("entity").agg(pl.col("count").sum(), pl.col("center_ns").sum().alias("total_ns")).sort("entity")


def _case_label(bench: pl.Expr) -> pl.Expr:
    """'add N=1024': the parameters as `--params` takes them, not the canonical JSON the join keys
    on ('add {"N":1024}' is code, and a cut cell loses the value that differs inside its quotes)."""
    from profaudit.fmt import fmt_params

    params = pl.col("params").map_elements(fmt_params, return_dtype=pl.Utf8)
    return (
        pl.when(pl.col("params") == "{}")
        .then(bench)
        .when(bench == UNNAMED)
        .then(params)
        .otherwise(pl.concat_str([bench, pl.lit(" "), params]))
    )


def compare_samples(b: Side, c: Side, *, match: str, intended: tuple[str, ...] = ()) -> Comparison:
    from profaudit.compare import fairness, significance
    from profaudit.compare.kernels import contributions_table
    from profaudit.compare.match import groups_frame

    rb, rc = case_rows(b.samples), case_rows(c.samples)
    cb, cc = case_table(rb), case_table(rc)
    groups = match_entities(_entities(cb), _entities(cc), match, levels=_LEVELS)
    meta = pl.DataFrame(
        {"group_id": [g.group_id for g in groups], "method": [g.method for g in groups], "score": [float(g.score) for g in groups]},
        schema={"group_id": pl.Int64, "method": pl.Utf8, "score": pl.Float64},
    )
    gmap = groups_frame(groups)
    cb = cb.join(gmap.filter(pl.col("side") == BASELINE).drop("side"), on="entity", how="left")
    cc = cc.join(gmap.filter(pl.col("side") == CANDIDATE).drop("side"), on="entity", how="left")
    j = cb.filter(pl.col("group_id").is_not_null()).join(
        cc.filter(pl.col("group_id").is_not_null()), on=["group_id", "params"], how="inner", suffix="_c"
    )
    # a many-to-many name group can pair one baseline case with two candidate ones: keep each
    # case once, the first by name, so no case's time counts twice
    j = j.sort("entity", "entity_c").unique(["entity", "params"], keep="first", maintain_order=True).unique(
        ["entity_c", "params"], keep="first", maintain_order=True
    )
    j = j.join(meta, on="group_id", how="left").with_columns(pl.int_range(pl.len(), dtype=pl.Int64).alias("case_id"))
    matched = j.select(
        "case_id",
        _case_label(pl.col("entity")).alias("label"),
        "method",
        "score",
        pl.col("entity").alias("benchmark_b"),
        pl.col("entity_c").alias("benchmark_c"),
        "params",
        pl.col("statistic").alias("statistic_b"),
        pl.col("statistic_c"),
        pl.col("count").alias("count_b"),
        pl.col("count_c"),
        pl.col("runs").alias("runs_b"),
        pl.col("runs_c"),
        pl.col("center_ns").alias("median_b_ns"),
        pl.col("center_ns_c").alias("median_c_ns"),
        pl.col("mean_ns").alias("mean_b_ns"),
        pl.col("mean_ns_c").alias("mean_c_ns"),
        pl.col("sd_ns").alias("sd_b_ns"),
        pl.col("sd_ns_c").alias("sd_c_ns"),
        pl.col("time_source").alias("time_source_b"),
        pl.col("time_source_c"),
    ).with_columns(
        (pl.col("median_c_ns") - pl.col("median_b_ns")).alias("diff_ns"),
        pl.when(pl.col("median_b_ns") > 0).then((pl.col("median_c_ns") - pl.col("median_b_ns")) / pl.col("median_b_ns") * 100).alias("diff_pct"),
        pl.when(pl.col("median_c_ns") > 0).then(pl.col("median_b_ns") / pl.col("median_c_ns")).alias("speedup"),
    )
    used_b = j.select("entity", "params")
    used_c = j.select(pl.col("entity_c").alias("entity"), "params")
    removed = _unmatched(cb.join(used_b, on=["entity", "params"], how="anti"), -1.0)
    added = _unmatched(cc.join(used_c, on=["entity", "params"], how="anti"), +1.0)

    sig = significance.case_significance(rb, rc, j)
    matched = matched.join(sig, on="case_id", how="left")
    # Totals and every speedup are over matched cases only: a case present on one side is a
    # different benchmark set, not a change in speed (summing 2 baseline cases against 4 candidate
    # ones once printed 0.02x beside a 1.44x geomean). Added/removed cases keep their own sums.
    tb = _side_totals(b, cb, rb, matched["median_b_ns"])
    tc = _side_totals(c, cc, rc, matched["median_c_ns"])
    net = tc["time_ns"] - tb["time_ns"]
    contributions = contributions_table(
        matched.rename({"case_id": "group_id"}), added.clear(), removed.clear(), net
    ).rename({"group_id": "case_id"})
    share = contributions.filter(pl.col("kind") == "matched").select("case_id", "share_pct")
    matched = matched.join(share, on="case_id", how="left").sort([pl.col("diff_ns").abs(), "label"], descending=[True, False], nulls_last=True)
    totals = _totals(tb, tc, matched, added, removed)
    totals["headline"] = "matched_cases_time"  # the verdict's time: matched cases only (added/removed apart)
    findings, comparable = fairness.check_pair(b, c, kind="samples", intended=intended)
    notes: list[str] = []
    summary_only = matched.filter((pl.col("statistic_b") != "median") | (pl.col("statistic_c") != "median")).height
    if summary_only:
        notes.append(
            f"{plural(summary_only, 'matched case')} {'has' if summary_only == 1 else 'have'} reported summaries only: their intervals use the reported mean, "
            "standard deviation and sample count (independent samples assumed), or are unknown without them"
        )
    methods: dict[str, int] = {}
    for m in matched["method"].to_list():
        methods[m] = methods.get(m, 0) + 1
    return Comparison(
        kind="samples",
        baseline=b,
        candidate=c,
        match_mode=match,
        comparable=comparable,
        verdict=_verdict(comparable, findings, totals),
        totals=totals,
        matched=matched,
        added=added,
        removed=removed,
        contributions=contributions,
        findings=findings,
        notes=notes,
        methods=methods,
    )


def _unmatched(cases: pl.DataFrame, sign: float) -> pl.DataFrame:
    return cases.select(
        _case_label(pl.col("entity")).alias("name"),
        pl.col("entity").alias("benchmark"),
        "params",
        "statistic",
        "count",
        pl.col("center_ns").alias("median_ns"),
        "mean_ns",
        (pl.col("center_ns") * sign).alias("diff_ns"),
    ).sort(["median_ns", "name"], descending=[True, False], nulls_last=True)


def _side_totals(side: Side, cases: pl.DataFrame, rows: pl.DataFrame, matched_times: pl.Series) -> dict:
    """`cases`/`samples` count the whole side; `time_ns` sums the matched cases only."""
    return {
        "profiles": len(side.ps),
        "cases": cases.height,
        "samples": int(rows.filter(pl.col("statistic").is_null()).height),
        "time_ns": float(matched_times.sum()) if matched_times.len() else 0.0,
        "time_of_case": _centre_label(cases),
        "time_sources": sorted({v for v in rows["time_source"].to_list() if v is not None}),
    }


def _centre_label(cases: pl.DataFrame) -> str:
    """What a case's time is on this side: median of raw samples, or the log's reported median or mean."""
    kinds = {"mean" if "mean" in str(v) else "median" for v in cases["statistic"].to_list()} if cases.height else {"median"}
    return "median" if kinds == {"median"} else "mean" if kinds == {"mean"} else "median or reported mean"


def totals_label(totals: dict) -> str:
    """The name of the summed time in the totals table and the waterfall."""
    b, c = totals[BASELINE].get("time_of_case", "median"), totals[CANDIDATE].get("time_of_case", "median")
    if b == c:
        return {"median": "sum of case medians", "mean": "sum of case means (as reported)"}.get(b, "sum of case times (median, or the reported mean)")
    return f"sum of case times (baseline: {b}; candidate: {c})"


def _totals(tb: dict, tc: dict, matched: pl.DataFrame, added: pl.DataFrame, removed: pl.DataFrame) -> dict:
    """Matched-case totals and speedups (none when nothing matched), then the one-sided cases
    apart: `added`/`removed` hold their case count and the sum of their case times."""
    sp = matched["speedup"].drop_nulls()
    sp = sp.filter(sp > 0)
    geo = float(math.exp(np.log(sp.to_numpy()).mean())) if sp.len() else None
    counts = {}
    if "significance" in matched.columns:
        for v in matched["significance"].to_list():
            counts[v or "unknown"] = counts.get(v or "unknown", 0) + 1
    any_matched = matched.height > 0
    return {
        BASELINE: tb,
        CANDIDATE: tc,
        "time_diff_ns": tc["time_ns"] - tb["time_ns"] if any_matched else None,
        "time_diff_pct": (tc["time_ns"] - tb["time_ns"]) / tb["time_ns"] * 100 if any_matched and tb["time_ns"] else None,
        "time_speedup": tb["time_ns"] / tc["time_ns"] if any_matched and tc["time_ns"] else None,
        "matched_cases": matched.height,
        "geomean_speedup": geo,
        "case_significance": counts,
        "added": _unmatched_sum(added),
        "removed": _unmatched_sum(removed),
    }


def _unmatched_sum(df: pl.DataFrame) -> dict:
    return {"cases": df.height, "time_ns": float(df["median_ns"].sum()) if df.height else 0.0}


def _verdict(comparable: str, findings: list, totals: dict) -> str:
    from profaudit.compare.kernels import verdict_line

    if comparable == "no" or totals.get("geomean_speedup") is None:
        return verdict_line(comparable, findings, {**totals, "significance": {"verdict": "unknown", "reason": "no speedup to test"}}, "time")
    geo = totals["geomean_speedup"]
    n = totals["matched_cases"]
    cs = totals["case_significance"]
    faster, slower = cs.get("faster", 0), cs.get("slower", 0)
    caveat = " (with warnings: see findings)" if comparable == "with-warnings" else ""
    if faster == 0 and slower == 0:
        # a geometric mean of untested or noise-level ratios names no winner
        return (
            f"no case differs significantly: geometric-mean speedup {fmt_x(geo)} over {plural(n, 'matched case')}, "
            f"{cs.get('same', 0)} within the noise threshold, {n - cs.get('same', 0)} not significant or unknown; no winner declared{caveat}"
        )
    direction = "faster" if geo > 1 else "slower" if geo < 1 else "as fast"
    return (
        f"candidate {direction}: geometric-mean speedup {fmt_x(geo)} over {plural(n, 'matched case')}; "
        f"significantly faster in {faster}, slower in {slower}, {n - faster - slower} not significant or unknown{caveat}"
    )
