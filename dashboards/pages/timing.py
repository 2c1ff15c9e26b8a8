"""Timing: per-iteration traces of a benchmark case with warm-up, drift and throttled samples marked
(steady state and drift from the audit's own detectors), SM clock and temperature on a second axis,
and the steady-state distribution per variant (violin and ECDF)."""

from __future__ import annotations

import hashlib
import json

import polars as pl
from dash import Input, Output, State, dcc, html, no_update
from dash.exceptions import PreventUpdate

from profaudit.dashboards.figures import build_series, series_rows, timing_figures
from profaudit.dashboards.ui import OPTION_LABEL_MAX, empty_figure, guarded, message, option_label, page_header, state, table

NAME = "Timing"
PATH = "/timing"
DESCRIPTION = "Per-iteration times, warm-up, drift, throttling, distributions per variant"
SOURCES = {"samples": "timing logs", "kernels": "kernel launches (profiles)"}


def samples_of(st, source: str) -> pl.DataFrame:
    """Timing samples from the logs (raw samples and the summary rows of logs that kept only
    summaries), or kernel launches as samples."""
    from profaudit.samples import samples_from_kernels

    if source == "kernels":
        return st.cached(("kernel-samples",), lambda: samples_from_kernels(st.ps))
    if source != "samples":
        from profaudit.errors import UsageError

        raise UsageError(f"unknown timing source {source!r}")
    return st.ps.samples


def cases(df: pl.DataFrame) -> list[dict]:
    """Dropdown options: one per (benchmark, params), the most samples first."""
    if df.height == 0:
        return []
    from profaudit.fmt import plural

    g = (
        df.group_by("benchmark", "params")
        .agg(pl.col("statistic").is_null().sum().alias("n"), pl.len().alias("rows"), pl.col("variant").n_unique().alias("variants"), pl.col("profile_id").n_unique().alias("profiles"))
        # cases with per-iteration samples first (they have a trace), then summary-only ones
        .sort(["n", "rows", "benchmark"], descending=[True, True, False])
    )
    out = []
    seen: dict[str, int] = {}
    for b, p, n, rows, v, np_ in g.iter_rows():
        variants = f", {v} variants" if v > 1 else ""
        what = plural(n, "sample") if n else f"summary only ({plural(rows, 'statistic')})"
        tail = f" — {what}, {plural(np_, 'profile')}{variants}"
        # name and parameters are shortened apart, so both keep the end that tells cases apart
        params = "" if p in (None, "{}") else " " + option_label(p, 48)
        label = option_label(b or "(unnamed)", max(40, OPTION_LABEL_MAX - len(params) - len(tail) - 8)) + params
        seen[label] = seen.get(label, 0) + 1
        if seen[label] > 1:  # shortened names that still collide get a number
            label = f"{label} #{seen[label]}"
        out.append({"label": label + tail, "value": case_key(b, p)})
    return out


def case_key(bench: str | None, params: str | None) -> str:
    """A short option value for a case: the dropdown indexes values as well as labels, and a
    value holding a 2,000-character mangled kernel name stalls the browser like a long label."""
    return "case-" + hashlib.blake2b(json.dumps([bench, params]).encode(), digest_size=10).hexdigest()


def case_of(st, source: str, key: str) -> tuple[str | None, str | None] | None:
    """(benchmark, params) of the case `key` names among the loaded ones, or None."""

    def table() -> dict:
        pairs = samples_of(st, source).select("benchmark", "params").unique().iter_rows()
        return {case_key(b, p): (b, p) for b, p in pairs}

    return st.cached(("timing-case-keys", source), table).get(key) if isinstance(key, str) else None


# A dropdown of thousands of options (a Kineto trace has a case per kernel name and launch shape)
# takes the browser seconds to build; the cases with the most samples are listed and typing in the
# box asks the server for the others.
MAX_CASE_OPTIONS = 200


def case_options(st, source: str, search: str | None = None, keep: str | None = None) -> tuple[list[dict], int]:
    """(at most MAX_CASE_OPTIONS options, how many cases match): the cases whose benchmark,
    parameters or label contain `search` (case-insensitive; all when empty), most samples first, with the
    option `keep` (the chosen case) always among them."""
    opts = every = st.cached(("timing-cases", source), lambda: cases(samples_of(st, source)))
    needle = (search or "").strip().lower()
    if needle:
        def hit(o: dict) -> bool:
            b, p = case_of(st, source, o["value"]) or (None, None)
            return needle in (b or "").lower() or needle in (p or "").lower() or needle in o["label"].lower()

        opts = [o for o in opts if hit(o)]
    shown = opts[:MAX_CASE_OPTIONS]
    if keep and all(o["value"] != keep for o in shown):
        kept = next((o for o in every if o["value"] == keep), None)
        if kept is not None:
            shown = [kept, *shown]
    return shown, len(opts)


def _hint(shown: int, total: int) -> str:
    if total <= shown:
        return ""
    return f"the {shown:,} cases with the most samples of {total:,} are listed: type part of a kernel or benchmark name to find the others"


def layout(**_query):
    st = state()
    src = "samples" if st.ps.samples.height else "kernels"
    opts, total = case_options(st, src)
    return html.Div(
        [
            page_header(NAME, "Times in execution order. Warm-up (labelled by the log or detected by the audit's steady-state test), throttled samples (throttle reasons, or SM clock below 75 % of the highest) and the Theil-Sen drift of the steady part are marked."),
            html.Div(id="tm-msg"),
            html.Div(
                [
                    html.Div([html.Label("times from"), dcc.RadioItems(id="tm-source", options=[{"label": f" {v}", "value": k} for k, v in SOURCES.items()], value=src, inline=True)], className="ctl"),
                    html.Div([html.Label("benchmark case", htmlFor="tm-case"), dcc.Dropdown(id="tm-case", options=opts, value=opts[0]["value"] if opts else None, clearable=False), html.Div(_hint(len(opts), total), id="tm-case-hint", className="muted")], className="ctl grow"),
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


@guarded(fallback=[no_update, no_update, None, no_update], msg_at=2)
def choose_source(source):
    opts, total = case_options(state(), source)
    return opts, (opts[0]["value"] if opts else None), "", _hint(len(opts), total)


@guarded(fallback=[no_update, None], msg_at=1)
def search_cases(search, source, current):
    if search is None:
        raise PreventUpdate
    opts, _ = case_options(state(), source, search, keep=current)
    return opts, ""


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
    found = case_of(st, source, case)
    if found is None:
        return empty_figure("no samples"), _BLANK, _BLANK, "", message("That benchmark case is no longer loaded: reload the page.", "warn")
    bench, params = found
    sel = df.filter((pl.col("benchmark") == bench) if bench is not None else pl.col("benchmark").is_null())
    sel = sel.filter((pl.col("params") == params) if params is not None else pl.col("params").is_null())
    if sel.height == 0:
        return empty_figure("no samples"), _BLANK, _BLANK, "", message("That benchmark case is no longer loaded: reload the page.", "warn")
    raw = sel.filter(pl.col("statistic").is_null())
    if raw.is_empty():
        return _summary_view(sel)
    sel = raw
    series = build_series(sel, _reference_clock(st, sel), st.labels())
    trace, violin, ecdf, notes = timing_figures(series)
    hdr, rows = series_rows(series)
    stats = html.Div([*[message(n, "info") for n in notes], table(hdr, rows, id="tm-stats-table")])
    return trace, violin, ecdf, stats, ""


def _summary_view(sel: pl.DataFrame):
    """A case whose log kept summary statistics only: its reported intervals, and why there is
    no trace or distribution."""
    from profaudit.dashboards.timing_summary import intervals, summary_figure, summary_frame, summary_table_rows

    rows = intervals(summary_frame(sel))
    if not rows:
        stats = ", ".join(sorted(sel["statistic"].drop_nulls().unique().to_list()))
        why = f"This case has summary statistics only ({stats}) and none of them is a time with a spread to draw."
        return empty_figure("summary statistics only"), _BLANK, _BLANK, message(why, "info"), ""
    hdr, body = summary_table_rows(rows)
    note = message(
        "This log kept summary statistics only (no per-iteration samples), so there is no trace, violin or ECDF: "
        "each measurement is drawn as the interval the tool reported.", "info")
    return summary_figure(rows), _BLANK, _BLANK, html.Div([note, table(hdr, body, id="tm-stats-table")]), ""


def _reference_clock(st, sel: pl.DataFrame) -> float | None:
    """The device's boost clock from its spec (as rule PA203 uses), when the device is known.

    Matched against the dashboard's specs, so a device added with --spec counts here too."""
    from profaudit.specs import resolve_device

    names = sel["device_name"].drop_nulls().unique().to_list()
    if len(names) != 1:
        return None
    spec = resolve_device(names[0], specs=st.device_specs).spec
    return spec.boost_clock_hz / 1e6 if spec is not None and spec.boost_clock_hz else None


def register(app) -> None:
    app.callback(
        Output("tm-case", "options"),
        Output("tm-case", "value"),
        Output("tm-msg", "children", allow_duplicate=True),
        Output("tm-case-hint", "children"),
        Input("tm-source", "value"),
        prevent_initial_call=True,
    )(choose_source)
    app.callback(
        Output("tm-case", "options", allow_duplicate=True),
        Output("tm-msg", "children", allow_duplicate=True),
        Input("tm-case", "search_value"),
        State("tm-source", "value"),
        State("tm-case", "value"),
        prevent_initial_call=True,
    )(search_cases)
    app.callback(
        Output("tm-trace", "figure"),
        Output("tm-violin", "figure"),
        Output("tm-ecdf", "figure"),
        Output("tm-stats", "children"),
        Output("tm-msg", "children"),
        Input("tm-case", "value"),
        State("tm-source", "value"),
    )(update_case)
