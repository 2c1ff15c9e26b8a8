"""Timeline: one profile's kernels and transfers per device and stream and its ranges per host
thread, zoomable; the server decimates the visible window (`profaudit.timeline_view.decimate`) so
a trace of any size draws a bounded number of bars, and re-draws finer as you zoom in."""

from __future__ import annotations

import polars as pl
from dash import Input, Output, dcc, html, no_update

from profaudit.dashboards.ui import empty_figure, guarded, message, option_label, page_header, state

NAME = "Timeline"
PATH = "/timeline"
DESCRIPTION = "Kernels per device/stream and ranges per thread on one zoomable time axis"
MAX_SEGMENTS = 2000
COLOURS = {"kernel": "#4c78a8", "transfer": "#f58518"}


def _options(st) -> list[dict]:
    out = []
    for p in st.ps:
        n = sum(p.tables[t].filter(pl.col("start_ns").is_not_null()).height for t in ("kernels", "transfers", "ranges"))
        if n:
            out.append({"label": option_label(f"{p.profile_id} — {p.metadata.get('format') or p.metadata.get('source') or '?'}, {n:,} timed events"), "value": p.profile_id})
    return out


def _events(pid: str) -> pl.DataFrame:
    from profaudit.timeline_view import timeline_events

    st = state()
    return st.cached(("timeline-events", pid), lambda: timeline_events(st.ps[pid]))


def figure(ev: pl.DataFrame, x0_ns: float | None = None, x1_ns: float | None = None) -> tuple[dict, str]:
    """The chart of the window [x0, x1] (ns from the profile's first event) and a line saying what it shows."""
    import plotly.graph_objects as go

    from profaudit.timeline_view import decimate

    if ev.height == 0:
        return empty_figure("no timed kernels, transfers or ranges in this profile"), ""
    seg, gap = decimate(ev, x0_ns, x1_ns, max_segments=MAX_SEGMENTS)
    lanes = ev.select("lane", "lane_order").unique().sort("lane_order", "lane")["lane"].to_list()
    fig = go.Figure()
    for kind in sorted(seg["kind"].unique().to_list()):
        s = seg.filter(pl.col("kind") == kind)
        fig.add_bar(
            y=s["lane"].to_list(), base=(s["start_ns"] / 1e6).to_list(), x=((s["end_ns"] - s["start_ns"]).clip(lower_bound=1) / 1e6).to_list(),
            orientation="h", name=kind, marker_color=COLOURS.get(kind, "#9d755d"),
            customdata=list(zip(s["name"].str.slice(0, 120).to_list(), s["count"].to_list(), (s["busy_ns"] / 1e6).to_list())),
            hovertemplate="%{customdata[0]}<br>%{customdata[1]} event(s), busy %{customdata[2]:.4g} ms<br>%{base:.6g} ms + %{x:.4g} ms<extra>" + kind + "</extra>",
        )
    fig.update_layout(
        template="plotly_white", barmode="overlay", bargap=0.2, height=max(300, 28 * len(lanes) + 120), uirevision="timeline",
        xaxis_title="ms from the first event", legend_orientation="h", margin={"l": 180, "r": 20, "t": 30, "b": 40},
        yaxis={"categoryorder": "array", "categoryarray": lanes[::-1], "type": "category"},
    )
    if x0_ns is not None and x1_ns is not None:
        fig.update_xaxes(range=[x0_ns / 1e6, x1_ns / 1e6])
    shown = int(seg["count"].sum())
    note = f"{shown:,} events in view" + (f", merged into {seg.height:,} bars at {gap / 1e3:.3g} µs resolution (zoom in for detail)" if gap else ", each drawn")
    return fig.to_plotly_json(), note


def layout(**_query):
    st = state()
    opts = _options(st)
    head = page_header(NAME, "One profile on a time axis: kernels and transfers per device and stream, ranges (NVTX, API calls, CPU ops) per host thread. Zoom with the mouse; the window is re-drawn at finer detail.")
    if not opts:
        return html.Div([head, message("No loaded profile has timed kernels, transfers or ranges (timing logs and Nsight Compute reports have none).", "info")], className="page page-timeline")
    ev = _events(opts[0]["value"])
    fig, note = figure(ev)
    return html.Div(
        [
            head,
            html.Div([html.Label("profile", htmlFor="tl-profile"), dcc.Dropdown(id="tl-profile", options=opts, value=opts[0]["value"], clearable=False)], className="controls"),
            html.Div(id="tl-msg"),
            html.P(note, id="tl-note", className="note"),
            dcc.Graph(id="tl-graph", figure=fig, config={"displaylogo": False, "scrollZoom": True}),
        ],
        className="page page-timeline",
    )


@guarded(fallback=[no_update, no_update, None], msg_at=2)
def update(pid, relayout):
    if not pid:
        return no_update, no_update, None
    ev = _events(pid)
    x0 = x1 = None
    from dash import ctx
    from dash.exceptions import MissingCallbackContextException

    try:
        trig = ctx.triggered_id
    except MissingCallbackContextException:  # called directly (tests)
        trig = "tl-graph" if relayout else None
    # a new profile starts at its whole span; a zoom re-draws the window it names
    r = (relayout or {}) if trig == "tl-graph" else {}
    if "xaxis.range[0]" in r and "xaxis.range[1]" in r and not r.get("xaxis.autorange"):
        x0, x1 = float(r["xaxis.range[0]"]) * 1e6, float(r["xaxis.range[1]"]) * 1e6
    fig, note = figure(ev, x0, x1)
    return fig, note, None


def register(app) -> None:
    app.callback(
        Output("tl-graph", "figure"),
        Output("tl-note", "children"),
        Output("tl-msg", "children"),
        Input("tl-profile", "value"),
        Input("tl-graph", "relayoutData"),
        prevent_initial_call=True,
    )(update)
