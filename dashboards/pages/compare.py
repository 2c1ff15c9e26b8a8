"""Compare: two loaded profiles (or timing logs) side by side: whether the pair is fair first, then
the matched kernels, where the time went (waterfall), roofline movement and what was added or
removed; the report is `profaudit.compare`'s, rendered with its own table and figure builders."""

from __future__ import annotations

from dash import Input, Output, State, dcc, html, no_update
from dash.exceptions import PreventUpdate

from profaudit.dashboards.ui import guarded, kv_table, message, option_label, page_header, severity_badge, state, table

NAME = "Compare"
PATH = "/compare"
DESCRIPTION = "Two profiles compared: fairness first, matched kernels, waterfall, roofline movement"
NO_DEVICE = "__none__"
TOP = 25


def _profiles(st) -> list[dict]:
    from profaudit.fmt import plural

    md = st.ps.metadata
    out = []
    for pid, src, fmt, dev, k, s in md.select("profile_id", "source", "format", "device_name", "kernel_count", "sample_count").iter_rows():
        what = plural(k, "kernel") if k else plural(s, "sample") if s else "no kernels or samples"
        kind = "kernels" if k else "samples" if s else None
        out.append({"profile_id": pid, "label": st.label(pid), "kind": kind, "format": fmt or src, "device": dev, "text": f"{st.label(pid)} — {fmt or src or '?'}, {dev or 'device ?'}, {what}"})
    return out


def _options(st) -> list[dict]:
    return [{"label": option_label(p["text"]), "value": p["profile_id"]} for p in _profiles(st)]


def default_pair(st) -> tuple[str | None, str | None]:
    """Two profiles of the same kind, format and device where there are such (see
    `labels.sensible_pair`), else the first two loaded."""
    from profaudit.dashboards.labels import sensible_pair

    profiles = _profiles(st)
    pair = sensible_pair(profiles)
    if pair:
        return pair
    ids = [p["profile_id"] for p in profiles]
    return (ids[0] if ids else None), (ids[1] if len(ids) > 1 else None)


def layout(**_query):
    from profaudit.audit import META_KEYS
    from profaudit.compare import MATCH_MODES

    st = state()
    opts = _options(st)
    base, cand = default_pair(st)
    return html.Div(
        [
            page_header(NAME, "Choose a baseline and a candidate. Whether the two can be compared fairly comes first; then which kernels match, what each match gained or lost, and where the total difference went."),
            html.Div(id="cp-msg"),
            html.Div(
                [
                    html.Div([html.Label("baseline", htmlFor="cp-baseline"), dcc.Dropdown(id="cp-baseline", options=opts, value=base)], className="ctl grow"),
                    html.Div([html.Label("candidate", htmlFor="cp-candidate"), dcc.Dropdown(id="cp-candidate", options=opts, value=cand)], className="ctl grow"),
                ],
                className="controls",
            ),
            html.Div(
                [
                    html.Div([html.Label("matching", htmlFor="cp-match"), dcc.Dropdown(id="cp-match", options=[{"label": m, "value": m} for m in MATCH_MODES], value="auto", clearable=False)], className="ctl"),
                    html.Div([html.Label("intended differences", htmlFor="cp-intended"), dcc.Dropdown(id="cp-intended", options=[{"label": k, "value": k} for k in META_KEYS], value=[], multi=True)], className="ctl grow"),
                    html.Div([html.Label("device for roofline", htmlFor="cp-device"), dcc.Dropdown(id="cp-device", options=[{"label": "as reported", "value": NO_DEVICE}] + [{"label": k, "value": k} for k in st.device_keys()], value=NO_DEVICE, clearable=False)], className="ctl"),
                    html.Button("Compare", id="cp-run", className="btn primary"),
                    html.Button("Download HTML report", id="cp-export", className="btn"),
                    dcc.Download(id="cp-download"),
                ],
                className="controls",
            ),
            dcc.Loading(html.Div(id="cp-result"), type="dot"),
        ],
        className="page page-compare",
    )


def _comparison(baseline, candidate, match, intended, device):
    if not baseline or not candidate:
        from profaudit.errors import UsageError

        raise UsageError("choose a baseline and a candidate")
    return state().compare(baseline, candidate, match or "auto", tuple(intended or ()), None if device in (None, NO_DEVICE) else device)


@guarded(fallback=[None, None], msg_at=1)
def run(n_clicks, baseline, candidate, match, intended, device):
    if not n_clicks:
        raise PreventUpdate
    return report(_comparison(baseline, candidate, match, intended, device), baseline, candidate), ""


@guarded(fallback=[no_update, None], msg_at=1)
def export(n_clicks, baseline, candidate, match, intended, device):
    if not n_clicks:
        raise PreventUpdate
    c = _comparison(baseline, candidate, match, intended, device)
    return {"content": c.render("html", top=TOP), "filename": "comparison.html", "type": "text/html"}, ""


def _pair_names(c, group: str | int | None) -> tuple[str, str] | None:
    m = c.matched
    if group is None or m.height == 0:
        return None
    hit = m.filter(m["group_id"] == int(group))
    if hit.height == 0:
        return None
    r = hit.row(0, named=True)
    return (r["names_b"][0], r["names_c"][0]) if r["names_b"] and r["names_c"] else None


def pair_section(c, baseline: str, candidate: str) -> list:
    """A matched kernel's analysis, before and after (the kernel-report view as a pair); the
    kernels that took most of the baseline's time first."""
    from profaudit.dashboards.kernel_view import pair_view

    m = c.matched
    if m.height == 0:
        return []
    m = m.sort("total_b_ns", descending=True, nulls_last=True).head(200)
    opts = [{"label": option_label(lab or "?", 120), "value": str(g)} for g, lab in m.select("group_id", "label").iter_rows()]
    first = _pair_names(c, opts[0]["value"])
    st = state()
    view = pair_view(st.profile(baseline), st.profile(candidate), *first) if first else message("No kernel pair to show.", "info")
    return [
        html.H3("Kernel pair: before and after"),
        html.Div([html.Label("matched kernel", htmlFor="cp-pair"), dcc.Dropdown(id="cp-pair", options=opts, value=opts[0]["value"], clearable=False)], className="ctl grow"),
        dcc.Loading(html.Div(view, id="cp-pair-view"), type="dot"),
    ]


@guarded(fallback=[None, None], msg_at=1)
def show_pair(group, baseline, candidate, match, intended, device):
    from profaudit.dashboards.kernel_view import pair_view

    if group is None:
        raise PreventUpdate
    c = _comparison(baseline, candidate, match, intended, device)
    names = _pair_names(c, group)
    if names is None:
        raise PreventUpdate
    st = state()
    return pair_view(st.profile(baseline), st.profile(candidate), *names), ""


def report(c, baseline: str | None = None, candidate: str | None = None) -> html.Div:
    from profaudit.compare import render
    from profaudit.compare.figures import comparison_figures

    secs = render.sections(c, TOP, 70)
    kind = {"yes": "ok", "with-warnings": "warn", "no": "error", "unchecked": "warn"}.get(c.comparable, "info")
    out = [html.Div([html.B(f"comparable: {c.comparable}. "), c.verdict], className=f"msg msg-{kind}", id="cp-verdict")]
    title, hdr, rows = secs[0]
    fair = [[severity_badge(r[0]), *r[1:]] for r in rows]
    out += [html.H3(title), table(hdr, fair, id="cp-findings") if fair else message("No fairness finding.", "ok")]
    out += [html.H3("The pair"), kv_table(render.header_lines(c))]
    figs = comparison_figures(c, 15)
    graphs = []
    if figs.get("waterfall") is not None:
        graphs.append(dcc.Graph(id="cp-waterfall", figure=figs["waterfall"], config={"displaylogo": False}))
    if figs.get("roofline") is not None:
        graphs.append(dcc.Graph(id="cp-roofline", figure=figs["roofline"], config={"displaylogo": False}))
    out += graphs
    for title, hdr, rows in secs[1:]:
        out += [html.H3(title), table(hdr, rows) if rows else html.P("none", className="muted")]
    if baseline and candidate:
        out += pair_section(c, baseline, candidate)
    if c.notes:
        out += [html.H3("Notes"), html.Ul([html.Li(n) for n in c.notes])]
    return html.Div(out)


def register(app) -> None:
    common = [State("cp-baseline", "value"), State("cp-candidate", "value"), State("cp-match", "value"), State("cp-intended", "value"), State("cp-device", "value")]
    app.callback(Output("cp-result", "children"), Output("cp-msg", "children"), Input("cp-run", "n_clicks"), *common, prevent_initial_call=True)(run)
    app.callback(Output("cp-pair-view", "children"), Output("cp-msg", "children", allow_duplicate=True), Input("cp-pair", "value"), *common, prevent_initial_call=True)(show_pair)
    app.callback(Output("cp-download", "data"), Output("cp-msg", "children", allow_duplicate=True), Input("cp-export", "n_clicks"), *common, prevent_initial_call=True)(export)
