"""Kernel-profile comparison: group statistics, added/removed kernels, and where the time went.

All per-launch work is columnar: launches get their group through a join on the entity (distinct
name), group statistics are one `group_by`, and launch alignment is one join on (group, context,
rank). Times are per profile: a side with several profiles (repeated runs) is averaged, so two
sides with different run counts still compare, and the items of `contributions` sum exactly to
the difference of the totals.
"""

from __future__ import annotations

import re

import polars as pl

from profaudit.compare.core import BASELINE, CANDIDATE, Comparison, Side
from profaudit.fmt import fmt_interval, fmt_ns, fmt_pct, fmt_x, p_is, plural
from profaudit.compare.match import (
    Group,
    align_instances,
    base_name,
    entities,
    entity_expr,
    groups_frame,
    match_entities,
    mode_of,
)


def prepare(kernels: pl.DataFrame, profile_ids: list[str]) -> pl.DataFrame:
    """Kernels with `entity`, the profile's ordinal `_pord` and the side-wide launch order `_order`."""
    order = {pid: i for i, pid in enumerate(profile_ids)}
    k = kernels.with_columns(
        entity_expr(),
        pl.col("profile_id").replace_strict(order, default=len(order), return_dtype=pl.Int64).alias("_pord"),
    )
    keys = ["_pord", "start_ns", "kernel_id"]
    # A column null in every row is left out of the sort and put back as a typed null literal: the
    # sort gathers every column it carries, and a profile's absent counters (schema.conform gives
    # them as null Series) were copied row by row, 0.75 GB of nulls for the 2 M launches of a
    # 200 MB rocprofv3 trace. The order depends on the keys alone, so the rows are the same.
    empty = [c for c in k.columns if c not in keys and k.height and k[c].null_count() == k.height]
    cols = k.schema
    if k.height > 1 and _strictly_ascending(k, keys):
        # already in launch order with no ties and no nulls (a trace's usual order): every sort
        # gives these rows as they stand, and the sorted copy (0.3 GB for those 2 M launches) is
        # not made
        return k.with_columns(pl.int_range(pl.len(), dtype=pl.Int64).alias("_order"))
    k = k.drop(empty).sort(keys, nulls_last=True)
    if empty:
        k = k.with_columns(pl.lit(None, cols[c]).alias(c) for c in empty).select(list(cols))
    return k.with_columns(pl.int_range(pl.len(), dtype=pl.Int64).alias("_order"))


def _strictly_ascending(k: pl.DataFrame, keys: list[str]) -> bool:
    """Whether the rows of `k` stand in strictly ascending order of `keys` (compared as a tuple),
    none of them null: then no two rows tie and any sort by `keys` leaves them as they are."""
    if any(k[c].null_count() for c in keys):
        return False
    later = pl.lit(False)
    # row i > row i-1 as tuples: the first key that differs decides, from the last key backwards
    for c in reversed(keys):
        d = pl.col(c).diff()
        later = (d > 0) | ((d == 0) & later)
    return bool(k.select(later.slice(1).all()).item())


def _used(kernels: pl.DataFrame) -> pl.DataFrame:
    """The kernel columns the comparison reads: names (the entity), times, context (op, NVTX
    range, device), the counters compared (metrics.KERNEL_METRIC_COLUMNS) and the work summed for
    the roofline. `prepare` sorts a copy of what it is given, and the other 20-odd columns (grid
    and block dimensions, ids, categories, ...) were half of that copy."""
    from profaudit.compare.metrics import KERNEL_METRIC_COLUMNS, _SUM_COLUMNS
    from profaudit.roofline import TENSOR_PIPE_COLUMN, UNCOUNTED_COLUMN

    cols = ("profile_id", "kernel_id", "name", "short_name", "mangled_name", "op_name", "nvtx_range", "start_ns", "end_ns",
            "duration_ns", "device_name", "sm_clock_hz", "flops_method", UNCOUNTED_COLUMN, TENSOR_PIPE_COLUMN,
            *KERNEL_METRIC_COLUMNS, *_SUM_COLUMNS)
    return kernels.select([c for c in dict.fromkeys(cols) if c in kernels.columns])


def with_group_ids(k: pl.DataFrame, gmap: pl.DataFrame) -> pl.DataFrame:
    """`k` with the `group_id` of its entity (null where unmatched): the left join on `entity`, as a
    new column beside the others (the join copied every column of the kernel table). When an
    entity is in two groups (the join then repeats its rows) the join itself is kept."""
    if gmap["entity"].is_duplicated().any():
        return k.join(gmap, on="entity", how="left")
    ids = dict(zip(gmap["entity"].to_list(), gmap["group_id"].to_list()))
    return k.with_columns(pl.col("entity").replace_strict(ids, default=None, return_dtype=pl.Int64).alias("group_id"))


def runs_of(k: pl.DataFrame) -> int:
    return max(1, k["profile_id"].n_unique())


def _side_stats(k: pl.DataFrame, runs: int, by: str, suffix: str) -> pl.DataFrame:
    d = pl.col("duration_ns")
    return k.group_by(by).agg(
        pl.len().alias(f"count_{suffix}"),
        d.count().alias(f"timed_{suffix}"),
        (d.sum() / runs).alias(f"total_{suffix}_ns"),
        d.mean().alias(f"mean_{suffix}_ns"),
        d.median().alias(f"median_{suffix}_ns"),
        d.min().alias(f"min_{suffix}_ns"),
        d.max().alias(f"max_{suffix}_ns"),
        pl.col("entity").unique().sort().alias(f"names_{suffix}"),
    )


def _groups_meta(groups: list[Group]) -> pl.DataFrame:
    def label(g: Group) -> str:
        if g.method in ("exact", "mangled", "normal"):
            return g.baseline[0]
        if g.method == "op":
            return f"op {g.key}"
        if g.method == "nvtx":
            return f"nvtx {g.key}"
        return g.key

    return pl.DataFrame(
        {
            "group_id": [g.group_id for g in groups],
            "label": [label(g) for g in groups],
            "method": [g.method for g in groups],
            "score": [float(g.score) for g in groups],
        },
        schema={"group_id": pl.Int64, "label": pl.Utf8, "method": pl.Utf8, "score": pl.Float64},
    )


def matched_table(kb: pl.DataFrame, kc: pl.DataFrame, groups: list[Group], runs_b: int, runs_c: int) -> pl.DataFrame:
    """One row per matched group with both sides' statistics and the decomposed difference."""
    sb = _side_stats(kb.filter(pl.col("group_id").is_not_null()), runs_b, "group_id", "b")
    sc = _side_stats(kc.filter(pl.col("group_id").is_not_null()), runs_c, "group_id", "c")
    m = _groups_meta(groups).join(sb, on="group_id", how="inner").join(sc, on="group_id", how="inner")
    nb = pl.col("timed_b") / runs_b
    nc = pl.col("timed_c") / runs_c
    mb = pl.col("mean_b_ns").fill_null(0.0)
    mc = pl.col("mean_c_ns").fill_null(0.0)
    m = m.with_columns(
        (pl.col("total_c_ns") - pl.col("total_b_ns")).alias("diff_ns"),
        # diff = (mean_c - mean_b) * n_b  +  (n_c - n_b) * mean_c : per-launch change + launch-count change
        ((mc - mb) * nb).alias("diff_from_duration_ns"),
        ((nc - nb) * mc).alias("diff_from_count_ns"),
        pl.when(pl.col("total_b_ns") > 0).then((pl.col("total_c_ns") - pl.col("total_b_ns")) / pl.col("total_b_ns") * 100).alias("diff_pct"),
        pl.when(pl.col("total_c_ns") > 0).then(pl.col("total_b_ns") / pl.col("total_c_ns")).alias("speedup"),
        pl.when(pl.col("median_c_ns") > 0).then(pl.col("median_b_ns") / pl.col("median_c_ns")).alias("median_speedup"),
    )
    return m


def unmatched_table(k: pl.DataFrame, runs: int, sign: float) -> pl.DataFrame:
    """Added (sign +1, candidate) or removed (sign -1, baseline) kernels, one row per name."""
    u = k.filter(pl.col("group_id").is_null())
    d = pl.col("duration_ns")
    t = u.group_by("entity").agg(
        pl.len().alias("count"),
        d.count().alias("timed"),
        (d.sum() / runs).alias("total_ns"),
        d.mean().alias("mean_ns"),
        d.median().alias("median_ns"),
        mode_of("op_name"),
        mode_of("nvtx_range"),
    )
    t = t.with_columns((pl.col("total_ns") * sign).alias("diff_ns")).rename({"entity": "name"})
    return t.sort(["total_ns", "name"], descending=[True, False], nulls_last=True)


def _span(k: pl.DataFrame) -> float | None:
    end = pl.coalesce(pl.col("end_ns").cast(pl.Float64), pl.col("start_ns").cast(pl.Float64) + pl.col("duration_ns"))
    per = (
        k.filter(pl.col("start_ns").is_not_null())
        .group_by("profile_id")
        .agg((end.max() - pl.col("start_ns").min().cast(pl.Float64)).alias("span"))
    )
    if per.height == 0:
        return None
    v = per["span"].mean()
    return float(v) if v is not None else None


def side_totals(k: pl.DataFrame, runs: int) -> dict:
    d = k["duration_ns"]
    return {
        "profiles": runs,
        "kernels": k.height,
        "timed_kernels": int(d.count()),
        "distinct_kernels": int(k["entity"].n_unique()),
        "gpu_time_ns": float(d.sum()) / runs,
        "wall_time_ns": _span(k),
    }


def contributions_table(matched: pl.DataFrame, added: pl.DataFrame, removed: pl.DataFrame, net: float) -> pl.DataFrame:
    """Every item's share of the net difference, largest absolute change first.

    `share_pct` is signed and the column sums to 100 % (items can offset each other, so a single
    item may explain more than 100 %); `abs_share_pct` is the item's share of the gross change;
    `diff_from_count_ns` is the part of a matched kernel's difference due to launching it more
    or less often (the rest is per-launch time).
    """
    none_f = pl.lit(None, pl.Float64)
    split = [pl.col("diff_from_count_ns")] if "diff_from_count_ns" in matched.columns else [none_f.alias("diff_from_count_ns")]
    parts = [
        matched.select(pl.lit("matched").alias("kind"), pl.col("label").alias("item"), "method", "diff_ns", "group_id", *split),
        added.select(pl.lit("added").alias("kind"), pl.col("name").alias("item"), pl.lit(None, pl.Utf8).alias("method"), "diff_ns", pl.lit(None, pl.Int64).alias("group_id"), none_f.alias("diff_from_count_ns")),
        removed.select(pl.lit("removed").alias("kind"), pl.col("name").alias("item"), pl.lit(None, pl.Utf8).alias("method"), "diff_ns", pl.lit(None, pl.Int64).alias("group_id"), none_f.alias("diff_from_count_ns")),
    ]
    c = pl.concat(parts, how="vertical").with_columns(pl.col("diff_ns").fill_null(0.0))
    gross = float(c["diff_ns"].abs().sum()) if c.height else 0.0
    c = c.sort([pl.col("diff_ns").abs(), "item"], descending=[True, False])
    c = c.with_columns(
        (pl.col("diff_ns") / net * 100 if net != 0 else pl.lit(None, pl.Float64)).alias("share_pct"),
        (pl.col("diff_ns").abs() / gross * 100 if gross > 0 else pl.lit(None, pl.Float64)).alias("abs_share_pct"),
    ).with_columns(
        pl.col("share_pct").cum_sum().alias("cumulative_pct"),
        pl.int_range(1, pl.len() + 1, dtype=pl.Int64).alias("rank"),
    )
    return c.select("rank", "kind", "item", "method", "group_id", "diff_ns", "diff_from_count_ns", "share_pct", "cumulative_pct", "abs_share_pct")


def compare_kernels(
    b: Side, c: Side, *, match: str, device: str | None, intended: tuple[str, ...] = (), max_tests: int | None = None
) -> Comparison:
    from profaudit.compare import fairness, metrics, significance

    if max_tests is None:
        max_tests = significance.MAX_TESTED_GROUPS

    kb = prepare(_used(b.kernels), b.ps.ids)
    # a profile compared with itself (the same ProfileSet on both sides) is prepared once: each
    # prepared side is a sorted copy of the whole kernel table (330 MB for 2 M launches)
    kc = kb if c.ps is b.ps else prepare(_used(c.kernels), c.ps.ids)
    runs_b, runs_c = runs_of(kb), runs_of(kc)
    eb = entities(kb)
    ec = eb if kc is kb else entities(kc)
    groups = match_entities(eb, ec, match)
    gmap = groups_frame(groups)
    gb, gc = gmap.filter(pl.col("side") == BASELINE).drop("side"), gmap.filter(pl.col("side") == CANDIDATE).drop("side")
    same = kc is kb and gb.equals(gc)  # itself, every kernel its own match: one frame serves both sides
    kb = with_group_ids(kb, gb)
    kc = kb if same else with_group_ids(kc, gc)

    matched = matched_table(kb, kc, groups, runs_b, runs_c)
    removed = unmatched_table(kb, runs_b, -1.0)
    added = unmatched_table(kc, runs_c, +1.0)
    tb, tc = side_totals(kb, runs_b), side_totals(kc, runs_c)
    net = tc["gpu_time_ns"] - tb["gpu_time_ns"]
    contributions = contributions_table(matched, added, removed, net)
    pairs = align_instances(kb, kc)
    matched = matched.join(
        pairs.group_by("group_id").agg(pl.len().alias("aligned"), pl.col("context").first()), on="group_id", how="left"
    ).with_columns(pl.col("aligned").fill_null(0))
    by_size = matched.sort([pl.col("diff_ns").abs(), "group_id"], descending=[True, False])["group_id"].to_list()
    sig = significance.group_significance(kb, kc, runs_b, runs_c, order=by_size, limit=max_tests)
    matched = matched.join(sig, on="group_id", how="left")
    share = contributions.filter(pl.col("kind") == "matched").select("group_id", "share_pct")
    matched = matched.join(share, on="group_id", how="left").sort([pl.col("diff_ns").abs(), "label"], descending=[True, False])

    totals = _totals(tb, tc, matched, kb, kc, runs_b, runs_c, significance)
    totals["added"], totals["removed"] = _unmatched_sum(added), _unmatched_sum(removed)
    partial = matched.height > 0 and (added.height > 0 or removed.height > 0)
    if partial:
        # some kernels were fused, split, added or removed: the headline is over the kernels both
        # sides run, and the one-sided kernels' time is listed apart
        totals["matched_significance"] = significance.total_significance(
            kb.filter(pl.col("group_id").is_not_null()), kc.filter(pl.col("group_id").is_not_null()), runs_b, runs_c,
            what="per-profile totals of the matched kernels")
    totals["headline"] = "matched_gpu_time" if partial else "gpu_time"
    findings, comparable = fairness.check_pair(b, c, kind="kernels", intended=intended)
    notes = _notes(kb, kc, groups)
    cov_b, cov_c = totals["matched_share_baseline_pct"], totals["matched_share_candidate_pct"]
    if cov_b is not None and cov_c is not None and min(cov_b, cov_c) < 50:
        notes.append(
            f"matched kernels hold only {fmt_pct(cov_b)} of the baseline's and {fmt_pct(cov_c)} of the candidate's GPU time: "
            "the two profiles may not run the same program or workload"
        )
    mm = metrics.metrics_moved(b, c, kb, kc)
    rf = metrics.roofline_movement(b, c, kb, kc, device=device)
    if rf.height:
        # label the groups and list them in the order of the matched table
        order = matched.select("group_id", pl.col("label").alias("_label"), pl.int_range(pl.len()).alias("_pos"))
        rf = rf.join(order, on="group_id", how="left").with_columns(pl.col("_label").alias("label")).sort("_pos", "side").drop("_label", "_pos")
    methods = {}
    for g in groups:
        methods[g.method] = methods.get(g.method, 0) + 1
    return Comparison(
        kind="kernels",
        baseline=b,
        candidate=c,
        match_mode=match,
        comparable=comparable,
        verdict=kernels_verdict(comparable, findings, totals),
        totals=totals,
        matched=matched,
        added=added,
        removed=removed,
        contributions=contributions,
        pairs=pairs,
        metrics_moved=mm,
        roofline=rf,
        findings=findings,
        notes=notes,
        methods=methods,
    )


def _totals(tb: dict, tc: dict, matched: pl.DataFrame, kb, kc, runs_b: int, runs_c: int, significance) -> dict:
    gb, gc = tb["gpu_time_ns"], tc["gpu_time_ns"]
    wb, wc = tb["wall_time_ns"], tc["wall_time_ns"]
    mb = float(matched["total_b_ns"].sum()) if matched.height else 0.0
    mc = float(matched["total_c_ns"].sum()) if matched.height else 0.0
    # Whole-profile GPU and wall time are one program's time, so a fused or split kernel (removed
    # + added) counts in them; but with no kernel in common the two profiles run different
    # programs and no speedup is stated. `matched_gpu_time_*` is the matched kernels alone.
    any_matched = matched.height > 0
    out = {
        BASELINE: tb,
        CANDIDATE: tc,
        "gpu_time_diff_ns": gc - gb,
        "gpu_time_diff_pct": (gc - gb) / gb * 100 if gb else None,
        "gpu_time_speedup": gb / gc if gc and any_matched else None,
        "wall_time_diff_ns": (wc - wb) if wb is not None and wc is not None else None,
        "wall_time_speedup": (wb / wc) if wb and wc and any_matched else None,
        "matched_gpu_time_baseline_ns": mb,
        "matched_gpu_time_candidate_ns": mc,
        "matched_gpu_time_speedup": mb / mc if any_matched and mc else None,
        "matched_gpu_time_diff_ns": mc - mb,
        "matched_gpu_time_diff_pct": (mc - mb) / mb * 100 if any_matched and mb else None,
        "matched_groups": matched.height,
        "matched_share_baseline_pct": mb / gb * 100 if gb else None,
        "matched_share_candidate_pct": mc / gc * 100 if gc else None,
    }
    out["significance"] = significance.total_significance(kb, kc, runs_b, runs_c)
    return out


def _unmatched_sum(df: pl.DataFrame) -> dict:
    """Kernels on one side only: distinct names, launches and their GPU time (per profile)."""
    return {
        "kernels": df.height,
        "launches": int(df["count"].sum()) if df.height else 0,
        "gpu_time_ns": float(df["total_ns"].sum()) if df.height else 0.0,
    }


def _notes(kb: pl.DataFrame, kc: pl.DataFrame, groups: list[Group]) -> list[str]:
    notes = []
    for k, who in ((kb, BASELINE), (kc, CANDIDATE)):
        untimed = k.height - int(k["duration_ns"].count())
        if untimed:
            notes.append(f"{who}: {untimed} of {k.height} kernel rows have no duration and add nothing to times")
    loose = [g for g in groups if g.method in ("op-class", "nvtx", "fuzzy")]
    if loose:
        notes.append(
            f"{plural(len(loose), 'group')} matched by a low-confidence method ({', '.join(sorted({g.method for g in loose}))}); "
            "check them before drawing conclusions"
        )
    return notes


def kernels_verdict(comparable: str, findings: list, totals: dict) -> str:
    """The headline of a kernel comparison. With every kernel matched it is the GPU time; when
    some are on one side only (fused, split, added, removed) it is the GPU time of the matched
    kernels, then the one-sided kernels' time apart, and whether the whole program's GPU time
    tells a different story."""
    if totals.get("headline") != "matched_gpu_time":
        return verdict_line(comparable, findings, totals, "gpu_time")
    view = {**totals, "significance": totals.get("matched_significance")}
    n = totals["matched_groups"]
    line = verdict_line(comparable, findings, view, "matched_gpu_time", label=f"GPU time in the {plural(n, 'matched kernel')}")
    if comparable == "no" or totals.get("matched_gpu_time_speedup") is None:
        return line
    return f"{line}; {one_sided_text(totals)}; {whole_program_text(totals)}"


def one_sided_text(totals: dict) -> str:
    parts = []
    for key, side in (("removed", "baseline only"), ("added", "candidate only")):
        u = totals.get(key) or {}
        if u.get("kernels"):
            parts.append(f"{plural(u['kernels'], f'{key} kernel')} ({side}) {fmt_ns(u['gpu_time_ns'])}")
    return "listed apart: " + " and ".join(parts)


def whole_program_text(totals: dict) -> str:
    """Whether the whole program's GPU time (every kernel, one-sided ones included) agrees with the
    matched kernels' figure, at the precision the headline prints (three significant digits)."""
    sp, msp, diff = totals.get("gpu_time_speedup"), totals.get("matched_gpu_time_speedup"), totals.get("gpu_time_diff_pct")
    if sp is None or diff is None:
        return "whole-program GPU time: no time on one side"
    same = fmt_x(sp) == fmt_x(msp)
    what = "the same as the matched kernels" if same else f"differs from the matched kernels' {fmt_x(msp)}"
    return f"whole-program GPU time (all kernels) {fmt_pct(diff, signed=True)} ({fmt_x(sp)}): {what}"


def verdict_line(comparable: str, findings: list, totals: dict, what: str, label: str | None = None) -> str:
    """One line: who is faster and by how much, or why that cannot be said. `what` names the
    `{what}_speedup` / `{what}_diff_pct` keys of `totals`; `label` how the line calls that time."""
    from profaudit.compare.fairness import blocking_messages

    if comparable == "no":
        why = blocking_messages(findings)
        return "not comparable: " + ("; ".join(why[:2]) if why else "the audit found the two sides unfair") + "; no winner declared"
    if totals.get("matched_groups", totals.get("matched_cases")) == 0:
        unit = "kernel" if what == "gpu_time" else "benchmark case"
        return f"nothing comparable: no {unit} appears on both sides, nothing to compare; no winner declared"
    sp = totals.get(f"{what}_speedup")
    diff = totals.get(f"{what}_diff_pct")
    if sp is None or diff is None:
        return "no time on one side: cannot say which is faster"
    sig = totals.get("significance") or {}
    state = sig.get("verdict", "unknown")
    if label is None:
        label = "GPU time" if what == "gpu_time" else "time"
    noise_pct = 100 * _noise_threshold()
    caveat = " (with warnings: see findings)" if comparable == "with-warnings" else ""
    cov = [totals.get("matched_share_baseline_pct"), totals.get("matched_share_candidate_pct")]
    if all(isinstance(x, (int, float)) for x in cov) and min(cov) < 50:
        # most of one side's time is in kernels the other side lacks: the totals may not measure the same work
        # through fmt_pct: a 0.3 % share must not print as "0%" (held nothing)
        caveat += f" (matched kernels hold only {fmt_pct(cov[0])} / {fmt_pct(cov[1])} of the baseline's / candidate's GPU time: check both run the same workload)"
    if state == "unknown" and abs(diff) < noise_pct:
        # One untested measurement per side: a difference this small is within the resolution and
        # run-to-run noise of any GPU timer (the same run read through two tools differs by a few ns)
        return (
            f"candidate {label} {fmt_pct(diff, signed=True)} ({fmt_x(sp)}): within the {fmt_pct(noise_pct)} noise threshold and "
            f"significance unknown ({sig.get('reason') or 'no repeated runs'}); no winner declared{caveat}"
        )
    direction = "faster" if diff < 0 else "slower" if diff > 0 else "as fast"
    head = f"candidate {label} {fmt_pct(diff, signed=True)} ({fmt_x(sp)}): candidate {direction}"
    basis = sig.get("basis") or ""
    p = sig.get("p_value")
    ptxt = f", {p_is(p)}" if isinstance(p, float) and p == p else ""
    lo, hi = sig.get("speedup_ci_low"), sig.get("speedup_ci_high")
    # the interval as every other speedup interval prints ([1.10, 1.40]), not '1.10x-1.40x'
    ci = f", 95% CI {fmt_interval(lo, hi)}" if isinstance(lo, float) and isinstance(hi, float) and lo == lo and hi == hi else ""
    if state == "unknown":
        tail = f"significance unknown ({sig.get('reason') or 'no repeated runs'})"
    elif state == "same":
        tail = f"no difference beyond the noise threshold ({basis}{ptxt}{ci})"
    elif state == "inconclusive":
        tail = f"not significant ({basis}{ptxt}{ci})"
    else:
        tail = f"significant ({basis}{ptxt}{ci})"
    return f"{head}; {tail}{caveat}"


def _noise_threshold() -> float:
    from profaudit.audit.stats import DEFAULT_NOISE_THRESHOLD

    return DEFAULT_NOISE_THRESHOLD


def display_name(name: str, width: int = 60) -> str:
    """A C++ kernel name short enough for a table cell, keeping what tells instances apart.

    Tries, in order: the name; without the return type and with the parameters elided
    (`k<float, 128>(…)`); with the template arguments cut to fit (`k<float, 1…>(…)`); the base
    name alone (`k<…>(…)`). A fuzzy label `a ~ b` shortens each side.
    """
    if name is None:
        return ""
    if len(name) <= width:
        return name
    if " ~ " in name:
        a, b = name.split(" ~ ", 1)
        half = max(8, (width - 3) // 2)
        return f"{display_name(a, half)} ~ {display_name(b, half)}"
    from profaudit.names import normal_form

    base = base_name(name)
    params = "(…)" if "(" in name else ""
    full = normal_form(name)
    lt = full.find("<")
    if "<" in full and "<" not in base and lt >= 0:
        # namespaces inside the arguments cost room and rarely tell instances apart
        args = re.sub(r"(?:\(anonymous namespace\)|[A-Za-z_]\w*)::", "", _template_args(full, lt))
        s = f"{base}<{args}>{params}"
        if len(s) <= width:
            return s
        room = width - len(base) - len(params) - 3
        if room >= 6:
            return f"{base}<{args[: room - 1]}…>{params}"
        s = f"{base}<…>{params}"
    else:
        s = base + params
    return s if len(s) <= width else s[: width - 1] + "…"


def _template_args(s: str, lt: int) -> str:
    depth = 0
    for i in range(lt, len(s)):
        if s[i] == "<":
            depth += 1
        elif s[i] == ">":
            depth -= 1
            if depth == 0:
                return s[lt + 1 : i]
    return s[lt + 1 :]
