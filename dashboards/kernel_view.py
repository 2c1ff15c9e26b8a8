"""A kernel's analysis view (`profaudit.kernel_report`) as Dash components: the same sections,
numbers and rule text as `profaudit kernel-report`, shared by the Kernels page and a roofline
click. The page only lays out what the library computed."""

from __future__ import annotations

from dash import html

from profaudit.dashboards.ui import message, option_label, table


def _table(headers: list[str], rows: list[list[str]], numeric: set[int] = frozenset()) -> html.Table:
    return table(headers, rows, className="tbl kr-table", numeric=numeric)


def section_view(s) -> html.Div:
    from profaudit.fmt import plural
    from profaudit.kernel_report import collect_flags, item_text, rule_line

    parts: list = [html.H4([s.title, " ", html.Code(s.ident, className="muted")])]
    parts += [html.P(html.B(x), className="kr-summary") for x in s.summary]
    if s.items:
        parts.append(_table(["metric", "value", "from"], [[i.label, item_text(i), i.metric or ""] for i in s.items], {1}))
    for t in s.tables:
        parts += [html.P(html.I(t.title)), _table(t.headers, t.rows)]
    if s.missing:
        parts.append(html.Details([html.Summary(f"{plural(len(s.missing), 'metric')} missing: collect with {collect_flags(s)}", className="muted kr-missing"), html.P(", ".join(s.missing), className="muted")]))
    for r in s.rules:
        parts.append(html.Div(rule_line(r), className=f"kr-rule kr-rule-{r.kind or 'rule'}"))
    return html.Div(parts, className="kr-section", id=f"kr-{s.ident}")


def kernel_report_view(ps, profile_id: str, kernel_id: int, id_prefix: str = "kr", title_id: str | None = None) -> html.Div:
    """The analysis view of one kernel, or a message saying why there is none. Sections the
    report did not collect at all are listed once at the end, each with its `--section`."""
    from profaudit.errors import ProfauditError
    from profaudit.kernel_report import collect_flags, kernel_report

    try:
        rep = kernel_report(ps, kernel_id=kernel_id, profile=profile_id)
    except ProfauditError as exc:
        return message(str(exc), "warn")
    head = [
        html.H3(f"{option_label(rep.short_name, 200)} — profile {rep.profile_id}, kernel {rep.kernel_id}", id=title_id or f"{id_prefix}-title"),
        html.P(["launch ", html.B(f"{rep.launch_index + 1} of {rep.launches}"), f" · {rep.source or '—'} · {rep.device or 'device not recorded'}"], className="muted"),
    ]
    head += [message(n, "info") for n in rep.notes]
    shown = [s for s in rep.sections if not s.empty]
    absent = [s for s in rep.sections if s.empty and s.missing]
    body = [section_view(s) for s in shown]
    if absent:
        items = [html.Li([html.B(s.title), f": collect with {collect_flags(s)} ", html.Span(f"({', '.join(s.missing)})", className="muted")]) for s in absent]
        body.append(html.Div([html.H4("Not in this report"), html.Ul(items)], className="kr-section", id=f"{id_prefix}-absent"))
    return html.Div(head + body, className="kernel-report", id=f"{id_prefix}-report")


def pair_view(ps_before, ps_after, name_before: str, name_after: str, top: int = 20) -> html.Div:
    """One matched kernel before and after, side by side, largest moves first
    (`profaudit.kernel_report.compare_kernel_reports`)."""
    from profaudit.errors import ProfauditError
    from profaudit.fmt import fmt_pct, fmt_quantity
    from profaudit.kernel_report import compare_kernel_reports, kernel_report

    try:
        before, after = kernel_report(ps_before, name_before), kernel_report(ps_after, name_after)
    except ProfauditError as exc:
        return message(str(exc), "warn")
    rows = []
    for r in compare_kernel_reports(before, after)[:top]:
        b = r.before if isinstance(r.before, str) else fmt_quantity(r.before, r.unit)
        a = r.after if isinstance(r.after, str) else fmt_quantity(r.after, r.unit)
        ch = "—" if r.change is None else (f"{r.change:+.1f} pts" if r.change_kind == "points" else fmt_pct(r.change, signed=True))
        rows.append([r.section, r.label, b, a, ch])
    head = html.P([html.B(option_label(before.short_name, 120)), f" — kernel {before.kernel_id} before, kernel {after.kernel_id} after; largest moves first (percentages in points)"], className="muted")
    return html.Div([head, _table(["section", "metric", "before", "after", "change"], rows, {2, 3, 4})], id="cp-pair-table")
