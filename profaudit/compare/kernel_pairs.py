"""A matched kernel pair as an analysis view inside compare: the kernel-report sections of the
same kernel before and after, side by side, largest moves first (`profaudit.kernel_report`).

Only for Nsight Compute kernels on both sides (the counters are what moved; a trace-only pair
has nothing beyond the matched table). The report shows the launch a reader would open first:
each side's first launch of the group (lowest kernel_id of its first profile); `compare --kernel`
picks a pair by name and shows every moved value and both full reports.
"""

from __future__ import annotations

import html as _html
from dataclasses import dataclass

import polars as pl

from profaudit.compare.core import Comparison, Side
from profaudit.errors import UsageError
from profaudit.fmt import plural

# Pairs shown inside a compare report (the matched groups with the largest time differences) and
# moved values per pair; `--kernel` shows one pair with all of them.
TOP_PAIRS = 3
TOP_ROWS = 10


@dataclass
class KernelPair:
    group_id: int
    label: str
    before: object  # profaudit.kernel_report.KernelReport
    after: object
    rows: list  # profaudit.kernel_report.PairRow, largest move first


def _is_ncu(s: Side) -> bool:
    k = s.kernels
    return k.height > 0 and "source" in k.columns and bool((k["source"] == "ncu").any())


def has_pairs(c: Comparison) -> bool:
    return c.kind == "kernels" and c.matched.height > 0 and _is_ncu(c.baseline) and _is_ncu(c.candidate)


def _first_launch(s: Side, names: list[str]) -> tuple[str, int] | None:
    from profaudit.compare.match import entity_expr

    k = s.kernels.with_columns(entity_expr()).filter(pl.col("entity").is_in(names))
    if "source" in k.columns:
        k = k.filter(pl.col("source") == "ncu")
    if k.height == 0:
        return None
    order = {pid: i for i, pid in enumerate(s.ps.ids)}
    k = k.with_columns(pl.col("profile_id").replace_strict(order, default=len(order)).alias("_p")).sort("_p", "kernel_id")
    r = k.row(0, named=True)
    return r["profile_id"], r["kernel_id"]


def pair(c: Comparison, group: dict) -> KernelPair | None:
    """The kernel-report pair of one row of `c.matched` (None when a side has no ncu launch of it)."""
    from profaudit.kernel_report import compare_kernel_reports, kernel_report

    fb, fc = _first_launch(c.baseline, group["names_b"]), _first_launch(c.candidate, group["names_c"])
    if fb is None or fc is None:
        return None
    before = kernel_report(c.baseline.ps, kernel_id=fb[1], profile=fb[0])
    after = kernel_report(c.candidate.ps, kernel_id=fc[1], profile=fc[0])
    return KernelPair(group["group_id"], group["label"], before, after, compare_kernel_reports(before, after))


def top_pairs(c: Comparison, n: int = TOP_PAIRS) -> list[KernelPair]:
    """The pairs of the `n` matched groups with the largest time difference (c.matched's order)."""
    if not has_pairs(c):
        return []
    out = []
    for g in c.matched.iter_rows(named=True):
        if len(out) == n:
            break
        p = pair(c, g)
        if p is not None:
            out.append(p)
    return out


def find_pair(c: Comparison, name: str) -> KernelPair:
    """The matched pair whose label or kernel names equal `name`, else contain it; several
    matching groups is a UsageError that lists them."""
    if c.kind != "kernels":
        raise UsageError("--kernel: the inputs are timing logs, not kernel profiles")
    if not has_pairs(c):
        raise UsageError("--kernel: the kernel pair view needs Nsight Compute (ncu) kernels on both sides")
    rows = list(c.matched.iter_rows(named=True))

    def names(g: dict) -> list[str]:
        return [g["label"], *g["names_b"], *g["names_c"]]

    hits = [g for g in rows if name in names(g)] or [g for g in rows if any(name in x for x in names(g))]
    if not hits:
        from profaudit.kernel_report import _listing

        raise UsageError(f"--kernel {name!r}: no matched kernel has that name; matched: {_listing([g['label'] for g in rows])}")
    if len(hits) > 1:
        raise UsageError(f"--kernel {name!r} matches {len(hits)} matched kernels: {', '.join(g['label'] for g in hits[:8])}; give a longer name")
    p = pair(c, hits[0])
    if p is None:
        raise UsageError(f"--kernel {name!r}: a side has no ncu launch of {hits[0]['label']}")
    return p


# --- rendering ----------------------------------------------------------------------------------


def _demote(md: str, levels: int) -> str:
    """Markdown headings of a stand-alone report nested under the compare report's sections."""
    return "\n".join(("#" * levels + line) if line.startswith("#") else line for line in md.splitlines())


def _pair_cells(r) -> list[str]:
    from profaudit.kernel_report import pair_cells

    return pair_cells(r)


PAIR_HEADERS = ["section", "metric", "before", "after", "change"]


def pairs_intro(pairs: list[KernelPair], top_rows: int = TOP_ROWS) -> str:
    return (f"The {plural(len(pairs), 'matched kernel')} with the largest time difference, each side's first launch; "
            f"the {top_rows} values that moved most (`profaudit compare A B --kernel NAME` shows one pair in full).")


def print_pairs(pairs: list[KernelPair], console, top_rows: int = TOP_ROWS) -> None:
    """The pairs in a terminal, as the Markdown and HTML reports show them: every format of a
    compare report holds the same sections."""
    from rich.table import Table

    from profaudit.audit.render import print_hanging

    if not pairs:
        return
    console.print("Kernel pairs: before and after", style="bold", markup=False, highlight=False)
    print_hanging(console, "", pairs_intro(pairs, top_rows))
    for p in pairs:
        t = Table(title=f"{p.before.short_name} → {p.after.short_name} (kernel_id {p.before.kernel_id} → {p.after.kernel_id})",
                  title_justify="left", header_style="bold")
        for h in PAIR_HEADERS:
            # a metric name is read and copied whole: it never folds (the other cells may)
            t.add_column(h, overflow="fold", no_wrap=h == "metric")
        for r in p.rows[:top_rows]:
            t.add_row(*_pair_cells(r))
        if not p.rows:
            t.add_row("none", "", "", "", "")
        console.print(t)


def pairs_markdown(pairs: list[KernelPair], top_rows: int = TOP_ROWS) -> str:
    from profaudit.kernel_report import render_pair_markdown

    if not pairs:
        return ""
    out = ["## Kernel pairs: before and after", "", pairs_intro(pairs, top_rows), ""]
    for p in pairs:
        out += [_demote(render_pair_markdown(p.before, p.after, p.rows, top=top_rows), 2), ""]
    return "\n".join(out)


def pairs_html(pairs: list[KernelPair], top_rows: int = TOP_ROWS) -> str:
    if not pairs:
        return ""
    intro = _html.escape(pairs_intro(pairs, top_rows)).replace("`profaudit", "<code>profaudit").replace("NAME`", "NAME</code>")
    out = ["<h2>Kernel pairs: before and after</h2>", f"<p>{intro}</p>"]
    for p in pairs:
        out.append(pair_table_html(p, top_rows, level=3))
    return "\n".join(out)


def pair_table_html(p: KernelPair, top_rows: int | None, level: int = 2) -> str:
    e = _html.escape
    rows = p.rows if top_rows is None else p.rows[:top_rows]
    head = "".join(f"<th>{h}</th>" for h in PAIR_HEADERS)
    body = "".join("<tr>" + "".join(f"<td>{e(str(x))}</td>" for x in _pair_cells(r)) + "</tr>" for r in rows)
    return (f"<h{level}>Kernel pair: {e(p.before.short_name)} → {e(p.after.short_name)}</h{level}>"
            f"<p>before: {e(str(p.before.path or p.before.profile_id))} (kernel_id {p.before.kernel_id}); "
            f"after: {e(str(p.after.path or p.after.profile_id))} (kernel_id {p.after.kernel_id})</p>"
            f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")


def render_pair(p: KernelPair, fmt: str) -> str:
    """One pair in full: every value side by side, largest move first, then both kernel reports."""
    from profaudit.kernel_report import render, render_html, render_pair_markdown

    if fmt == "json":
        import json
        from dataclasses import asdict

        from profaudit.audit.findings import _jsonable

        doc = {"group_id": p.group_id, "label": p.label, "moved": [asdict(r) for r in p.rows],
               "before": p.before.to_dict(), "after": p.after.to_dict()}
        return json.dumps(_jsonable(doc), indent=1, default=str, allow_nan=False) + "\n"
    if fmt == "html":
        from profaudit.compare.render import _CSS

        return ("<!DOCTYPE html><html><head><meta charset='utf-8'><title>profaudit compare: kernel pair</title>"
                f"<style>{_CSS}</style></head><body>\n{pair_table_html(p, None)}\n"
                f"<h2>Before</h2>\n{_demote_html(render_html(p.before, full_page=False))}\n"
                f"<h2>After</h2>\n{_demote_html(render_html(p.after, full_page=False))}\n</body></html>\n")
    md = [render_pair_markdown(p.before, p.after, p.rows, top=len(p.rows)), "",
          "# Before", "", _demote(render(p.before, "md"), 1), "", "# After", "", _demote(render(p.after, "md"), 1)]
    if fmt == "markdown":
        return "\n".join(md) + "\n"
    from profaudit.kernel_report import render_pair_text

    return "\n".join([render_pair_text(p.before, p.after, p.rows, top=len(p.rows)), "Before", "", render(p.before, "text"),
                      "After", "", render(p.after, "text")])


def _demote_html(h: str) -> str:
    for i in (3, 2, 1):
        h = h.replace(f"<h{i}", f"<h{i + 2}").replace(f"</h{i}>", f"</h{i + 2}>")
    return h
