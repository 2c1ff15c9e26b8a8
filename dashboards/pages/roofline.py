"""Roofline: the hierarchical roofline of the loaded kernels (DRAM, L2, L1 intensities), ceilings
per precision and memory level at the datasheet clock and at the clock the kernels were measured at,
the device as reported or overridden, WebGL points for many kernels; a click shows the kernel."""

from __future__ import annotations

import polars as pl
from dash import Input, Output, State, dcc, html, no_update
from dash.exceptions import PreventUpdate

from profaudit.dashboards.figures import roofline_figure
from profaudit.dashboards.ui import empty_figure, guarded, kv_table, message, option_label, page_header, state
from profaudit.schema import MEMORY_LEVELS, PRECISIONS

NAME = "Roofline"
PATH = "/roofline"
DESCRIPTION = "Hierarchical roofline with ceilings at the datasheet and the measured clock"
AS_REPORTED = "__reported__"


def _specs(st, rf: pl.DataFrame) -> dict:
    # the roofline matched devices against the state's specs, so every device_key is one of them
    keys = [k for k in rf["device_key"].unique(maintain_order=True).to_list() if k] if rf.height else []
    return {k: st.device_specs[k] for k in keys}


def layout(**_query):
    from profaudit.specs import BANDWIDTH_LEVELS

    st = state()
    pids = st.kernel_profile_ids()
    used, levels_avail, measured = set(), list(MEMORY_LEVELS), False
    try:
        rf = st.roofline(pids, None, False) if pids else None
    except Exception:  # the page still opens; the chart callback reports the problem
        rf = None
    if rf is not None and rf.height:
        for s in rf["flops_precisions"].drop_nulls().unique().to_list():
            used.update(s.split("+"))
        specs = _specs(st, rf)
        extra = {lv for sp in specs.values() for lv in sp.levels()}
        levels_avail = [lv for lv in BANDWIDTH_LEVELS if lv in MEMORY_LEVELS or lv in extra]
        measured = rf["kernel_clock_hz"].null_count() < rf.height
    precisions_default = [p for p in PRECISIONS if p in used] or ["fp32", "fp16_tensor", "bf16_tensor", "tf32_tensor"]
    devices = [{"label": "as each profile reports", "value": AS_REPORTED}] + [{"label": k, "value": k} for k in st.device_keys()]
    clocks_default = ["boost", "kernel"] if measured else ["boost"]
    # The first chart comes with the page (no second round trip before anything is drawn); the
    # callback redraws it when a control changes.
    figure, notes, view, msg = (None if v is no_update else v for v in update(pids, AS_REPORTED, list(MEMORY_LEVELS), precisions_default, clocks_default, []))
    return html.Div(
        [
            page_header(NAME, "Each kernel appears once per memory level: arithmetic intensity at that level against the FLOP/s it achieved. Ceilings are the device's peaks; toggle levels, precisions and clocks, or assume another device."),
            html.Div(msg, id="rf-msg"),
            html.Div(
                [
                    html.Div([html.Label("profiles", htmlFor="rf-profiles"), dcc.Dropdown(id="rf-profiles", options=[{"label": option_label(st.label(p)), "value": p} for p in pids], value=pids, multi=True)], className="ctl grow"),
                    html.Div([html.Label("device", htmlFor="rf-device"), dcc.Dropdown(id="rf-device", options=devices, value=AS_REPORTED, clearable=False)], className="ctl"),
                ],
                className="controls",
            ),
            html.Div(
                [
                    html.Div([html.Label("memory levels"), dcc.Checklist(id="rf-levels", options=[{"label": f" {lv}", "value": lv} for lv in levels_avail], value=list(MEMORY_LEVELS), inline=True)], className="ctl"),
                    html.Div([html.Label("precisions (compute ceilings)"), dcc.Checklist(id="rf-precisions", options=[{"label": f" {p}", "value": p} for p in PRECISIONS], value=precisions_default, inline=True)], className="ctl grow"),
                    html.Div([html.Label("ceilings at"), dcc.Checklist(id="rf-clocks", options=[{"label": " datasheet clock", "value": "boost"}, {"label": " measured clock", "value": "kernel"}], value=clocks_default, inline=True)], className="ctl"),
                    html.Div([html.Label("peaks"), dcc.Checklist(id="rf-sparse", options=[{"label": " 2:4 sparse", "value": "sparse"}], value=[], inline=True)], className="ctl"),
                ],
                className="controls",
            ),
            dcc.Loading(dcc.Graph(id="rf-graph", figure=figure, config={"displaylogo": False}), type="dot"),
            html.Div(notes, id="rf-notes"),
            dcc.Store(id="rf-view", data=view),
            dcc.Store(id="rf-zoom"),
            html.Div(id="rf-detail", className="detail"),
        ],
        className="page page-roofline",
    )


def _frame(st, pids, device, sparse):
    dev = None if device in (None, "", AS_REPORTED) else device
    if dev is not None and dev not in st.device_keys():
        from profaudit.errors import UsageError

        raise UsageError(f"no device spec {dev!r}")
    return st.roofline(list(pids or []), dev, bool(sparse))


def _triggered():
    from dash import ctx
    from dash.exceptions import MissingCallbackContextException

    try:
        return ctx.triggered_id
    # called directly (tests), or by the page layout served with the app layout (no callback)
    except (MissingCallbackContextException, LookupError):
        return None


def _cpu_only(rf: pl.DataFrame) -> bool:
    names = rf["device_name"].drop_nulls() if "device_name" in rf.columns else pl.Series([], dtype=pl.Utf8)
    return names.len() > 0 and bool(names.str.to_lowercase().str.contains("cpu").all())


def view_from_relayout(relayout: dict | None, current: list | None) -> list | None:
    """The visible log10 range [x0, x1, y0, y1] after a zoom or pan (None: the whole chart)."""
    if not relayout:
        return current
    if relayout.get("xaxis.autorange") or relayout.get("yaxis.autorange") or relayout.get("autosize"):
        return None
    view = list(current) if current else [None, None, None, None]
    for i, ax in ((0, "xaxis"), (2, "yaxis")):
        rng = relayout.get(f"{ax}.range")
        lo, hi = (rng[0], rng[1]) if isinstance(rng, (list, tuple)) and len(rng) == 2 else (relayout.get(f"{ax}.range[0]"), relayout.get(f"{ax}.range[1]"))
        if lo is not None and hi is not None:
            view[i], view[i + 1] = float(lo), float(hi)
    return view if all(v is not None for v in view) else current


@guarded(fallback=[empty_figure("no chart"), no_update, no_update, None], msg_at=3)
def update(pids, device, levels, precisions, clocks, sparse, relayout=None, view=None):
    st = state()
    zoomed = _triggered() == "rf-zoom"
    new_view = view_from_relayout(relayout, view) if zoomed else view
    if not pids:
        return empty_figure("choose at least one profile with kernels"), message("No profile with kernels is selected.", "info"), None, ""
    rf = _frame(st, pids, device, "sparse" in (sparse or []))
    if zoomed and new_view == view:
        return no_update, no_update, no_update, no_update
    res = _figure(st, rf, pids, device, sparse, levels, precisions, clocks, new_view)
    if zoomed and res.sent == res.points:
        # every point is already in the chart: plotly zooms on its own
        return no_update, no_update, new_view, no_update
    if res.points == 0 and rf.height and _cpu_only(rf):
        # an empty chart says nothing: the demo's embedded samples were captured without a GPU
        why = "These profiles are CPU-only (their kernels ran on the host CPU): a roofline needs GPU (or TPU/Trainium) kernels with FLOPs and bytes. Load an Nsight Compute report or a GPU trace to see one."
        return empty_figure("CPU-only samples: no GPU roofline"), message(why, "info"), new_view, ""
    notes = [message(n, "info") for n in res.notes]
    reasons = rf.filter(pl.col("roof_note").is_not_null()).group_by("roof_note").len().sort("len", descending=True) if rf.height else rf
    if reasons.height:
        rows = [html.Li(f"{n:,} kernels: {why}") for why, n in reasons.head(8).iter_rows()]
        notes.append(html.Details([html.Summary(f"{int(reasons['len'].sum()):,} of {rf.height:,} kernels have a partial or no roofline: why"), html.Ul(rows)], className="notes", open=res.points == 0))
    return res.figure, notes, new_view, ""


def _figure_key(pids, device, sparse, levels, precisions, clocks, view) -> tuple:
    return ("roofline-figure", tuple(pids or []), device, bool(sparse), tuple(levels or []), tuple(precisions or []), tuple(clocks or []), tuple(view) if view else None)


def _figure(st, rf, pids, device, sparse, levels, precisions, clocks, view):
    """The chart for these controls, built once per data version: every visit to the page draws
    the same figure, and building it for 100k kernels costs more than serving it. A click maps
    its point back to a kernel through the same result's rows (see point_row)."""

    def build():
        frame = _frame(st, pids, device, "sparse" in (sparse or [])) if rf is None else rf
        return roofline_figure(frame, _specs(st, frame), levels=levels or [], precisions=precisions or [], clocks=clocks or [], sparse="sparse" in (sparse or []), view=tuple(view) if view else None, labels=st.labels())

    return st.cached(_figure_key(pids, device, sparse, levels, precisions, clocks, view), build)


def trace_rows(st, pids, device, sparse, levels, precisions, clocks, view) -> list:
    """Per trace of the chart drawn for these controls, the roofline rows of its points (the
    figure is deterministic in them, so a lost cache entry is rebuilt identically)."""
    return _figure(st, None, pids, device, sparse, levels, precisions, clocks, view).rows


def point_row(st, point: dict, pids, device, sparse, levels, precisions, clocks, view) -> int | None:
    """The roofline row a clicked point stands for: its customdata when the click carries it,
    else its trace's rows at its point index (WebGL clicks lose typed-array customdata)."""
    cd = point.get("customdata")
    if isinstance(cd, (list, tuple)):
        cd = cd[0] if cd else None
    if cd is not None:
        try:
            return int(cd)
        except (TypeError, ValueError):
            pass
    curve, pi = point.get("curveNumber"), point.get("pointIndex", point.get("pointNumber"))
    if curve is None or pi is None or levels is None:
        return None
    rows = trace_rows(st, pids, device, sparse, levels, precisions, clocks, view)
    if not 0 <= int(curve) < len(rows) or rows[int(curve)] is None or not 0 <= int(pi) < len(rows[int(curve)]):
        return None
    return int(rows[int(curve)][int(pi)])


@guarded()
def show_point(click, pids, device, sparse, levels=None, precisions=None, clocks=None, view=None):
    """A clicked point: the kernel's analysis view (as on the Kernels page) and its roofline row."""
    from profaudit.dashboards.kernel_view import kernel_report_view

    if not click or not click.get("points"):
        raise PreventUpdate
    st = state()
    idx = point_row(st, click["points"][0], pids, device, sparse, levels, precisions, clocks, view)
    if idx is None:
        raise PreventUpdate
    rf = _frame(st, pids, device, "sparse" in (sparse or []))
    try:
        r = rf.row(int(idx), named=True)
    except (IndexError, ValueError, TypeError):
        raise PreventUpdate from None
    shown = [(c, v) for c, v in r.items() if v is not None]
    return html.Div([
        kernel_report_view(st.ps, r["profile_id"], r["kernel_id"], id_prefix="rf-kr", title_id="rf-detail-title"),
        html.Details([html.Summary("Roofline row (every column)"), kv_table(shown)], open=False),
    ])


# The relayout events the server would ignore (view_from_relayout keeps the view) stop in the
# browser: plotly reports {"autosize": true} once it has drawn a chart, and a round trip for it
# would hold the chart's loading state (and the page's first render) for nothing.
ZOOM_FILTER = """function (relayout, view) {
    if (!relayout) { return window.dash_clientside.no_update; }
    var axes = Object.keys(relayout).some(function (k) { return k.indexOf("xaxis.") === 0 || k.indexOf("yaxis.") === 0; });
    return axes || (relayout.autosize && view) ? relayout : window.dash_clientside.no_update;
}"""


def register(app) -> None:
    app.clientside_callback(ZOOM_FILTER, Output("rf-zoom", "data"), Input("rf-graph", "relayoutData"), State("rf-view", "data"), prevent_initial_call=True)
    app.callback(
        Output("rf-graph", "figure"),
        Output("rf-notes", "children"),
        Output("rf-view", "data"),
        Output("rf-msg", "children"),
        Input("rf-profiles", "value"),
        Input("rf-device", "value"),
        Input("rf-levels", "value"),
        Input("rf-precisions", "value"),
        Input("rf-clocks", "value"),
        Input("rf-sparse", "value"),
        Input("rf-zoom", "data"),
        State("rf-view", "data"),
        prevent_initial_call=True,
    )(update)
    app.callback(
        Output("rf-detail", "children"),
        Input("rf-graph", "clickData"),
        State("rf-profiles", "value"),
        State("rf-device", "value"),
        State("rf-sparse", "value"),
        State("rf-levels", "value"),
        State("rf-precisions", "value"),
        State("rf-clocks", "value"),
        State("rf-view", "data"),
        prevent_initial_call=True,
    )(show_point)
