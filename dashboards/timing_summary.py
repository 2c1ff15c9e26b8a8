"""Timing logs that kept summary statistics only (nvbench mean/stdev, Google Benchmark aggregates,
pytest-benchmark stats): one interval per measurement instead of a per-iteration trace.

The interval drawn is the spread the tool reported (mean ± one standard deviation, else min to
max), labelled as such: it is not a confidence interval, and none can be formed without the
samples (a 95 % interval of the mean would need the sample count *and* independent samples)."""

from __future__ import annotations

from typing import Sequence

import polars as pl

from profaudit.dashboards.figures import _base_layout, plain
from profaudit.fmt import MISSING, fmt_int, fmt_ns

_KEYS = ("profile_id", "variant", "time_source")
_ALIASES = {"std": "stdev", "stddev": "stdev", "avg": "mean", "average": "mean", "p50": "median"}


def summary_frame(sel: pl.DataFrame) -> pl.DataFrame:
    """One row per reported measurement (profile, variant, time source, and repeat), with a
    column per statistic in ns (mean, median, stdev, min, max where reported) and sample_count."""
    s = sel.filter(pl.col("statistic").is_not_null() & pl.col("duration_ns").is_not_null())
    if s.is_empty():
        return pl.DataFrame()
    stat = pl.col("statistic").str.to_lowercase()
    s = s.with_columns(stat.replace(_ALIASES).alias("stat"))
    keys = [k for k in _KEYS if k in s.columns]
    # a log may report the same statistic several times for one key (repeats, unrecorded axes):
    # the n-th mean pairs with the n-th stdev
    s = s.with_columns(pl.int_range(pl.len()).over([*keys, "stat"]).alias("entry"))
    wide = s.pivot(on="stat", index=[*keys, "entry"], values="duration_ns", aggregate_function="first")
    n = s.group_by([*keys, "entry"]).agg(pl.col("sample_count").max().alias("sample_count"))
    return wide.join(n, on=[*keys, "entry"], how="left").sort([*keys, "entry"], nulls_last=True)


def intervals(wide: pl.DataFrame) -> list[dict]:
    """Per row: label, centre (ns) and what it is, low/high (ns) and what they are."""
    out = []
    cols = set(wide.columns)
    # one profile: its id on every line tells nothing apart
    keys = [k for k in _KEYS if k in cols and not (k == "profile_id" and wide[k].n_unique() == 1)]
    for r in wide.iter_rows(named=True):
        centre, what = (r.get("median"), "median") if r.get("median") is not None else (r.get("mean"), "mean")
        lo = hi = None
        how = "no spread reported"
        if r.get("mean") is not None and "stdev" in cols and r.get("stdev") is not None:
            centre, what = r["mean"], "mean"
            lo, hi, how = r["mean"] - r["stdev"], r["mean"] + r["stdev"], "mean ± 1 stdev (spread, not a confidence interval)"
        elif r.get("min") is not None and r.get("max") is not None:
            lo, hi, how = r["min"], r["max"], "min to max"
        if centre is None:
            continue
        label = " · ".join(str(r[k]) for k in keys if r.get(k) not in (None, "")) or "measurement"
        if r.get("entry"):
            label += f" #{r['entry'] + 1}"
        out.append({"label": label, "centre": centre, "centre_is": what, "low": lo, "high": hi, "interval_is": how, "n": r.get("sample_count")})
    return out


def summary_figure(rows: Sequence[dict]) -> dict:
    """Horizontal intervals, one line per measurement."""
    xs = [r["centre"] for r in rows]
    minus = [r["centre"] - r["low"] if r["low"] is not None else 0 for r in rows]
    plus = [r["high"] - r["centre"] if r["high"] is not None else 0 for r in rows]
    labels = [plain(r["label"]) for r in rows]
    trace = {
        "type": "scatter", "mode": "markers", "x": [x / 1e3 for x in xs], "y": labels, "name": "reported",
        "error_x": {"type": "data", "symmetric": False, "array": [p / 1e3 for p in plus], "arrayminus": [m / 1e3 for m in minus], "thickness": 2},
        "marker": {"size": 9},
        "text": [plain(f"{r['centre_is']} {fmt_ns(r['centre'])}; {r['interval_is']}") for r in rows],
        "hovertemplate": "%{y}<br>%{text}<extra></extra>",
    }
    return {
        "data": [trace],
        "layout": _base_layout(
            title={"text": "Reported summaries (no per-iteration samples in this log)", "font": {"size": 15}},
            xaxis={"title": {"text": "time (µs)"}},
            yaxis={"automargin": True, "autorange": "reversed"},
            height=max(260, 90 + 34 * len(rows)),
            margin={"l": 10, "r": 10, "t": 40, "b": 50},
            showlegend=False,
        ),
    }


def summary_table_rows(rows: Sequence[dict]) -> tuple[list[str], list[list[str]]]:
    hdr = ["measurement", "centre", "interval", "interval is", "samples summarised"]
    body = []
    for r in rows:
        iv = f"{fmt_ns(r['low'])} – {fmt_ns(r['high'])}" if r["low"] is not None else MISSING
        body.append([r["label"], f"{r['centre_is']} {fmt_ns(r['centre'])}", iv, r["interval_is"], fmt_int(r["n"]) if r["n"] is not None else MISSING])
    return hdr, body
