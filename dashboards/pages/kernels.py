"""Kernels: every kernel execution in a grid that stays fast at 100k+ rows (AG Grid's infinite row
model: the server sorts, filters and sends one block at a time), column choice, CSV export of the
filtered view, and a kernel's metrics on click."""

from __future__ import annotations

import polars as pl
import dash_ag_grid as dag
from dash import Input, Output, State, dcc, html, no_update
from dash.exceptions import PreventUpdate

from profaudit import schema
from profaudit.dashboards import grid
from profaudit.dashboards.ui import guarded, kv_table, message, option_label, page_header, state

NAME = "Kernels"
PATH = "/kernels"
DESCRIPTION = "Every kernel execution: sort, filter, choose columns, export, inspect metrics"

BLOCK_ROWS = 100
MAX_BLOCK_ROWS = 1000
PREFERRED = (
    "profile_id", "kernel_id", "short_name", "duration_ns", "grid_size", "block_size", "registers_per_thread",
    "shared_mem_bytes", "dram_bytes", "l2_bytes", "flops_total", "sm_clock_hz", "achieved_occupancy_pct",
    "stream", "device_name", "op_name", "nvtx_range", "start_ns",
)
_ID_COLUMNS = {"kernel_id", "stream", "device_id", "context_id", "process_id", "correlation_id"}
# Formatters defined in assets/dashAgGridFunctions.js.
_INT_FMT = "pafInt(params.value)"
_ID_FMT = "pafId(params.value)"
_FLOAT_FMT = "pafFloat(params.value)"
METRIC_COLUMNS = ("section", "metric", "unit", "value", "value_str", "instance", "instance_key", "kind")


def all_columns() -> list[str]:
    return schema.KERNELS.names


def default_columns(k: pl.DataFrame) -> list[str]:
    """Preferred columns that hold data, so an XLA profile does not open on 15 empty columns."""
    if k.height == 0:
        return [c for c in PREFERRED[:6]]
    have = {c for c in all_columns() if k[c].null_count() < k.height}
    cols = [c for c in PREFERRED if c in have]
    return cols or ["profile_id", "kernel_id", "name", "duration_ns"]


def column_defs(columns: list[str]) -> list[dict]:
    defs = []
    for c in columns:
        col = schema.KERNELS.column(c)
        d: dict = {"field": c, "headerName": c, "headerTooltip": f"{col.meaning}{' [' + col.unit + ']' if col.unit else ''}"}
        if col.dtype in (pl.Int64, pl.Float64):
            fmt = _ID_FMT if c in _ID_COLUMNS else _INT_FMT if col.dtype == pl.Int64 else _FLOAT_FMT
            d.update(filter="agNumberColumnFilter", type="rightAligned", valueFormatter={"function": fmt}, width=140)
        else:
            d.update(filter="agTextColumnFilter", tooltipField=c, width=260 if c in ("name", "short_name", "op_name", "nvtx_range") else 160)
        if c == "short_name":
            d["pinned"] = "left"
        defs.append(d)
    return defs


def layout(**_query):
    st = state()
    k = st.kernels()
    cols = default_columns(k)
    return html.Div(
        [
            page_header(NAME, "One row per kernel execution. Sort and filter in the column headers (the server does the work, so 100k rows stay fast); click a row for its analysis (speed of light, memory, occupancy, stalls, ncu rules) and raw metrics."),
            html.Div(id="kn-msg"),
            html.Div(
                [
                    html.Div([html.Label("columns", htmlFor="kn-columns"), dcc.Dropdown(id="kn-columns", options=[{"label": c, "value": c} for c in all_columns()], value=cols, multi=True)], className="ctl grow"),
                    html.Button("Export CSV", id="kn-export", className="btn"),
                    dcc.Download(id="kn-download"),
                ],
                className="controls",
            ),
            html.Div(f"{k.height:,} kernels" if k.height else "no kernels loaded", id="kn-count", className="muted"),
            dag.AgGrid(
                id="kn-grid",
                rowModelType="infinite",
                columnDefs=column_defs(cols),
                defaultColDef={"sortable": True, "filter": True, "resizable": True, "floatingFilter": True, "filterParams": {"maxNumConditions": 2}},
                dashGridOptions={
                    "cacheBlockSize": BLOCK_ROWS,
                    "maxBlocksInCache": 40,
                    "infiniteInitialRowCount": BLOCK_ROWS,
                    "rowBuffer": 10,
                    "tooltipShowDelay": 400,
                    "rowSelection": {"mode": "singleRow", "checkboxes": False, "enableClickSelection": True},
                },
                getRowId="params.data._rid",
                style={"height": "520px", "width": "100%"},
            ),
            dcc.Store(id="kn-view", data={}),
            dcc.Loading(html.Div(id="kn-detail", className="detail"), type="dot"),
        ],
        className="page page-kernels",
    )


def view_rows(st, sort_model, filter_model) -> pl.Series:
    """Row positions of the filtered, sorted view (cached per view: 8 bytes a row, not a copy)."""
    k = st.kernels()
    return st.cached(("kernels-view", grid.view_key(sort_model, filter_model)), lambda: grid.apply(k, sort_model, filter_model)["_row"])


def view(st, sort_model, filter_model, start: int = 0, length: int | None = None) -> pl.DataFrame:
    rows = view_rows(st, sort_model, filter_model)
    if start or length is not None:
        rows = rows.slice(start, length)
    # `_row` is the row's position in the kernels table (with_row_index), so gather by it
    return st.kernels()[rows.to_numpy()] if rows.len() else st.kernels().clear()


@guarded(fallback=[{"rowData": [], "rowCount": 0}, no_update, no_update, None], msg_at=3)
def get_rows(request):
    if not request:
        raise PreventUpdate
    st = state()
    sort_model, filter_model = request.get("sortModel") or [], request.get("filterModel") or {}
    n = view_rows(st, sort_model, filter_model).len()
    start = max(0, int(request.get("startRow") or 0))
    end = int(request.get("endRow") or start + BLOCK_ROWS)
    end = max(start, min(end, start + MAX_BLOCK_ROWS))
    block = view(st, sort_model, filter_model, start, end - start).with_columns(pl.col("_row").cast(pl.Utf8).alias("_rid"))
    total = st.kernels().height
    count = f"{n:,} of {total:,} kernels" if n != total else f"{total:,} kernels"
    return {"rowData": grid.rows_for_grid(block), "rowCount": n}, {"sortModel": sort_model, "filterModel": filter_model}, count, ""


@guarded(fallback=[no_update, None], msg_at=1)
def set_columns(columns):
    cols = [c for c in (columns or []) if c in schema.KERNELS.names]
    if not cols:
        cols = ["profile_id", "kernel_id", "name"]
    return column_defs(cols), ""


@guarded(fallback=[no_update, None], msg_at=1)
def export_csv(n_clicks, view_state, columns):
    if not n_clicks:
        raise PreventUpdate
    st = state()
    view_state = view_state or {}
    v = view(st, view_state.get("sortModel") or [], view_state.get("filterModel") or {})
    cols = [c for c in (columns or []) if c in schema.KERNELS.names] or schema.KERNELS.names
    return {"content": v.select(cols).write_csv(), "filename": "kernels.csv", "type": "text/csv"}, ""


@guarded()
def show_kernel(clicked):
    if not clicked or clicked.get("rowId") in (None, ""):
        raise PreventUpdate
    st = state()
    try:
        row_key = int(clicked["rowId"])
    except (TypeError, ValueError):
        raise PreventUpdate from None
    return kernel_detail(st, row_key)


def kernel_detail(st, row_key: int) -> html.Div:
    """The kernel's analysis view (sections as ncu lays them out), then its row and, folded, every
    raw metric the profile holds for it."""
    from profaudit.dashboards.kernel_view import kernel_report_view

    k = st.kernels().filter(pl.col("_row") == row_key)
    if k.height == 0:
        return message("That kernel is no longer loaded (an upload changed the data): reload the page.", "warn")
    r = k.row(0, named=True)
    pid, kid = r["profile_id"], r["kernel_id"]
    fields = [(c, _field(c, r[c])) for c in schema.KERNELS.names if r.get(c) is not None]
    m = st.ps.metrics
    mk = m.filter((pl.col("profile_id") == pid) & (pl.col("kernel_id") == kid)) if m.height and kid is not None else m.clear()
    parts: list = [kernel_report_view(st.ps, pid, kid, id_prefix="kn-detail", title_id="kn-detail-title")]
    roof = _roofline_line(st, pid, kid)
    if roof:
        parts.append(html.P(roof, className="roof-line"))
    raw = html.Div([html.Div([html.H4("Kernel row"), kv_table(fields)], className="col"), html.Div(_metrics_block(mk), className="col wide")], className="two-col")
    parts.append(html.Details([html.Summary(f"Kernel row and all {mk.height:,} raw metrics"), raw], className="raw-metrics"))
    return html.Div(parts)


_SCALED_UNITS = {"ns", "byte", "Hz", "flop", "%"}


def _field(column: str, value):
    """A kernels-table value as the one formatter prints it: times, bytes, clocks and FLOPs with
    a unit (visibly rounded), counts exact."""
    from profaudit.fmt import fmt_quantity

    unit = schema.KERNELS.column(column).unit
    # start/end are positions on the profile's time base, not durations: printed exact
    if unit in _SCALED_UNITS and column not in ("start_ns", "end_ns") and isinstance(value, (int, float)) and not isinstance(value, bool):
        return fmt_quantity(value, unit)
    return value


def _metrics_block(mk: pl.DataFrame) -> list:
    if mk.height == 0:
        return [html.H4("Metrics"), message("This profile recorded no per-kernel metrics for this kernel (only Nsight Compute reports carry them).", "info")]
    rows = grid.rows_for_grid(mk.select(METRIC_COLUMNS))
    defs = [{"field": c, "headerName": c, "filter": "agNumberColumnFilter" if c in ("value", "instance") else "agTextColumnFilter", "width": 300 if c == "metric" else 130} for c in METRIC_COLUMNS]
    return [
        html.H4(f"Metrics ({mk.height:,})"),
        dag.AgGrid(id="kn-metrics", rowData=rows, columnDefs=defs, defaultColDef={"sortable": True, "filter": True, "resizable": True, "floatingFilter": True}, style={"height": "420px"}),
    ]


def _roofline_line(st, pid: str, kid) -> str | None:
    from profaudit.fmt import fmt_pct, fmt_si

    try:
        rf = st.roofline(None, None, False)
    except Exception:  # the detail panel still shows the kernel when its roofline cannot be computed
        return None
    row = rf.filter((pl.col("profile_id") == pid) & (pl.col("kernel_id") == kid))
    if row.height == 0:
        return None
    r = row.row(0, named=True)
    if r.get("device_key") is None:
        return f"Roofline: {r.get('roof_note') or 'no device spec'}"
    achieved = r.get("achieved_flops_per_s")
    if achieved is None:  # without FLOPs there is no achieved rate to state, only why
        return f"Roofline on {r['device_key']}: {r.get('roof_note') or 'no FLOP counts'}"
    bits = [f"Roofline on {r['device_key']}: achieved {fmt_si(achieved, 'FLOP/s')}"]
    if r.get("roof_pct_at_boost") is not None:
        bits.append(f"{fmt_pct(r['roof_pct_at_boost'], False)} of the datasheet roof ({r.get('bound_at_boost')}-bound)")
    if r.get("roof_pct_at_kernel_clock") is not None:
        bits.append(f"{fmt_pct(r['roof_pct_at_kernel_clock'], False)} at its measured clock ({r.get('bound_at_kernel_clock')}-bound)")
    if r.get("roof_note"):
        bits.append(r["roof_note"])
    return "; ".join(bits)


def register(app) -> None:
    app.callback(
        Output("kn-grid", "getRowsResponse"),
        Output("kn-view", "data"),
        Output("kn-count", "children"),
        Output("kn-msg", "children"),
        Input("kn-grid", "getRowsRequest"),
        prevent_initial_call=True,
    )(get_rows)
    app.callback(
        Output("kn-grid", "columnDefs"),
        Output("kn-msg", "children", allow_duplicate=True),
        Input("kn-columns", "value"),
        prevent_initial_call=True,
    )(set_columns)
    app.callback(
        Output("kn-download", "data"),
        Output("kn-msg", "children", allow_duplicate=True),
        Input("kn-export", "n_clicks"),
        State("kn-view", "data"),
        State("kn-columns", "value"),
        prevent_initial_call=True,
    )(export_csv)
    app.callback(Output("kn-detail", "children"), Input("kn-grid", "cellClicked"), prevent_initial_call=True)(show_kernel)
