"""Audit reports as text (rich), Markdown, HTML and JSON.

All four show the same things in the same order: the verdict and why, the claimed against the
supported speedup, the recomputed speedups per statistic, the two sides, then the findings
(problems first, then what could not be checked, then what passed).
"""

from __future__ import annotations

import html
import io
import json
import math
from typing import Any

from profaudit.audit.findings import Finding, Severity, Status
from profaudit.audit.rules._common import fmt_time, fx
from profaudit.audit.verdict import AuditReport
from profaudit.fmt import MISSING, fmt_interval, md_cell, plural

FORMATS = ("text", "markdown", "html", "json")

_VERDICT_STYLE = {"PASS": "bold green", "WARN": "bold yellow", "INCONCLUSIVE": "bold magenta", "FAIL": "bold red"}
_SEV_STYLE = {Severity.FAIL: "red", Severity.INCONCLUSIVE: "magenta", Severity.WARN: "yellow", Severity.INFO: "dim"}
_VERDICT_MEANING = {
    "PASS": "the evidence supports the claim",
    "WARN": "the claim may hold, with caveats",
    "INCONCLUSIVE": "the evidence cannot decide",
    "FAIL": "the claim is not supported or the comparison is not fair",
}


def render(report: AuditReport, fmt: str = "text", *, color: bool = False, width: int = 110) -> str:
    if fmt == "text":
        return render_text(report, color=color, width=width)
    if fmt in ("markdown", "md"):
        return render_markdown(report)
    if fmt == "html":
        return render_html(report)
    if fmt == "json":
        return render_json(report)
    raise ValueError(f"unknown format {fmt!r}; formats: {', '.join(FORMATS)}")


def render_json(report: AuditReport) -> str:
    return json.dumps(report.as_dict(), indent=1, allow_nan=False, default=str) + "\n"


# ---------------------------------------------------------------------------------------------
# shared pieces
# ---------------------------------------------------------------------------------------------


def _claimed(report: AuditReport) -> str:
    c = report.claim
    if c.speedup is None:
        return "none (measured speedup only)"
    return f"{fx(c.speedup)} ({c.statistic.name if c.statistic else 'statistic not stated'})"


def _supported(report: AuditReport) -> str:
    s = report.supported
    iv = s.interval
    if s.status == "not supported" or iv is None or not math.isfinite(iv.estimate):
        text = f"not supported: {s.reason or s.basis}"
        if not s.comparable:
            text += " (the sides are not comparable, so no speedup claim holds)"
        return text
    rng = f" {fmt_interval(iv.low, iv.high)} at {iv.confidence:.0%}" if math.isfinite(iv.low) and math.isfinite(iv.high) else " (no interval)"
    basis = s.basis
    if s.corrected_by:
        # the lines under the headline name each correction ("corrected by PA407: ..."): the
        # basis's own ", corrected by PA407" would say it twice
        basis = basis.split(", corrected by ")[0]
    text = f"{fx(iv.estimate)}{rng}, {basis}"
    if s.corrected_by:
        text = "corrected: " + text
    return text


def _corrections(report: AuditReport) -> list[str]:
    """One line per correction behind the supported speedup."""
    return list(report.supported.corrected_by)


def _coverage(report: AuditReport) -> tuple[str, list[str]]:
    cov = report.coverage
    if cov is None:
        return "", []
    return cov.line, cov.assumptions


def _speedup_rows(report: AuditReport) -> list[tuple[str, str, str, str]]:
    cmp = report.comparison
    # in cycle space the time-space intervals follow (each interval carries its space)
    shown = list(cmp.intervals.items()) + (list(cmp.time_intervals.items()) if cmp.space == "cycles" else [])
    rows = []
    for name, iv in shown:
        rng = fmt_interval(iv.low, iv.high)
        rows.append((name, fx(iv.estimate), rng, iv.space))
    return rows


def _side_rows(report: AuditReport) -> list[tuple[str, ...]]:
    rows = []
    sr = report.evidence.shared_run
    for se in report.evidence.sides:
        # unknown prints as the one formatter's "—" (it was "?": a third spelling beside "n/a");
        # unnamed but settled by one run of one file, it says so (PA201/PA106 name the file)
        dev = se.get("device") or (f"{MISSING} (one run)" if sr is not None and sr.not_one_device is None else MISSING)
        ts = se.get("time_source") or (f"{MISSING} (one run)" if sr is not None and sr.not_one_clock is None else MISSING)
        if se.has_samples:
            n = f"{se.n:,} steady of {se.times.size:,}" + (f" (+{se.warmup_rows:,} labelled warm-up)" if se.warmup_rows else "")
        elif se.summaries:
            n = f"summaries ({', '.join(se.summaries)})" + (f", n={se.summary_count:,}" if se.summary_count else "")
        else:
            n = "none"
        rows.append((se.role, se.label, fmt_time(se.typical_time_ns()), n, str(dev), str(ts)))
    return rows


def _basis(report: AuditReport) -> str:
    return "reported summaries" if report.comparison.mode == "summaries" else "steady-state samples"


def _stats_lines(report: AuditReport) -> list[str]:
    cmp = report.comparison
    if not cmp.available:
        return [f"speedup not recomputed: {cmp.reason}"]
    lines = []
    if cmp.mann_whitney is not None and cmp.mann_whitney.p_value == cmp.mann_whitney.p_value:
        mw = cmp.mann_whitney
        # a p-value below the smallest double prints as 0, which no test can return
        p = "p < 1e-300" if mw.p_value == 0 else f"p = {mw.p_value:.3g}"
        lines.append(f"Mann-Whitney U: {p}, P(baseline slower than candidate) = {mw.prob_greater:.3f}")
    if cmp.noise:
        lines.append("noise (IQR / median): " + ", ".join(f"{r} {d.rel_iqr:.2%}" for r, d in cmp.noise.items() if d.rel_iqr == d.rel_iqr))
    lines.append(f"noise threshold: {report.evidence.noise_threshold:.1%}; {cmp.space_note}")
    if cmp.method:
        lines.append(f"interval: {cmp.method}")
    return [l for l in lines if l]


def _groups(report: AuditReport) -> tuple[list[Finding], list[Finding], list[Finding]]:
    """Problems, notes (INFO findings) and passes. What a rule could not check is not among them:
    it is coverage, listed once under the assumptions (it was printed twice, as table rows and
    again as assumptions)."""
    problems = report.problems
    notes = sorted((f for f in report.findings if f.status is Status.FAIL and f.severity == Severity.INFO), key=lambda f: f.rule)
    passed = sorted((f for f in report.findings if f.status is Status.PASS), key=lambda f: f.rule)
    return problems, notes, passed


def _rule_names(fs: list[Finding]) -> str:
    """'PA101 warmup-in-timed-region, ...' with a no-break space inside each item, so a wrapped
    list breaks between rules, never between a code and its name."""
    return ", ".join(sorted({f"{f.rule}\u00a0{f.name}" for f in fs}))


def _finding_label(f: Finding) -> str:
    if f.status is Status.UNKNOWN:
        return "cannot check"
    if f.status is Status.PASS:
        return "pass"
    return f.severity.label if f.severity > Severity.INFO else "note"


# ---------------------------------------------------------------------------------------------
# text (rich)
# ---------------------------------------------------------------------------------------------


def render_text(report: AuditReport, *, color: bool = False, width: int = 110) -> str:
    from rich.console import Console

    buf = io.StringIO()
    console = Console(file=buf, force_terminal=color, no_color=not color, width=width, highlight=False, soft_wrap=False)
    print_text(report, console)
    return buf.getvalue()


def print_text(report: AuditReport, console) -> None:
    from rich.table import Table
    from rich.text import Text

    title = Text()
    title.append(f" {report.verdict} ", style=_VERDICT_STYLE[report.verdict] + " reverse")
    title.append(f"  {_VERDICT_MEANING[report.verdict]}")
    console.print(title)
    if report.claim.description:
        print_hanging(console, "claim: ", report.claim.description)
    if report.claim.path:
        print_hanging(console, "claim file: ", str(report.claim.path), style="dim")
    console.print(Text(f"claimed speedup:   {_claimed(report)}"))
    print_hanging(console, "supported speedup: ", _supported(report), style="bold")
    for c in _corrections(report):
        print_hanging(console, "  ", f"corrected by {c}")
    cov_line, assumptions = _coverage(report)
    if cov_line:
        print_hanging(console, "coverage: ", cov_line)
    if report.reasons:
        console.print(Text("why:", style="bold"))
        for r in report.reasons:
            print_hanging(console, "  - ", r)
    console.print()

    sides = Table(title="sides", header_style="bold", title_justify="left", show_lines=False)
    for col in ("side", "label", "typical time", "samples", "device", "time source"):
        sides.add_column(col, overflow="fold")
    for row in _side_rows(report):
        sides.add_row(*row)
    console.print(sides)

    rows = _speedup_rows(report)
    if rows:
        sp = Table(title=f"recomputed speedup (baseline / candidate), {_basis(report)}", header_style="bold", title_justify="left")
        for col, just in (("statistic", "left"), ("speedup", "right"), (f"{report.evidence.confidence:.0%} interval", "right"), ("space", "left")):
            sp.add_column(col, justify=just)
        for r in rows:
            sp.add_row(*r)
        console.print(sp)
    for line in _stats_lines(report):
        print_hanging(console, "", line, style="dim")
    console.print()

    problems, info, passed = _groups(report)
    if problems:
        t = Table(title="findings", header_style="bold", title_justify="left", show_lines=True)
        t.add_column("rule", no_wrap=True)
        t.add_column("severity", no_wrap=True)
        t.add_column("pitfalls", no_wrap=True)
        t.add_column("finding", overflow="fold")
        for f in problems:
            t.add_row(f"{f.rule}\n{f.name}", Text(_finding_label(f), style=_SEV_STYLE[f.severity]), ", ".join(f.pitfalls), f.message)
        console.print(t)
    if info:
        t = Table(title="notes", header_style="bold", title_justify="left")
        t.add_column("rule", no_wrap=True)
        t.add_column("status", no_wrap=True)
        t.add_column("message", overflow="fold")
        for f in info:
            t.add_row(f"{f.rule} {f.name}", Text(_finding_label(f), style="dim"), f.message)
        console.print(t)
    if passed:
        print_hanging(console, "passed: ", _rule_names(passed), style="green")
    if assumptions:
        console.print(Text("assumptions (could not be checked):", style="bold"))
        for a in assumptions:
            print_hanging(console, "  - ", a, style="dim")
    console.print(Text(f"{plural(len(report.rules), 'rule')}, {report.elapsed_s:.2f} s", style="dim"))


def print_hanging(console, lead: str, text: str, style: str = "") -> None:
    """`lead` then `text`, its wrapped lines indented under the text's start (a list item that
    wraps back to column 0 reads as a new paragraph)."""
    import textwrap

    from rich.text import Text

    # wrapped here, not by rich: a rich grid would pad every line with spaces to the full width
    lines = textwrap.wrap(text, width=max(20, console.width - len(lead)), break_long_words=False, break_on_hyphens=False) or [""]
    for i, line in enumerate(lines):
        console.print(Text((lead if i == 0 else " " * len(lead)) + line, style=style), soft_wrap=True)


# ---------------------------------------------------------------------------------------------
# Markdown
# ---------------------------------------------------------------------------------------------


def _md_section(out: list[str], title: str, lines: list[str]) -> None:
    if lines:
        out.extend(["", f"### {title}", "", *lines])


def render_markdown(report: AuditReport) -> str:
    out: list[str] = []
    out.append(f"## profaudit audit: **{report.verdict}** ({_VERDICT_MEANING[report.verdict]})")
    out.append("")
    if report.claim.description:
        out.append(f"- **Claim:** {md_cell(report.claim.description)}")
    out.append(f"- **Claimed speedup:** {md_cell(_claimed(report))}")
    out.append(f"- **Supported speedup:** {md_cell(_supported(report))}")
    for c in _corrections(report):
        out.append(f"  - corrected by {md_cell(c)}")
    cov_line, assumptions = _coverage(report)
    if cov_line:
        out.append(f"- **Coverage:** {md_cell(cov_line)}")
    if report.reasons:
        out.append("- **Why:**")
        for r in report.reasons:
            out.append(f"  - {md_cell(r)}")
    out.append("")
    out.append("### Sides")
    out.append("")
    out.append("| side | label | typical time | samples | device | time source |")
    out.append("|---|---|---:|---|---|---|")
    for row in _side_rows(report):
        out.append("| " + " | ".join(md_cell(c) for c in row) + " |")
    rows = _speedup_rows(report)
    if rows:
        out.append("")
        out.append(f"### Recomputed speedup (baseline / candidate, {_basis(report)})")
        out.append("")
        out.append(f"| statistic | speedup | {report.evidence.confidence:.0%} interval | space |")
        out.append("|---|---:|---:|---|")
        for r in rows:
            out.append("| " + " | ".join(md_cell(c) for c in r) + " |")
    out.append("")
    for line in _stats_lines(report):
        out.append(f"- {md_cell(line)}")
    problems, info, passed = _groups(report)
    if problems:
        out.append("")
        out.append("### Findings")
        out.append("")
        out.append("| rule | severity | pitfalls | finding |")
        out.append("|---|---|---|---|")
        for f in problems:
            out.append(f"| {f.rule} `{f.name}` | {_finding_label(f)} | {', '.join(f.pitfalls)} | {md_cell(f.message)} |")
    _md_section(out, "Notes", [f"- {f.rule} `{f.name}` ({_finding_label(f)}): {md_cell(f.message)}" for f in info])
    _md_section(out, "Passed", [", ".join(f"{f.rule} `{f.name}`" for f in passed)] if passed else [])
    _md_section(out, "Assumptions (could not be checked)", [f"- {md_cell(a)}" for a in assumptions])
    out.append("")
    return "\n".join(out)


# ---------------------------------------------------------------------------------------------
# HTML (one self-contained page)
# ---------------------------------------------------------------------------------------------

_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2rem auto;max-width:70rem;color:#1b1f24;line-height:1.45}
h1{font-size:1.4rem} h2{font-size:1.1rem;margin-top:1.8rem}
.verdict{display:inline-block;padding:.2rem .7rem;border-radius:.3rem;color:#fff;font-weight:700;margin-right:.6rem}
.PASS{background:#1a7f37}.WARN{background:#9a6700}.INCONCLUSIVE{background:#8250df}.FAIL{background:#cf222e}
table{border-collapse:collapse;width:100%;margin:.5rem 0;font-size:.92rem}
th,td{border:1px solid #d0d7de;padding:.3rem .5rem;text-align:left;vertical-align:top}
th{background:#f6f8fa} td.num{text-align:right;font-variant-numeric:tabular-nums}
.sev-fail{color:#cf222e;font-weight:600}.sev-inconclusive{color:#8250df;font-weight:600}.sev-warn{color:#9a6700;font-weight:600}.sev-info{color:#57606a}
.dim{color:#57606a;font-size:.9rem} code{background:#f6f8fa;padding:0 .2rem}
details{margin:.2rem 0} pre{background:#f6f8fa;padding:.5rem;overflow:auto;font-size:.8rem}
"""


def _e(s: Any) -> str:
    return html.escape(str(s))


def render_html(report: AuditReport) -> str:
    p: list[str] = []
    p.append("<!doctype html><html lang='en'><head><meta charset='utf-8'>")
    p.append(f"<title>profaudit audit: {_e(report.verdict)}</title><style>{_CSS}</style></head><body>")
    p.append(f"<h1><span class='verdict {_e(report.verdict)}'>{_e(report.verdict)}</span>{_e(_VERDICT_MEANING[report.verdict])}</h1>")
    if report.claim.description:
        p.append(f"<p><b>Claim:</b> {_e(report.claim.description)}</p>")
    p.append(f"<p><b>Claimed speedup:</b> {_e(_claimed(report))}<br><b>Supported speedup:</b> {_e(_supported(report))}</p>")
    corr = _corrections(report)
    if corr:
        p.append("<ul class=corrections>" + "".join(f"<li>corrected by {_e(c)}</li>" for c in corr) + "</ul>")
    cov_line, assumptions = _coverage(report)
    if cov_line:
        p.append(f"<p><b>Coverage:</b> {_e(cov_line)}</p>")
    if report.reasons:
        p.append("<p><b>Why:</b></p><ul>" + "".join(f"<li>{_e(r)}</li>" for r in report.reasons) + "</ul>")
    p.append("<h2>Sides</h2><table><tr><th>side</th><th>label</th><th>typical time</th><th>samples</th><th>device</th><th>time source</th></tr>")
    for row in _side_rows(report):
        p.append("<tr>" + "".join(f"<td{' class=num' if i == 2 else ''}>{_e(c)}</td>" for i, c in enumerate(row)) + "</tr>")
    p.append("</table>")
    rows = _speedup_rows(report)
    if rows:
        p.append(f"<h2>Recomputed speedup</h2><table><tr><th>statistic</th><th>speedup</th><th>{report.evidence.confidence:.0%} interval</th><th>space</th></tr>")
        for r in rows:
            p.append(f"<tr><td>{_e(r[0])}</td><td class=num>{_e(r[1])}</td><td class=num>{_e(r[2])}</td><td>{_e(r[3])}</td></tr>")
        p.append("</table>")
    p.append("<p class=dim>" + "<br>".join(_e(l) for l in _stats_lines(report)) + "</p>")
    problems, info, passed = _groups(report)

    def finding_rows(fs: list[Finding]) -> str:
        out = ["<table><tr><th>rule</th><th>status</th><th>pitfalls</th><th>finding</th></tr>"]
        for f in fs:
            ev = json.dumps(f.as_dict().get("evidence", {}), indent=1, default=str)
            out.append(
                f"<tr><td>{_e(f.rule)}<br><code>{_e(f.name)}</code></td><td class='sev-{f.severity.label}'>{_e(_finding_label(f))}</td>"
                f"<td>{_e(', '.join(f.pitfalls))}</td><td>{_e(f.message)}<details><summary class=dim>evidence</summary><pre>{_e(ev)}</pre></details></td></tr>"
            )
        out.append("</table>")
        return "".join(out)

    if problems:
        p.append("<h2>Findings</h2>" + finding_rows(problems))
    if info:
        p.append("<h2>Notes</h2>" + finding_rows(info))
    if passed:
        p.append("<h2>Passed</h2>" + finding_rows(passed))
    if assumptions:
        p.append("<h2>Assumptions (could not be checked)</h2><ul>" + "".join(f"<li>{_e(a)}</li>" for a in assumptions) + "</ul>")
    p.append(f"<p class=dim>profaudit, {len(report.rules)} rules, {report.elapsed_s:.2f} s</p></body></html>\n")
    return "".join(p)
