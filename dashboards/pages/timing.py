"""Timing: per-iteration traces of a benchmark case with warm-up, drift and throttled samples marked
(steady state and drift from the audit's own detectors), SM clock and temperature on a second axis,
and the steady-state distribution per variant (violin and ECDF)."""

from __future__ import annotations

import json

import polars as pl
from dash import Input, Output, State, dcc, html, no_update

from profaudit.dashboards.figures import build_series, series_rows, timing_figures
from profaudit.dashboards.ui import empty_figure, guarded, message, page_header, state, table

NAME = "Timing"
PATH = "/timing"
DESCRIPTION = "Per-iteration times, warm-up, drift, throttling, distributions per variant"
SOURCES = {"samples": "timing logs", "kernels": "kernel launches (profiles)"}


def samples_of(st, source: str) -> pl.DataFrame:
    """Raw timing samples (summary rows left out) from the logs, or kernel launches as samples."""
    from profaudit.samples import raw, samples_from_kernels

    if source == "kernels":
        return st.cached(("kernel-samples",), lambda: samples_from_kernels(st.ps))
    if source != "samples":
        from profaudit.errors import UsageError

        raise UsageError(f"unknown timing source {source!r}")
    return st.cached(("raw-samples",), lambda: raw(st.ps.samples))


def cases(df: pl.DataFrame) -> list[dict]:
    """Dropdown options: one per (benchmark, params), the most samples first."""
    if df.height == 0:
        return []
    g = (
        df.group_by("benchmark", "params")
        .agg(pl.len().alias("n"), pl.col("variant").n_unique().alias("variants"), pl.col("profile_id").n_unique().alias("profiles"))
        .sort(["n", "benchmark"], descending=[True, False])
    )
    out = []
    for b, p, n, v, np_ in g.iter_rows():
        params = "" if p in (None, "{}") else f" {p}"
        variants = f", {v} variants" if v > 1 else ""
        out.append({"label": f"{b or '(unnamed)'}{params} — {n:,} samples, {np_} profile(s){variants}", "value": json.dumps([b, p])})
    return out


def layout(**_query):
    st = state()
    src = "samples" if st.ps.samples.height else "kernels"
    opts = cases(samples_of(st, src))
    return html.Div(
        [
            page_header(NAME, "Times in execution order. Warm-up (labelled by the log or detected by the audit's steady-state test), throttled samples (throttle reasons, or SM clock below 75 % of the highest) and the Theil-Sen drift of the steady part are marked."),
            html.Div(id="tm-msg"),
            html.Div(
                [
                    html.Div([html.Label("times from"), dcc.RadioItems(id="tm-source", options=[{"label": f" {v}", "value": k} for k, v in SOURCES.items()], value=src, inline=True)], className="ctl"),
                    html.Div([html.Label("benchmark case", htmlFor="tm-case"), dcc.Dropdown(id="tm-case", options=opts, value=opts[0]["value"] if opts else None, clearable=False)], className="ctl grow"),
                ],
                className="controls",
            ),
            dcc.Loading(dcc.Graph(id="tm-trace", figure=empty_figure("loading…"), config={"displaylogo": False}), type="dot"),
            html.Div(id="tm-stats"),
            html.Div(
                [
                    html.Div(dcc.Graph(id="tm-violin", figure=empty_figure(""), config={"displaylogo": False}), className="col"),
                    html.Div(dcc.Graph(id="tm-ecdf", figure=empty_figure(""), config={"displaylogo": False}), className="col"),
                ],
                className="two-col",
            ),
        ],
        className="page page-timing",
    )


@guarded(fallback=[no_update, no_update, None], msg_at=2)
def choose_source(source):
    opts = cases(samples_of(state(), source))
    return opts, (opts[0]["value"] if opts else None), ""


_BLANK = empty_figure("")


def update_case(case, source):
    return update(source, case)


@guarded(fallback=[empty_figure("no chart"), _BLANK, _BLANK, no_update, None], msg_at=4)
def update(source, case):
    st = state()
    df = samples_of(st, source)
    if not case:
        what = "timing logs" if source == "samples" else "kernel launches"
        return empty_figure(f"no {what} loaded"), _BLANK, _BLANK, "", message(f"No {what} to show: load a timing log (or a profile with kernels) on the command line or upload one on the Overview page.", "info")
    try:
        bench, params = json.loads(case)
    except (TypeError, ValueError):
        from profaudit.errors import UsageError

        raise UsageError("unknown benchmark case: reload the page") from None
    sel = df.filter((pl.col("benchmark") == bench) if bench is not None else pl.col("benchmark").is_null())
    sel = sel.filter((pl.col("params") == params) if params is not None else pl.col("params").is_null())
    if sel.height == 0:
        return empty_figure("no samples"), _BLANK, _BLANK, "", message("That benchmark case is no longer loaded: reload the page.", "warn")
    series = build_series(sel, _reference_clock(sel))
    trace, violin, ecdf, notes = timing_figures(series)
    hdr, rows = series_rows(series)
    stats = html.Div([*[message(n, "info") for n in notes], table(hdr, rows, id="tm-stats-table")])
    return trace, violin, ecdf, stats, ""


def _reference_clock(sel: pl.DataFrame) -> float | None:
    """The device's boost clock from its spec (as rule PA203 uses), when the device is known."""
    from profaudit.specs import match_device

    names = sel["device_name"].drop_nulls().unique().to_list()
    if len(names) != 1:
        return None
    spec = match_device(names[0])
    return spec.boost_clock_hz / 1e6 if spec is not None and spec.boost_clock_hz else None


def register(app) -> None:
    app.callback(
        Output("tm-case", "options"),
        Output("tm-case", "value"),
        Output("tm-msg", "children", allow_duplicate=True),
        Input("tm-source", "value"),
        prevent_initial_call=True,
    )(choose_source)
    app.callback(
        Output("tm-trace", "figure"),
        Output("tm-violin", "figure"),
        Output("tm-ecdf", "figure"),
        Output("tm-stats", "children"),
        Output("tm-msg", "children"),
        Input("tm-case", "value"),
        State("tm-source", "value"),
    )(update_case)
