"""Audit: choose a claim given on the command line, or upload a claim with its timing logs, and see
the verdict, the supported speedup with its interval, and every finding with its evidence.

A claim names its files itself; before the audit opens any of them, the dashboard checks that
each lies inside what it was given (see `profaudit.dashboards.access`)."""

from __future__ import annotations

from dash import Input, Output, State, dcc, html, no_update
from dash.exceptions import PreventUpdate

from profaudit.dashboards.ui import guarded, kv_table, message, option_label, page_header, pretty_json, severity_badge, state, table
from profaudit.dashboards.uploads import register_upload_callbacks, upload_box
from profaudit.fmt import fmt_interval, fmt_x

NAME = "Audit"
PATH = "/audit"
DESCRIPTION = "Verdict, findings with evidence and the supported speedup of a claim"
_STATUS_ORDER = {"fail": 0, "unknown": 1, "pass": 2}


def claim_options(st) -> list[dict]:
    return [{"label": option_label(e.label), "value": cid} for cid, e in st.claims.items()]


def layout(**_query):
    st = state()
    opts = claim_options(st)
    return html.Div(
        [
            page_header(NAME, "Is a speedup claim supported by its evidence, and is the comparison fair? Choose a claim file, or upload one together with the timing logs and profiles it names."),
            html.Div(id="au-msg"),
            html.Div(
                [
                    html.Div([html.Label("claim", htmlFor="au-claim"), dcc.Dropdown(id="au-claim", options=opts, value=opts[0]["value"] if opts else None, placeholder="no claim loaded: upload one below")], className="ctl grow"),
                    html.Div([html.Label("select rules", htmlFor="au-select"), dcc.Input(id="au-select", type="text", placeholder="e.g. PA1,PA402", debounce=True)], className="ctl"),
                    html.Div([html.Label("ignore rules", htmlFor="au-ignore"), dcc.Input(id="au-ignore", type="text", placeholder="e.g. PA5", debounce=True)], className="ctl"),
                    html.Button("Run audit", id="au-run", className="btn primary"),
                    html.Button("Download HTML report", id="au-export", className="btn"),
                    dcc.Download(id="au-download"),
                ],
                className="controls",
            ),
            dcc.Loading(html.Div(id="au-result"), type="dot"),
            html.H3("Upload a claim and its files"),
            html.P("Drop the claim YAML together with every file it names (they are stored side by side, so the claim must name them without folders).", className="muted"),
            upload_box("au", "a claim file and the timing logs / profiles it names"),
        ],
        className="page page-audit",
    )


def _interval(d: dict) -> str:
    from profaudit.fmt import fmt_speedup

    est, lo, hi = d.get("estimate"), d.get("low"), d.get("high")
    if est is None:
        return "none"
    conf = d.get("confidence")
    # the one formatter: 2.00x [1.98, 2.30] as the CLI prints it (.3g gave '2x [1.98, 2.3]')
    rng = "" if lo is not None and hi is not None else " (no interval)"
    return f"{fmt_speedup(est, lo, hi)}{rng}{f' at {conf:.0%}' if conf else ''}"


def report_view(rep) -> html.Div:
    from profaudit.fmt import fmt_ns

    d = rep.as_dict()
    verdict = d["verdict"]
    sup = d["supported_speedup"]
    kind = {"PASS": "ok", "WARN": "warn", "INCONCLUSIVE": "warn", "FAIL": "error"}.get(verdict, "info")
    head = html.Div([severity_badge(verdict.lower()), html.Span(f" {d.get('claim') or 'claim'}", className="claim-text")], className=f"verdict verdict-{verdict.lower()}", id="au-verdict")
    claimed = "none (measured speedup only)" if d["claimed_speedup"] is None else f"{fmt_x(d['claimed_speedup'])} ({d['claimed_statistic'] or 'statistic not stated'})"
    supported = _interval(sup) + f" — {sup['basis']}"
    if sup.get("corrected_by"):
        supported += f" (corrected by {', '.join(sup['corrected_by'])})"
    if not sup.get("comparable", True):
        supported += "; the sides are not comparable, so no speedup claim holds"
    summary = kv_table([("verdict", verdict), ("claimed speedup", claimed), ("supported speedup", supported), ("claim file", d.get("claim_file") or "—"), ("rules run", len(d["rules_run"])), ("audit time", fmt_ns(d["elapsed_s"] * 1e9))])  # 4.20 ms, not '0.00 s'
    out = [head, html.Div(summary, id="au-summary")]
    if d["reasons"]:
        out.append(html.Div([message(r, kind) for r in d["reasons"]], id="au-reasons"))
    out += [html.H3("Findings"), findings_table(rep)]
    cmp = d["comparison"]
    if cmp.get("intervals"):
        rows = [[k, fmt_x(v.get("estimate")), fmt_interval(v.get("low"), v.get("high")), v.get("space"), v.get("method")] for k, v in cmp["intervals"].items()]
        out += [html.H3("Speedup by statistic"), table(["statistic", "speedup", "interval", "space", "method"], rows, id="au-speedups")]
    elif cmp.get("reason"):
        out.append(message(f"speedup not recomputed: {cmp['reason']}", "warn"))
    side_rows = []
    for role, s in d["sides"].items():
        side_rows.append([role, s["label"], s["samples"], s["steady_state_samples"], s["warmup_head_samples"], s["labelled_warmup_rows"], fmt_ns(s["typical_time_ns"]), s["device_spec"] or "—"])
    out += [html.H3("Sides"), table(["side", "label", "samples", "steady-state", "warm-up head", "labelled warm-up", "typical time", "device spec"], side_rows, id="au-sides")]
    return html.Div(out)


def findings_table(rep) -> html.Table:
    fs = sorted(rep.findings, key=lambda f: (_STATUS_ORDER[f.status.value], -int(f.severity), f.rule))
    rows = []
    for f in fs:
        d = f.as_dict()
        label = d["severity"] if d["status"] == "fail" else ("pass" if d["status"] == "pass" else f"{d['severity']} (cannot check)" if d["severity"] != "info" else "cannot check")
        badge_kind = d["severity"] if d["status"] == "fail" else d["status"]
        evidence = html.Details([html.Summary("evidence"), html.Pre(pretty_json({k: v for k, v in d.items() if k in ("evidence", "correction", "non_comparable", "pitfalls")}))]) if d.get("evidence") or d.get("correction") else "—"
        rows.append([html.Span(severity_badge(badge_kind), title=label), f"{d['rule']} {d['name']}", d.get("side") or "—", d["message"], evidence])
    return table(["", "rule", "side", "finding", "evidence"], rows, className="tbl findings", id="au-findings")


def _run(cid, select, ignore):
    if not cid:
        from profaudit.errors import UsageError

        raise UsageError("no claim chosen: pass claim files on the command line or upload one below")
    return state().audit(cid, (select or "").strip() or None, (ignore or "").strip() or None)


@guarded(fallback=[None, None], msg_at=1)
def run(n_clicks, cid, select, ignore):
    if not cid:
        return None, message("No claim loaded: pass claim files on the command line, or upload a claim with its files below.", "info")
    return report_view(_run(cid, select, ignore)), ""


@guarded(fallback=[no_update, None], msg_at=1)
def export(n_clicks, cid, select, ignore):
    from profaudit.audit.render import render

    if not n_clicks:
        raise PreventUpdate
    return {"content": render(_run(cid, select, ignore), "html"), "filename": "audit.html", "type": "text/html"}, ""


def after_upload(results):
    st = state()
    opts = claim_options(st)
    new = [cid for cid, e in st.claims.items() if e.origin == "upload" and any(r.ok and r.name == e.path.name for r in results)]
    return opts, (new[-1] if new else no_update)


def register(app) -> None:
    args = [State("au-claim", "value"), State("au-select", "value"), State("au-ignore", "value")]
    app.callback(
        Output("au-result", "children"),
        Output("au-msg", "children"),
        Input("au-run", "n_clicks"),
        Input("au-claim", "value"),
        State("au-select", "value"),
        State("au-ignore", "value"),
    )(run)
    app.callback(Output("au-download", "data"), Output("au-msg", "children", allow_duplicate=True), Input("au-export", "n_clicks"), *args, prevent_initial_call=True)(export)
    register_upload_callbacks(app, "au", extra_outputs=[Output("au-claim", "options"), Output("au-claim", "value")], after=after_upload)
