"""Overview: what is loaded (profiles with their run metadata, devices, counts, unreadable inputs)
and the audit findings of every loaded claim, by severity."""

from __future__ import annotations

import polars as pl
from dash import Input, Output, dcc, html

from profaudit.dashboards.ui import fmt_num, guarded, message, page_header, severity_badge, state, table
from profaudit.dashboards.uploads import register_upload_callbacks, upload_box

NAME = "Overview"
PATH = "/"
DESCRIPTION = "Loaded profiles, their run metadata, and audit findings by severity"
SEVERITIES = ("fail", "inconclusive", "warn", "info")


def layout(**_query):
    st = state()
    return html.Div(
        [
            page_header(NAME, "Everything the dashboard was given: profiles and timing logs with their run metadata, the devices they ran on, and the claims with their audit findings."),
            html.Div(content(st), id="ov-content"),
            html.H3("Claims and audit findings by severity"),
            dcc.Loading(html.Div(id="ov-audits"), type="dot"),
            dcc.Store(id="ov-version", data=st.version),
            html.H3("Add files"),
            upload_box("ov", "profiles, timing logs and claim files; folder formats as a .zip"),
        ],
        className="page page-overview",
    )


# a profiles table of 10,000 rows is no overview (and slow to send): the first this many, and a count
MAX_PROFILE_ROWS = 500


def content(st) -> list:
    # counts from the library's summary: a dataset given on the command line is not read for them
    sm = st.summary()
    counts = [
        ("profiles", sm.profiles),
        ("kernel rows", sm.rows["kernels"]),
        ("metric rows", sm.rows["metrics"]),
        ("timing samples", sm.rows["samples"]),
        ("ranges", sm.rows["ranges"]),
        ("transfers", sm.rows["transfers"]),
        ("counter samples", sm.rows["counters"]),
        ("claims", len(st.claims)),
    ]
    out: list = [html.Div([html.Div([html.Div(fmt_num(v), className="card-value"), html.Div(k, className="card-label")], className="card", id=f"ov-count-{k.replace(' ', '-')}") for k, v in counts], className="cards")]
    problems = [f"{p}: {why}" if not why.startswith(str(p)) else why for p, why in st.skipped] + list(st.notes)
    if problems:
        out.append(html.Div([message(f"not loaded: {p}", "warn") for p in problems], id="ov-problems"))
    out.append(html.H3("Profiles"))
    out.append(profiles_table(st) if sm.profiles else message("No profiles loaded: pass files or folders on the command line, or upload them below.", "info"))
    if sm.profiles > MAX_PROFILE_ROWS:
        out.append(message(f"the first {fmt_num(MAX_PROFILE_ROWS)} of {fmt_num(sm.profiles)} profiles", "info"))
        # what the shortened table cannot show: where all of them came from
        out.append(table(["source / format", "profiles"], [[k, fmt_num(v)] for k, v in sm.sources.items()], id="ov-sources"))
    if sm.profiles:
        out.append(html.H3("Devices"))
        out.append(devices_table(sm.devices, st.device_specs))
    return out


def _with_origin(md: pl.DataFrame, col: str) -> pl.Expr:
    origin = f"{col}_origin"
    return (
        pl.when(pl.col(col).is_null()).then(pl.lit("—"))
        .when(pl.col(origin).is_null()).then(pl.col(col))
        .otherwise(pl.concat_str([pl.col(col), pl.lit(" ("), pl.col(origin), pl.lit(")")]))
    )


def profiles_table(st) -> html.Table:
    md = st.summary().metadata.head(MAX_PROFILE_ROWS)
    view = md.select(
        "profile_id",
        pl.concat_str([pl.col("source").fill_null("?"), pl.lit(" / "), pl.col("format").fill_null("?")]).alias("source / format"),
        pl.concat_str([pl.col("tool").fill_null("?"), pl.lit(" "), pl.col("tool_version").fill_null("")]).str.strip_chars().alias("tool"),
        pl.col("device_name").fill_null("—").alias("device"),
        pl.col("device_count"),
        pl.concat_str([pl.col("driver_version").fill_null("—"), pl.lit(" / "), pl.col("cuda_version").fill_null("—")]).alias("driver / CUDA"),
        _with_origin(md, "clock_control").alias("clock control"),
        _with_origin(md, "cache_control").alias("cache control"),
        pl.col("kernel_count").alias("kernels"),
        pl.col("sample_count").alias("samples"),
        pl.col("path").fill_null("—").alias("file"),
    )
    rows = [list(r) + [st.origin_of(r[0])] for r in view.iter_rows()]
    return table([*view.columns, "given on"], rows, id="ov-profiles")


def devices_table(names, specs: dict) -> html.Table:
    """Every reported device name (`DatasetSummary.devices`) and the spec (of `specs`, by key) it
    resolves to."""
    from profaudit.specs import resolve_device

    rows = []
    for n in sorted(names):
        m = resolve_device(n, specs=specs)
        rows.append([n, m.spec.key if m.spec else "—", m.spec.name if m.spec else "—", m.reason])
    if not rows:
        rows.append(["(no device named)", "—", "—", "the roofline page can assume one"])
    return table(["reported device", "spec", "spec name", "how matched"], rows, id="ov-devices")


def audit_summary(st) -> html.Div:
    """One row per claim: verdict, triggered findings per severity, facts that could not be checked,
    supported speedup. A claim that cannot be audited shows why."""
    from profaudit.audit import Status

    if not st.claims:
        return message("No claim files loaded. Pass claim files (YAML with baseline and candidate) on the command line, or upload one with its timing logs.", "info")
    rows = []
    for cid, entry in st.claims.items():
        try:
            rep = st.audit(cid, None, None)
        except Exception as exc:  # one bad claim must not hide the others
            from profaudit.dashboards.ui import error_text

            rows.append([entry.label, severity_badge("error"), *["" for _ in SEVERITIES], "", error_text(exc)])
            continue
        triggered = [f for f in rep.findings if f.status is Status.FAIL]
        unknown = [f for f in rep.findings if f.status is Status.UNKNOWN]
        by = {s: sum(1 for f in triggered if f.severity.label == s) for s in SEVERITIES}
        iv = rep.supported.interval
        rows.append([entry.label, severity_badge(rep.verdict.lower()), *[by[s] or "" for s in SEVERITIES], len(unknown) or "", iv.describe() if iv else rep.supported.basis])
    return html.Div(table(["claim", "verdict", *[s.upper() for s in SEVERITIES], "could not check", "supported speedup"], rows, id="ov-audit-table"))


@guarded()
def refresh_audits(_version):
    return audit_summary(state())


def after_upload(_results):
    st = state()
    return content(st), st.version


def register(app) -> None:
    app.callback(Output("ov-audits", "children"), Input("ov-version", "data"))(refresh_audits)
    register_upload_callbacks(app, "ov", extra_outputs=[Output("ov-content", "children"), Output("ov-version", "data")], after=after_upload)
