"""Ranks: the loaded profiles as one distributed run (`profaudit.ranks.DistributedRun`): per-rank
stacked temporal breakdown, the ranks the others waited for, and collective bus bandwidth against
message size under the interconnect ceilings of `device_specs/`."""

from __future__ import annotations

import polars as pl
from dash import Input, Output, dcc, html, no_update

from profaudit.dashboards.ui import empty_figure, frame_rows, guarded, message, page_header, state, table

NAME = "Ranks"
PATH = "/ranks"
DESCRIPTION = "Distributed runs: per-rank breakdown, stragglers, collective bandwidth vs size"
TRACE = "(trace)"
# the stacked parts partition each window: compute + exposed communication + exposed memory + idle
PARTS = (("compute_ns", "compute", "#4c78a8"), ("exposed_communication_ns", "exposed communication", "#e45756"),
         ("exposed_memory_ns", "exposed memory", "#f58518"), ("idle_ns", "idle", "#bab0ac"))
LINK_COLOURS = {"nvlink": "#54a24b", "pcie": "#b279a2", "infiniband": "#9d755d", "xgmi": "#72b7b2"}


def _run():
    from profaudit.ranks import DistributedRun

    st = state()

    def build():
        ps = st.ps
        # the profiles with GPU activity are the ranks; timing logs and the like are not
        with_kernels = [p.profile_id for p in ps if p.tables["kernels"].height]
        return DistributedRun(ps.subset(with_kernels)) if with_kernels else None

    return st.cached(("ranks-run",), build)


def breakdown_figure(bd: pl.DataFrame, window: str) -> dict:
    import plotly.graph_objects as go

    rows = bd.filter(pl.col("step").is_null()) if window == TRACE else bd.filter(pl.col("step") == int(window))
    if rows.height == 0:
        return empty_figure("no GPU activity in this window")
    rows = rows.sort("rank")
    fig = go.Figure()
    x = [str(r) for r in rows["rank"].to_list()]
    for col, label, colour in PARTS:
        fig.add_bar(x=x, y=(rows[col] / 1e6).to_list(), name=label, marker_color=colour,
                    hovertemplate=f"rank %{{x}}<br>{label}: %{{y:.3f}} ms<extra></extra>")
    fig.update_layout(barmode="stack", template="plotly_white", xaxis_title="rank", yaxis_title="ms",
                      title=f"temporal breakdown per rank, {'whole trace' if window == TRACE else 'step ' + window}", legend_orientation="h")
    return fig.to_plotly_json()


def straggler_figure(stragglers: pl.DataFrame) -> dict:
    import plotly.graph_objects as go

    s = stragglers.filter(pl.col("times_last") > 0)
    if s.height == 0:
        return empty_figure("no collective matched on more than one rank with a late arrival")
    fig = go.Figure(go.Bar(x=[str(r) for r in s["rank"].to_list()], y=(s["wait_caused_ns"] / 1e6).to_list(), marker_color="#e45756",
                           customdata=s["times_last"].to_list(),
                           hovertemplate="rank %{x} arrived last %{customdata} times<br>others waited %{y:.3f} ms<extra></extra>"))
    fig.update_layout(template="plotly_white", xaxis_title="rank that arrived last", yaxis_title="wait it caused (ms)",
                      title="stragglers: waiting caused in collectives")
    return fig.to_plotly_json()


def bandwidth_figure(calls: pl.DataFrame, peaks: pl.DataFrame) -> dict:
    import plotly.graph_objects as go

    c = calls.filter(pl.col("msg_bytes").is_not_null() & pl.col("sync_busbw_bytes_per_s").is_not_null())
    if c.height == 0:
        return empty_figure("no collective with a recorded message size")
    fig = go.Figure()
    for kind in sorted(c["collective"].unique().to_list()):
        k = c.filter(pl.col("collective") == kind)
        fig.add_scatter(x=k["msg_bytes"].to_list(), y=(k["sync_busbw_bytes_per_s"] / 1e9).to_list(), mode="markers", name=kind,
                        hovertemplate=f"{kind}<br>%{{x:.3s}}B<br>busbw %{{y:.1f}} GB/s<extra></extra>")
    for link, v in peaks.group_by("link").agg(pl.col("bytes_per_s").min()).sort("link").iter_rows():
        fig.add_hline(y=v / 1e9, line_dash="dash", line_color=LINK_COLOURS.get(link, "#888"),
                      annotation_text=f"{link} {v / 1e9:.0f} GB/s per direction", annotation_position="top left")
    fig.update_layout(template="plotly_white", xaxis_type="log", xaxis_title="message size (bytes, nccl-tests size)",
                      yaxis_title="bus bandwidth once all ranks arrived (GB/s)", title="collective bandwidth vs size", legend_orientation="h")
    return fig.to_plotly_json()


def layout(**_query):
    run = _run()
    head = page_header(NAME, "The loaded traces as one distributed run: what each rank spent its time on, which rank the others "
                             "waited for, and how close the collectives came to the interconnect's peak. Times are on the aligned clock.")
    if run is None:
        return html.Div([head, message("No profile with GPU kernels is loaded: load one trace per rank (rank-N names or "
                                       "distributedInfo inside) or a multi-GPU capture.", "info")], className="page page-ranks")
    # an error here (duplicate ranks, ...) becomes the page's message through the app's safe_layout
    ranks, bd = run.ranks, run.step_breakdown
    steps = sorted(bd["step"].drop_nulls().unique().to_list())
    opts = [{"label": "whole trace", "value": TRACE}] + [{"label": f"step {s}", "value": str(s)} for s in steps]
    from profaudit.ranks import interconnect_peaks

    notes = []
    if ranks.height < 2:
        notes.append(message("Only one rank is loaded: the breakdown is shown, stragglers need two or more.", "info"))
    hdr, rows = frame_rows(run.summary())
    return html.Div(
        [
            head, *notes,
            html.Div([html.Label("window", htmlFor="rk-window"), dcc.Dropdown(id="rk-window", options=opts, value=TRACE, clearable=False)], className="controls"),
            html.Div(id="rk-msg"),
            dcc.Graph(id="rk-breakdown", figure=breakdown_figure(bd, TRACE), config={"displaylogo": False}),
            dcc.Graph(id="rk-stragglers", figure=straggler_figure(run.stragglers), config={"displaylogo": False}),
            dcc.Graph(id="rk-bandwidth", figure=bandwidth_figure(run.calls, interconnect_peaks(ranks)), config={"displaylogo": False}),
            html.H3("Ranks"), table(hdr, rows, id="rk-summary"),
        ],
        className="page page-ranks",
    )


@guarded(fallback=[no_update, None], msg_at=1)
def update(window):
    run = _run()
    if run is None:
        return empty_figure("no run loaded"), ""
    return breakdown_figure(run.step_breakdown, window or TRACE), ""


def register(app) -> None:
    app.callback(Output("rk-breakdown", "figure"), Output("rk-msg", "children"), Input("rk-window", "value"), prevent_initial_call=True)(update)
