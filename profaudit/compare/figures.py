"""Plotly figures of a comparison: the waterfall of the time difference and the side-by-side
roofline. Built from the Comparison's frames only (the dashboard reuses them)."""

from __future__ import annotations


import polars as pl

from profaudit.compare.core import Comparison
from profaudit.compare.kernels import display_name
from profaudit.fmt import MISSING, fmt_pct, fmt_si, time_unit


def waterfall(c: Comparison, top: int = 15):
    """Baseline total -> the `top` largest contributions -> the rest -> candidate total."""
    import plotly.graph_objects as go

    t = c.totals
    if c.kind == "kernels":
        start, end, what = t["baseline"]["gpu_time_ns"], t["candidate"]["gpu_time_ns"], "GPU time"
    else:
        from profaudit.compare.timing import totals_label

        start, end, what = t["baseline"]["time_ns"], t["candidate"]["time_ns"], totals_label(t)
    contrib = c.contributions
    head = contrib.head(top)
    rest = float(contrib.slice(top)["diff_ns"].sum()) if contrib.height > top else 0.0
    unit, scale = time_unit(max(abs(start), abs(end), 1.0))
    x = ["baseline"]
    y = [start / scale]
    measure = ["absolute"]
    hover = [f"baseline {what}"]
    from profaudit.compare.render import shortener

    short = shortener(c)
    for r in head.iter_rows(named=True):
        x.append(f"{r['rank']}. {short(r['item'], 40)}")
        y.append(r["diff_ns"] / scale)
        measure.append("relative")
        hover.append(f"{r['kind']}: {r['item'][:200]}")
    if contrib.height > top:
        x.append(f"{contrib.height - top} more")
        y.append(rest / scale)
        measure.append("relative")
        hover.append("the remaining items")
    x.append("candidate")
    y.append(end / scale)
    measure.append("total")
    hover.append(f"candidate {what}")
    fig = go.Figure(
        go.Waterfall(
            x=x,
            y=y,
            measure=measure,
            hovertext=hover,
            decreasing={"marker": {"color": "#1b7f2a"}},
            increasing={"marker": {"color": "#b00020"}},
            totals={"marker": {"color": "#4a6fa5"}},
            connector={"line": {"color": "#999"}},
        )
    )
    fig.update_layout(
        title=f"Where the time went ({what}, {unit}; green = candidate saves time)",
        yaxis_title=unit,
        showlegend=False,
        height=460,
        margin={"l": 60, "r": 20, "t": 50, "b": 160},
        xaxis={"tickangle": -35},
    )
    return fig


def roofline_figure(c: Comparison, top: int = 15):
    """Two panels, baseline and candidate, each with its device's ceilings and the matched groups."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    rf = c.roofline
    if rf.height == 0:
        return None
    labels = rf.select("group_id", "label").unique("group_id", maintain_order=True).head(top)
    keep = labels["group_id"].to_list()
    rf = rf.filter(pl.col("group_id").is_in(keep))
    fig = make_subplots(rows=1, cols=2, subplot_titles=("baseline", "candidate"), shared_yaxes=True)
    palette = ["#4a6fa5", "#d1495b", "#edae49", "#00798c", "#30638e", "#66a182", "#8d96a3", "#2e4057", "#a05195", "#f95d6a"]
    colours = {g: palette[i % len(palette)] for i, g in enumerate(keep)}
    for col, side in ((1, "baseline"), (2, "candidate")):
        sub = rf.filter(pl.col("side") == side)
        for r in sub.iter_rows(named=True):
            ai, perf = r.get("intensity_flop_per_byte"), r.get("achieved_flop_per_s")
            if ai is None or perf is None or ai <= 0 or perf <= 0:
                continue
            fig.add_trace(
                go.Scatter(
                    x=[ai], y=[perf], mode="markers", name=display_name(r["label"], 40), legendgroup=str(r["group_id"]),
                    showlegend=(col == 1), marker={"size": 11, "color": colours[r["group_id"]]},
                    hovertext=f"{r['label'][:200]}<br>{fmt_pct(r.get('pct_of_roof'))} of roof, bound: {r.get('binding') or MISSING}",
                ),
                row=1, col=col,
            )
        for ceiling in _ceilings(sub):
            fig.add_trace(go.Scatter(x=ceiling["x"], y=ceiling["y"], mode="lines", line={"color": "#888", "dash": ceiling["dash"]}, name=ceiling["name"], showlegend=False, hoverinfo="name"), row=1, col=col)
    fig.update_xaxes(type="log", title_text="FLOP / byte")
    # both panels share one log axis; setting the type on the first alone leaves the second linear
    fig.update_yaxes(type="log")
    fig.update_yaxes(title_text="FLOP/s", col=1)
    fig.update_layout(title="Roofline before and after", height=480, margin={"l": 60, "r": 20, "t": 60, "b": 50})
    return fig


def _ceilings(sub: pl.DataFrame) -> list[dict]:
    """Roof lines from the peak compute and bandwidth columns the roofline frame carries."""
    out = []
    if sub.height == 0 or "peak_flop_per_s" not in sub.columns or "peak_bytes_per_s" not in sub.columns:
        return out
    ai = [v for v in sub["intensity_flop_per_byte"].to_list() if v and v > 0]
    if not ai:
        return out
    lo, hi = min(ai) / 10, max(ai) * 10
    seen = set()
    for peak, bw in sub.select("peak_flop_per_s", "peak_bytes_per_s").iter_rows():
        if not peak or not bw or (peak, bw) in seen:
            continue
        seen.add((peak, bw))
        ridge = peak / bw
        xs = [lo, min(max(ridge, lo), hi), hi]
        ys = [min(peak, bw * x) for x in xs]
        out.append({"x": xs, "y": ys, "dash": "solid", "name": f"roof: {fmt_si(peak, 'FLOP/s')}, {fmt_si(bw, 'B/s')}"})
    return out


def comparison_figures(c: Comparison, top: int = 15) -> dict:
    figs = {"waterfall": None, "roofline": None}
    if c.contributions.height:
        figs["waterfall"] = waterfall(c, min(top, 25))
    figs["roofline"] = roofline_figure(c, top)
    return figs


def to_div(fig, first: bool, plotlyjs: str = "embed") -> str:
    """A figure as an HTML div; the first one carries plotly.js (inline by default, so the file
    works offline; or a CDN / shared-file reference, see `profaudit.plotly_assets`)."""
    from profaudit.plotly_assets import include_arg

    return fig.to_html(full_html=False, include_plotlyjs=include_arg(plotlyjs) if first else False, config={"displaylogo": False})


__all__ = ["waterfall", "roofline_figure", "comparison_figures", "to_div"]
