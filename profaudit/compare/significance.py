"""Is a matched group's difference real? Thin use of `profaudit.audit.stats`, no statistics here.

Per group (or timing case) the evidence is the launch (iteration) durations of each side, in
launch order. The interval is the audit's interval of the ratio of medians (baseline / candidate:
> 1 means the candidate is faster; `profaudit.audit.speedup`'s bootstrap, widened for lag-1
autocorrelation, since consecutive launches are not independent, and for run-to-run variation
where a side holds several runs); the test is the audit's Mann-Whitney U. A group is

    faster / slower  the interval clears 1 by more than the noise threshold and U rejects at 5 %
                     (reported summaries: the audit's delta-method interval alone)
    same             the whole interval lies within the noise threshold of 1
    inconclusive     anything else
    unknown          fewer than `MIN_SAMPLES` timed launches on a side, or no spread at all
    untested         beyond the `MAX_TESTED_GROUPS` largest time differences (cost bound)

Group intervals use `GROUP_RESAMPLES` resamples (a screening interval over hundreds of groups;
the audit command's claim-level verdict uses the full 10,000).
"""

from __future__ import annotations

import math

import numpy as np
import polars as pl

from profaudit.audit import stats as S
from profaudit.audit.speedup import intervals

GROUP_RESAMPLES = 2_000
MAX_TESTED_GROUPS = 500
MIN_SAMPLES = 3
ALPHA = 0.05

SCHEMA = {
    "significance": pl.Utf8,
    "p_value": pl.Float64,
    "speedup_ci_low": pl.Float64,
    "speedup_ci_high": pl.Float64,
    "significance_basis": pl.Utf8,
}


def pair_significance(
    xb: np.ndarray, xc: np.ndarray, runs_b: np.ndarray | None = None, runs_c: np.ndarray | None = None, *,
    seed: int = S.DEFAULT_SEED, resamples: int = GROUP_RESAMPLES, unit: str = "launches",
) -> dict:
    """Significance of one pair of samples (in execution order); see the module docstring. `unit`
    names what a sample is (launches of a kernel, iterations of a benchmark) in the basis."""
    xb = np.asarray(xb, dtype=np.float64)
    xc = np.asarray(xc, dtype=np.float64)
    xb, xc = xb[np.isfinite(xb)], xc[np.isfinite(xc)]
    out = {"significance": "unknown", "p_value": None, "speedup_ci_low": None, "speedup_ci_high": None, "significance_basis": None}
    if xb.size < MIN_SAMPLES or xc.size < MIN_SAMPLES:
        out["significance_basis"] = f"fewer than {MIN_SAMPLES} samples on a side"
        return out
    if np.ptp(xb) == 0 and np.ptp(xc) == 0:
        out["significance_basis"] = "no spread on either side (replayed or summary values)"
        return out
    sb = S.SampleSet(xb, runs=runs_b if runs_b is not None and runs_b.size == xb.size else None)
    sc = S.SampleSet(xc, runs=runs_c if runs_c is not None and runs_c.size == xc.size else None)
    # the audit's own interval: bootstrap of the median ratio, widened for autocorrelation and
    # run-to-run variation exactly as `profaudit audit` does it
    ivs, method, infl = intervals((sb, sc), [S.MEDIAN], resamples, (seed, seed + 1), S.DEFAULT_CONFIDENCE, "time")
    iv = ivs[S.MEDIAN.name]
    mw = S.mann_whitney(xb, xc, a_sorted=sb.sorted, b_sorted=sc.sorted)
    sides = [infl.get(r, {}) for r in ("baseline", "candidate")]
    auto = any((d.get("autocorrelation_factor") or 1.0) > 1.0 for d in sides)
    run_factors = [d.get("run_factor", {}).get(S.MEDIAN.name, 1.0) for d in (*sides, infl.get("paired_runs", {}))]
    runs = max(int(d.get("runs", 1) or 1) for d in (*sides, infl.get("paired_runs", {})))
    widened = [w for w, on in (("autocorrelation", auto), (f"run-to-run variation ({runs} runs)", any(f > 1.0 for f in run_factors))) if on]
    basis = unit + (", interval widened for " + " and ".join(widened) if widened else "")
    out.update(p_value=mw.p_value, speedup_ci_low=iv.low, speedup_ci_high=iv.high, significance_basis=basis)
    if not (math.isfinite(iv.low) and math.isfinite(iv.high)):
        out["significance"] = "unknown"
        return out
    out["significance"] = _verdict(iv.low, iv.high, mw.p_value if mw.p_value == mw.p_value else 1.0)
    return out


def _frame(ids: list, rows: list[dict], key: str) -> pl.DataFrame:
    return pl.DataFrame(
        {key: ids, **{c: [r[c] for r in rows] for c in SCHEMA}},
        schema={key: pl.Int64, **SCHEMA},
    )


def group_significance(
    kb: pl.DataFrame, kc: pl.DataFrame, runs_b: int, runs_c: int, *, order: list[int] | None = None, limit: int | None = MAX_TESTED_GROUPS
) -> pl.DataFrame:
    """One row per matched group: significance, p_value, speedup_ci_low/high, basis.

    Each test costs about a millisecond, so a profile with thousands of matched kernels would
    spend most of the comparison here: only the first `limit` groups of `order` (the caller's
    ranking, largest time difference first) are tested; the others are 'untested'.
    """
    def lists(k: pl.DataFrame) -> pl.DataFrame:
        return (
            k.filter(pl.col("group_id").is_not_null() & pl.col("duration_ns").is_not_null())
            .sort("_order")
            .group_by("group_id")
            .agg(pl.col("duration_ns").alias("d"), pl.col("_pord").alias("r"))
        )

    lb = lists(kb)
    # a profile compared with itself (one prepared frame on both sides): its lists once
    j = lb.join(lb if kc is kb else lists(kc), on="group_id", how="inner", suffix="_c").sort("group_id")
    tested = None
    if limit is not None and order is not None and len(order) > limit:
        tested = set(order[:limit])
    ids, rows = [], []
    # each group's launches go to numpy from their list cell (j[col][i]: a Series over the cell's
    # values), not through iter_rows, which made a Python object of every launch of every group,
    # tested or not (8 M objects, +0.2 GB for the 2 M launches of a 200 MB trace against itself)
    cells = {c: j[c] for c in ("d", "r", "d_c", "r_c")}
    for i, gid in enumerate(j["group_id"].to_list()):
        ids.append(gid)
        if tested is not None and gid not in tested:
            rows.append({"significance": "untested", "p_value": None, "speedup_ci_low": None, "speedup_ci_high": None,
                         "significance_basis": f"not tested: outside the {limit} largest time differences"})
            continue
        rows.append(
            pair_significance(
                cells["d"][i].to_numpy(), cells["d_c"][i].to_numpy(),
                cells["r"][i].to_numpy() if runs_b > 1 else None, cells["r_c"][i].to_numpy() if runs_c > 1 else None,
                seed=S.DEFAULT_SEED + int(gid),
            )
        )
    return _frame(ids, rows, "group_id")


def total_significance(kb: pl.DataFrame, kc: pl.DataFrame, runs_b: int, runs_c: int, what: str = "per-profile totals") -> dict:
    """Significance of the total GPU time of the rows given (all kernels, or the matched ones):
    needs repeated profiles (runs) on both sides, because one profile's total is a single measurement."""
    if runs_b < 2 or runs_c < 2:
        return {"verdict": "unknown", "reason": "one profile per side: the total is a single measurement; give repeated runs for a test", "basis": None, "p_value": None}
    tb = kb.group_by("profile_id").agg(pl.col("duration_ns").sum())["duration_ns"].to_numpy()
    tc = kc.group_by("profile_id").agg(pl.col("duration_ns").sum())["duration_ns"].to_numpy()
    return totals_significance(tb, tc, f"{what} ({runs_b} vs {runs_c} runs)")


def totals_significance(tb: np.ndarray, tc: np.ndarray, basis: str) -> dict:
    """Ratio of means (baseline / candidate) with its bootstrap interval and Mann-Whitney U over
    independent per-run (or per-step) totals."""
    rng = np.random.default_rng(S.DEFAULT_SEED)
    sb, sc = S.SampleSet(tb), S.SampleSet(tc)
    db, _ = S.bootstrap_draws(sb, [S.MEAN], S.DEFAULT_RESAMPLES, rng)
    dc, _ = S.bootstrap_draws(sc, [S.MEAN], S.DEFAULT_RESAMPLES, rng)
    iv = S.ratio_interval(sb, sc, S.MEAN, draws_b=db["mean"], draws_c=dc["mean"])
    mw = S.mann_whitney(tb, tc)
    finite = math.isfinite(iv.low) and math.isfinite(iv.high)
    v = _verdict(iv.low, iv.high, mw.p_value if mw.p_value == mw.p_value else 1.0) if finite else "inconclusive"
    return {
        "verdict": v,
        "basis": basis,
        "p_value": mw.p_value,
        "speedup": iv.estimate,
        "speedup_ci_low": iv.low,
        "speedup_ci_high": iv.high,
        "reason": None if v != "inconclusive" else "the interval of the mean-total ratio includes 1 or the test does not reject",
    }


def case_significance(rb: pl.DataFrame, rc: pl.DataFrame, pairs: pl.DataFrame) -> pl.DataFrame:
    """Timing logs: one row per matched case (`case_id`).

    Raw iterations on both sides: `pair_significance` (basis "iterations"). Otherwise, where both sides
    give a mean, a standard deviation and a count (raw or reported), the audit's delta-method
    interval of the ratio of means; else unknown.
    """
    def lists(r: pl.DataFrame) -> pl.DataFrame:
        order = [c for c in ("profile_id", "run", "iteration", "timestamp_ns") if c in r.columns]
        return (
            r.filter(pl.col("statistic").is_null())
            .sort(order, nulls_last=True)
            .with_columns(pl.concat_str([pl.col("profile_id"), pl.lit("/"), pl.col("run").cast(pl.Utf8).fill_null("")]).alias("_run"))
            .group_by("entity", "params")
            .agg(pl.col("duration_ns").alias("d"), pl.col("_run").alias("r"))
        )

    lb, lc = lists(rb), lists(rc)
    j = (
        pairs.select("case_id", "entity", "params", "entity_c", "mean_ns", "sd_ns", "count", "mean_ns_c", "sd_ns_c", "count_c")
        .join(lb, on=["entity", "params"], how="left")
        .join(lc.rename({"entity": "entity_c", "d": "d_c", "r": "r_c"}), on=["entity_c", "params"], how="left")
        .sort("case_id")
    )
    ids, rows = [], []
    for row in j.iter_rows(named=True):
        cid = row["case_id"]
        ids.append(cid)
        d, d2 = row["d"], row["d_c"]
        if d is not None and d2 is not None and len(d) >= MIN_SAMPLES and len(d2) >= MIN_SAMPLES:
            rows.append(pair_significance(np.asarray(d), np.asarray(d2), _codes(row["r"]), _codes(row["r_c"]), seed=S.DEFAULT_SEED + int(cid), unit="iterations"))
            continue
        rows.append(_summary_test(row))
    return _frame(ids, rows, "case_id")


def _summary_test(row: dict) -> dict:
    out = {"significance": "unknown", "p_value": None, "speedup_ci_low": None, "speedup_ci_high": None, "significance_basis": "summary statistics without a standard deviation"}
    mb, mc = row["mean_ns"], row["mean_ns_c"]
    if mb is None or mc is None:
        return out
    iv = S.summary_ratio_interval(
        float(mb), row["sd_ns"], row["count"], float(mc), row["sd_ns_c"], row["count_c"],
        confidence=S.DEFAULT_CONFIDENCE, statistic="mean",
    )
    if not (math.isfinite(iv.low) and math.isfinite(iv.high)):
        return out
    out.update(speedup_ci_low=iv.low, speedup_ci_high=iv.high, significance_basis="reported mean, sd and n (delta method; independent samples assumed)")
    out["significance"] = _verdict(iv.low, iv.high, p=None)
    return out


def _verdict(low: float, high: float, p: float | None) -> str:
    """faster / slower / same / inconclusive from an interval of baseline/candidate (and a test)."""
    noise = S.DEFAULT_NOISE_THRESHOLD
    rejects = p is None or p < ALPHA
    if low > 1 + noise and rejects:
        return "faster"
    if high < 1 / (1 + noise) and rejects:
        return "slower"
    if low >= 1 / (1 + noise) and high <= 1 + noise:
        return "same"
    return "inconclusive"


def _codes(labels: list | None) -> np.ndarray | None:
    if not labels:
        return None
    uniq = {v: i for i, v in enumerate(dict.fromkeys(labels))}
    if len(uniq) < 2:
        return None
    return np.fromiter((uniq[v] for v in labels), dtype=np.int64, count=len(labels))
