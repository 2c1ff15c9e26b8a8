"""Notebook displays: short `__repr__` lines and `_repr_html_` summaries for the objects people
hold in a notebook (Profile, ProfileSet, AuditReport, Comparison, roofline frames).

A notebook cell shows what a reader needs first: the verdict, the interval and the findings, the
table counts and the devices; never a dump of every table (a Profile's dataclass repr was 55 kB).
Every string goes through `html.escape`.
"""

from __future__ import annotations

import html
from typing import Any, Iterable, Sequence

import polars as pl

from profaudit.fmt import column_units, fmt_cell, fmt_speedup, fmt_x, plural

_CSS = (
    "<style>.pa-box{font-family:system-ui,sans-serif;font-size:13px}"
    ".pa-box table{border-collapse:collapse;margin:4px 0}.pa-box td,.pa-box th{border:1px solid #ddd;padding:2px 6px;text-align:left}"
    ".pa-PASS,.pa-yes,.pa-pass{color:#1b7f2a;font-weight:bold}.pa-WARN,.pa-with-warnings{color:#a06000;font-weight:bold}"
    ".pa-FAIL,.pa-no,.pa-fail,.pa-INCONCLUSIVE{color:#b00020;font-weight:bold}</style>"
)

ROWS = 10


def esc(v: Any) -> str:
    return html.escape("" if v is None else str(v))


def table(headers: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    head = "".join(f"<th>{esc(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{esc(c)}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def box(title: str, *parts: str) -> str:
    return f"{_CSS}<div class='pa-box'><b>{esc(title)}</b>{''.join(parts)}</div>"


def facts(items: Iterable[tuple[str, Any]], cls: dict[str, str] | None = None) -> str:
    """A definition list of (key, value); `cls` maps a key to a CSS class (verdict colours)."""
    cls = cls or {}
    out = []
    for k, v in items:
        c = f" class='pa-{esc(cls[k])}'" if k in cls else ""
        out.append(f"<tr><th>{esc(k)}</th><td{c}>{esc(v)}</td></tr>")
    return "<table>" + "".join(out) + "</table>"


# --- profiles ---------------------------------------------------------------------------------------


def _tables(p) -> dict[str, int]:
    from profaudit import schema

    return {n: p.tables[n].height for n in schema.DATA_TABLES if n in p.tables and p.tables[n].height}


def _devices(p) -> list[str]:
    found = {p.metadata.get("device_name")} if p.metadata.get("device_name") else set()
    for n in ("kernels", "samples"):
        t = p.tables.get(n)
        if t is not None and t.height and "device_name" in t.columns:
            found.update(v for v in t["device_name"].unique().to_list()[:20] if v)
    return sorted(found)


def profile_repr(p) -> str:
    md = p.metadata
    counts = ", ".join(f"{n} {c:,}" for n, c in _tables(p).items()) or "no rows"
    dev = ", ".join(_devices(p)) or "device unknown"
    return f"Profile({p.profile_id!r}: {md.get('source') or '?'}/{md.get('format') or '?'}, {dev}; {counts})"


def profile_html(p) -> str:
    md = p.metadata
    keys = ("source", "format", "path", "tool_version", "device_name")
    rows = [(k, md.get(k)) for k in keys if md.get(k) is not None]
    devs = _devices(p)
    if devs and not md.get("device_name"):
        rows.append(("devices", ", ".join(devs)))
    t = _tables(p)
    counts = table(["table", "rows"], [(n, f"{c:,}") for n, c in t.items()]) if t else "<p>no rows</p>"
    return box(f"Profile {p.profile_id}", facts(rows), counts)


def profileset_html(ps) -> str:
    from profaudit import schema

    rows, totals = [], {n: 0 for n in schema.DATA_TABLES}
    for i, p in enumerate(ps):
        t = _tables(p)
        for n, c in t.items():
            totals[n] += c
        if i < 20:
            rows.append((p.profile_id, p.metadata.get("source"), p.metadata.get("format"), ", ".join(_devices(p)) or "—",
                         ", ".join(f"{n} {c:,}" for n, c in t.items()) or "no rows"))
    parts = [table(["profile", "source", "format", "devices", "tables"], rows)]
    if len(ps) > 20:
        parts.append(f"<p>{plural(len(ps) - 20, 'more profile')}</p>")
    tot = ", ".join(f"{n} {c:,}" for n, c in totals.items() if c)
    parts.append(f"<p>all profiles: {esc(tot or 'no rows')}</p>")
    if ps.skipped:
        parts.append(f"<p>{plural(len(ps.skipped), 'input')} skipped: {esc('; '.join(f'{a}: {b}' for a, b in ps.skipped[:3]))}</p>")
    return box(f"ProfileSet: {plural(len(ps), 'profile')}", *parts)


# --- audit reports ----------------------------------------------------------------------------------


def _interval(sup) -> str:
    iv = sup.interval
    if iv is None:
        return f"not supported ({sup.reason})" if sup.reason else "not supported"
    return f"{fmt_speedup(iv.estimate, iv.low, iv.high)} ({iv.confidence:.0%} CI, {iv.statistic})"


def audit_repr(r) -> str:
    claimed = fmt_x(r.claim.speedup) if r.claim.speedup is not None else "no number"
    return f"AuditReport({r.verdict}: claimed {claimed}, supported {_interval(r.supported)}; {len(r.problems)} problem(s))"


def audit_html(r) -> str:
    items = [
        ("verdict", r.verdict),
        ("claim", r.claim.description),
        ("claimed", fmt_x(r.claim.speedup)),
        ("supported", _interval(r.supported)),
        ("basis", r.supported.basis),
    ]
    parts = [facts(items, {"verdict": r.verdict})]
    if r.reasons:
        parts.append("<ul>" + "".join(f"<li>{esc(x)}</li>" for x in r.reasons[:ROWS]) + "</ul>")
    probs = r.problems
    if probs:
        parts.append(table(["severity", "rule", "message"], [(f.severity.label, f.rule, f.message) for f in probs[:ROWS]]))
        if len(probs) > ROWS:
            parts.append(f"<p>{len(probs) - ROWS} more findings</p>")
    else:
        parts.append("<p>no finding triggered</p>")
    return box("profaudit audit", *parts)


# --- comparisons ------------------------------------------------------------------------------------


def comparison_html(c) -> str:
    from profaudit.compare.render import findings_rows, header_lines, matched_rows, totals_rows

    head = header_lines(c)
    parts = [facts(head, {"comparable": c.comparable})]
    rows = [r for r in findings_rows(c) if r[0] not in ("pass", "info")]
    if rows:
        parts.append(table(["severity", "rule", "pitfalls", "message"], rows[:ROWS]))
    parts.append(table(*totals_rows(c)))
    if c.matched.height:
        hdr, mrows = matched_rows(c, ROWS, 60)
        parts.append(table(hdr, mrows))
        if c.matched.height > ROWS:
            parts.append(f"<p>{c.matched.height - ROWS} more matched; cmp.matched has them all</p>")
    return box(f"Comparison ({c.kind})", *parts)


# --- roofline ---------------------------------------------------------------------------------------


# the columns `profaudit roofline` prints as a table
ROOFLINE_COLUMNS = (
    "kernel_id", "short_name", "device_key", "duration_ns", "achieved_flops_per_s", "ai_dram_flops_per_byte",
    "roof_pct_at_boost", "bound_at_boost", "roof_pct_at_kernel_clock", "bound_at_kernel_clock", "roof_note",
)


def roofline_summary(rf) -> str:
    """'12 kernel rows on h100-sxm; bound at boost: dram 9, compute_fp16_tensor 2, not placed 1'."""
    n = rf.height
    parts = [plural(n, "kernel row")]
    if "device_key" in rf.columns:
        devs = sorted(d for d in rf["device_key"].unique().to_list() if d)
        if devs:
            parts[0] += " on " + ", ".join(devs[:3]) + (f" (+{len(devs) - 3})" if len(devs) > 3 else "")
    for col in ("bound_at_boost", "bound_at_kernel_clock"):
        if col in rf.columns and n:
            counts = rf[col].fill_null("not placed").value_counts(sort=True)
            parts.append(col.replace("_", " ") + ": " + ", ".join(f"{b} {c}" for b, c in counts.iter_rows()))
            break
    return "; ".join(parts)


class RooflineFrame(pl.DataFrame):
    """The polars frame `profaudit.roofline()` returns, with a notebook summary: `repr` is one
    line, the HTML display a summary and the first rows; `print` and every frame operation are
    polars' own (operations may return a plain DataFrame)."""

    @classmethod
    def of(cls, df: pl.DataFrame) -> "RooflineFrame":
        return cls._from_pydf(df._df)

    def __repr__(self) -> str:
        return f"<roofline: {roofline_summary(self)}>"

    def _repr_html_(self, **kwargs: Any) -> str:
        return roofline_html(self)


def roofline_html(rf) -> str:
    cols = [c for c in ROOFLINE_COLUMNS if c in rf.columns] or rf.columns[:8]
    head = rf.select(cols).head(ROWS)
    # the same cells as `profaudit roofline` prints
    units = column_units(head)
    rows = [[fmt_cell(v, units.get(c, "")) for c, v in zip(cols, r)] for r in head.iter_rows()]
    more = f"<p>{rf.height - ROWS:,} more rows</p>" if rf.height > ROWS else ""
    return box(f"roofline: {roofline_summary(rf)}", table(cols, rows), more)
