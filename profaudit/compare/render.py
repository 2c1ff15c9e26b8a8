"""Renderers for a `Comparison`: rich table, Markdown, HTML (plotly figures) and JSON.

Every format shows the same sections in the same order: fairness findings first (a pair that is
not comparable says so before any number), the verdict, totals, where the time went, matched,
added and removed items, the metrics and roofline positions that moved, notes. Tables show the
`top` rows by absolute difference; JSON carries every row.
"""

from __future__ import annotations

import html
import io
import json
from typing import Any, Callable

import polars as pl

from profaudit import fmt as _fmt
from profaudit.compare.core import Comparison
from profaudit.compare.kernels import display_name
from profaudit.compare.timing import totals_label
from profaudit.fmt import fmt_ns, fmt_num, fmt_si, fmt_speedup, fmt_x, is_missing, md_cell, p_is

FORMATS = ("table", "markdown", "html", "json")


# --- number formatting: the one formatter (profaudit.fmt); percentages here are signed by default --


def fmt_pct(v: Any, signed: bool = True) -> str:
    return _fmt.fmt_pct(v, signed)


# --- section model: every format renders the same list of (title, headers, rows) ------------------


def _sig_cell(r: dict) -> str:
    s = r.get("significance") or "unknown"
    if s == "unknown":
        return "unknown"
    p = r.get("p_value")
    return f"{s} ({p_is(p)})" if not is_missing(p) else s


def header_lines(c: Comparison) -> list[tuple[str, str]]:
    b, k = c.baseline.describe(), c.candidate.describe()
    out = [
        ("baseline", b["label"]),
        ("candidate", k["label"]),
        ("kind", c.kind),
        # unknown as the one formatter spells it
        ("sources", f"{', '.join(b['sources']) or _fmt.MISSING} vs {', '.join(k['sources']) or _fmt.MISSING}"),
        ("devices", f"{', '.join(b['devices']) or _fmt.MISSING} vs {', '.join(k['devices']) or _fmt.MISSING}"),
        ("matching", f"{c.match_mode}: " + ", ".join(f"{m} {n}" for m, n in sorted(c.methods.items(), key=lambda kv: -kv[1])) if c.methods else c.match_mode),
        ("comparable", c.comparable),
        ("verdict", c.verdict),
    ]
    return out


def findings_rows(c: Comparison) -> list[list[str]]:
    """Triggered findings, then the decisive facts that could not be checked, then one line each
    for the checks that passed and the non-decisive ones that could not run (JSON has them all)."""
    from profaudit.audit.findings import Severity, Status

    rows, passed, quiet = [], [], []
    for f in c.findings:
        if f.status is Status.FAIL or (f.status is Status.UNKNOWN and f.severity >= Severity.WARN):
            rows.append([f.severity.label, f.rule, ",".join(f.pitfalls), f.message])
        elif f.status is Status.PASS:
            passed.append(f.rule)
        else:
            quiet.append(f.rule)
    if passed:
        rows.append(["pass", ", ".join(sorted(set(passed))), "", "checked: no difference between the sides"])
    if quiet:
        rows.append(["info", ", ".join(sorted(set(quiet))), "", "could not check (facts not recorded; not decisive for comparability)"])
    return rows


def totals_rows(c: Comparison) -> tuple[list[str], list[list[str]]]:
    t = c.totals
    b, k = t["baseline"], t["candidate"]
    hdr = ["", "baseline", "candidate", "difference", "speedup"]
    if c.kind == "kernels":
        rows = [
            ["GPU time (sum of kernels)", fmt_ns(b["gpu_time_ns"]), fmt_ns(k["gpu_time_ns"]), f"{fmt_ns(t['gpu_time_diff_ns'], True)} ({fmt_pct(t['gpu_time_diff_pct'])})", fmt_x(t["gpu_time_speedup"])],
            ["wall time (span)", fmt_ns(b["wall_time_ns"]), fmt_ns(k["wall_time_ns"]), fmt_ns(t["wall_time_diff_ns"], True), fmt_x(t["wall_time_speedup"])],
            ["kernel launches", fmt_num(b["kernels"]), fmt_num(k["kernels"]), fmt_num(k["kernels"] - b["kernels"]), ""],
            ["distinct kernels", fmt_num(b["distinct_kernels"]), fmt_num(k["distinct_kernels"]), fmt_num(k["distinct_kernels"] - b["distinct_kernels"]), ""],
            ["profiles", fmt_num(b["profiles"]), fmt_num(k["profiles"]), "", ""],
            ["time in matched kernels", fmt_pct(t["matched_share_baseline_pct"], False), fmt_pct(t["matched_share_candidate_pct"], False), "", ""],
        ]
        if t.get("matched_groups") == 0:
            rows.insert(0, ["nothing comparable: no kernel on both sides", "", "", "", "—"])
        elif "matched_gpu_time_speedup" in t:
            mb, mc = t["matched_gpu_time_baseline_ns"], t["matched_gpu_time_candidate_ns"]
            matched_row = ["GPU time in matched kernels", fmt_ns(mb), fmt_ns(mc), f"{fmt_ns(mc - mb, True)} ({fmt_pct(t.get('matched_gpu_time_diff_pct'))})", fmt_x(t["matched_gpu_time_speedup"])]
            if t.get("headline") == "matched_gpu_time":
                # the headline first; the whole program's time (one-sided kernels included) beside it
                rows[0][0] = "GPU time, whole program (all kernels)"
                rows.insert(0, matched_row)
            else:
                rows.insert(2, matched_row)
        js = t.get("job_step")
        if js and js["steps"]:
            rows.insert(0, [f"job step time (sum of {fmt_num(js['steps'])} matched steps, across ranks)", fmt_ns(js["baseline_ns"]), fmt_ns(js["candidate_ns"]),
                            f"{fmt_ns(js['job_step_diff_ns'], True)} ({fmt_pct(js['job_step_diff_pct'])})", fmt_x(js["job_step_speedup"])])
            rows.insert(1, ["median job step time", fmt_ns(js["baseline_median_ns"]), fmt_ns(js["candidate_median_ns"]), "", ""])
        for key, side, col in (("removed", "baseline only", 1), ("added", "candidate only", 2)):
            u = t.get(key)
            if u and u["kernels"]:
                row = [f"{key} kernels ({side})", "", "", "", ""]
                row[col] = f"{fmt_num(u['kernels'])}: {fmt_ns(u['gpu_time_ns'])}"
                rows.append(row)
    else:
        if t["matched_cases"]:
            head = [totals_label(t), fmt_ns(b["time_ns"]), fmt_ns(k["time_ns"]), f"{fmt_ns(t['time_diff_ns'], True)} ({fmt_pct(t['time_diff_pct'])})", fmt_x(t["time_speedup"])]
        else:
            head = ["nothing comparable: no case on both sides", "", "", "", "—"]
        rows = [
            head,
            ["matched cases", fmt_num(t["matched_cases"]), fmt_num(t["matched_cases"]), "", f"geomean {fmt_x(t['geomean_speedup'])}"],
            ["cases (all)", fmt_num(b["cases"]), fmt_num(k["cases"]), "", ""],
            ["raw samples (all)", fmt_num(b["samples"]), fmt_num(k["samples"]), "", ""],
            ["time sources", ", ".join(b["time_sources"]) or _fmt.MISSING, ", ".join(k["time_sources"]) or _fmt.MISSING, "", ""],
        ]
        for key, side, col in (("removed", "baseline only", 1), ("added", "candidate only", 2)):
            u = t.get(key)
            if u and u["cases"]:
                # only when there are some, as for kernels (a row of '0' took three lines at 80 columns)
                row = [f"{key} cases ({side}), {totals_label(t).replace('sum of case', 'sum of')}", "", "", "", ""]
                row[col] = f"{fmt_num(u['cases'])}: {fmt_ns(u['time_ns'])}"
                rows.append(row)
    return hdr, rows


def shortener(c: Comparison) -> Callable[[str, int], str]:
    """Kernel names are shortened C++-aware; benchmark case labels are cut at the end."""
    if c.kind == "kernels":
        return display_name
    from profaudit.cli.common import middle_ellipsis

    # cut in the middle: a case's parameters at the end are what tell it from its neighbours
    return lambda s, w: s if s is None or len(s) <= w else middle_ellipsis(s, w)


def contributions_rows(c: Comparison, top: int, width: int) -> tuple[list[str], list[list[str]]]:
    short = shortener(c)
    counts = c.kind == "kernels"
    hdr = ["#", "kind", "item", "difference", "of which launch count", "share of diff", "cumulative"]
    if not counts:
        hdr.remove("of which launch count")
    rows = []
    df = c.contributions
    for r in df.head(top).iter_rows(named=True):
        row = [str(r["rank"]), r["kind"], short(r["item"], width), fmt_ns(r["diff_ns"], True), fmt_ns(r.get("diff_from_count_ns"), True), fmt_pct(r["share_pct"]), fmt_pct(r["cumulative_pct"])]
        if not counts:
            del row[4]
        rows.append(row)
    if df.height > top:
        rest = df.slice(top)
        share = rest["share_pct"].sum() if rest["share_pct"].null_count() < rest.height else None
        row = ["", "", f"{rest.height} more", fmt_ns(float(rest["diff_ns"].sum()), True), "", fmt_pct(share), ""]
        if not counts:
            del row[4]
        rows.append(row)
    return hdr, rows


def _speedup_ci(r: dict, est_key: str) -> str:
    return fmt_speedup(r.get(est_key), r.get("speedup_ci_low"), r.get("speedup_ci_high"))


def matched_rows(c: Comparison, top: int, width: int) -> tuple[list[str], list[list[str]]]:
    """Per-launch (per-sample) speed with its interval and test, then what it did to the total:
    a kernel can get faster per launch and still cost more because it launches more often."""
    short = shortener(c)
    df = c.matched.head(top)
    rows = []
    if c.kind == "kernels":
        hdr = ["item", "match", "launches", "mean", "median", "per-launch speedup [95% CI]", "significance", "total", "difference"]
        for r in df.iter_rows(named=True):
            rows.append([
                short(r["label"], width),
                f"{r['method']} {r['score']:.2g}",
                f"{fmt_num(r['count_b'])} → {fmt_num(r['count_c'])}",
                f"{fmt_ns(r['mean_b_ns'])} → {fmt_ns(r['mean_c_ns'])}",
                f"{fmt_ns(r['median_b_ns'])} → {fmt_ns(r['median_c_ns'])}",
                _speedup_ci(r, "median_speedup"),
                _sig_cell(r),
                f"{fmt_ns(r['total_b_ns'])} → {fmt_ns(r['total_c_ns'])}",
                f"{fmt_ns(r['diff_ns'], True)} ({fmt_pct(r['diff_pct'])})",
            ])
    else:
        hdr = ["case", "match", "samples", "median", "mean", "speedup [95% CI]", "significance", "difference"]
        for r in df.iter_rows(named=True):
            rows.append([
                short(r["label"], width),
                f"{r['method']} {r['score']:.2g}",
                f"{fmt_num(r['count_b'])} / {fmt_num(r['count_c'])}",
                f"{fmt_ns(r['median_b_ns'])} → {fmt_ns(r['median_c_ns'])}",
                f"{fmt_ns(r['mean_b_ns'])} → {fmt_ns(r['mean_c_ns'])}",
                _speedup_ci(r, "speedup"),
                _sig_cell(r),
                f"{fmt_ns(r['diff_ns'], True)} ({fmt_pct(r['diff_pct'])})",
            ])
    return hdr, rows


def unmatched_rows(df: pl.DataFrame, top: int, width: int, kind: str, short: Callable[[str, int], str]) -> tuple[list[str], list[list[str]]]:
    rows = []
    if kind == "kernels":
        hdr = ["kernel", "launches", "mean", "total", "op"]
        for r in df.head(top).iter_rows(named=True):
            rows.append([short(r["name"], width), fmt_num(r["count"]), fmt_ns(r["mean_ns"]), fmt_ns(r["total_ns"]), r.get("op_name") or ""])
    else:
        hdr = ["case", "samples", "median", "statistic"]
        for r in df.head(top).iter_rows(named=True):
            rows.append([short(r["name"], width), fmt_num(r["count"]), fmt_ns(r["median_ns"]), r.get("statistic") or ""])
    if df.height > top:
        rows.append([f"{df.height - top} more", "", "", "", ""][: len(hdr)])
    return hdr, rows


def metrics_rows(c: Comparison, top_groups: int, per_group: int, width: int) -> tuple[list[str], list[list[str]]]:
    short = shortener(c)
    hdr = ["item", "metric", "category", "baseline", "candidate", "change"]
    mm = c.metrics_moved
    rows: list[list[str]] = []
    if mm.height == 0:
        return hdr, rows
    labels = dict(zip(c.matched["group_id"].to_list(), c.matched["label"].to_list()))
    order = [g for g in c.matched["group_id"].to_list() if g in set(mm["group_id"].to_list())][:top_groups]
    for g in order:
        sub = mm.filter(pl.col("group_id") == g)
        # key metrics that moved, then the largest other movers
        keyed = sub.filter(pl.col("key_metric"))
        rest = sub.filter(~pl.col("key_metric")).head(max(0, per_group - keyed.height))
        for r in pl.concat([keyed, rest]).iter_rows(named=True):
            change = fmt_pct(r["rel_change_pct"]) if not is_missing(r["rel_change_pct"]) else "new"
            rows.append([short(labels.get(g, str(g)), width), r["metric"], r["category"], fmt_num(r["baseline"]), fmt_num(r["candidate"]), change])
    return hdr, rows


def roofline_rows(c: Comparison, top: int, width: int) -> tuple[list[str], list[list[str]]]:
    short = shortener(c)
    hdr = ["item", "side", "FLOP/byte (DRAM)", "achieved", "DRAM bandwidth", "% of roof (boost)", "bound", "% of roof (kernel clock)", "bound"]
    rows: list[list[str]] = []
    rf = c.roofline
    if rf.height == 0:
        return hdr, rows
    for r in rf.head(2 * top).iter_rows(named=True):
        rows.append([
            short(r["label"], width),
            r["side"],
            fmt_num(r.get("intensity_flop_per_byte")),
            fmt_si(r.get("achieved_flop_per_s"), "FLOP/s"),
            fmt_si(r.get("achieved_dram_bytes_per_s"), "B/s"),
            fmt_pct(r.get("pct_of_roof"), False),
            str(r.get("binding") or "—"),
            fmt_pct(r.get("pct_of_roof_at_kernel_clock"), False),
            str(r.get("binding_at_kernel_clock") or "—"),
        ])
    return hdr, rows


def _pair(b: Any, c: Any, f: Callable[[Any], str]) -> str:
    return f"{f(b)} → {f(c)}"


def job_step_rows(c: Comparison, top: int) -> tuple[list[str], list[list[str]]]:
    """Two distributed runs: the job's time per step matched by number (latest step end - earliest
    step start across ranks), the largest exposed communication and the skew between ranks."""
    hdr = ["step", "job step time", "difference", "speedup", "max exposed communication", "rank skew"]
    st = c.runs["steps"]
    rows = []
    for r in st.head(top).iter_rows(named=True):
        b, k = r["baseline_job_step_ns"], r["candidate_job_step_ns"]
        rows.append([
            str(r["step"]),
            _pair(b, k, fmt_ns),
            f"{fmt_ns(r['job_step_diff_ns'], True)} ({fmt_pct((k - b) / b * 100 if b else None)})",
            fmt_x(b / k if k else None),
            _pair(r["baseline_max_exposed_communication_ns"], r["candidate_max_exposed_communication_ns"], fmt_ns),
            _pair(r["baseline_skew_ns"], r["candidate_skew_ns"], fmt_ns),
        ])
    if st.height > top:
        rows.append([f"{st.height - top} more", "", "", "", "", ""])
    return hdr, rows


def collective_rows(c: Comparison, top: int) -> tuple[list[str], list[list[str]]]:
    """Collectives matched by kind and message size: time once every rank arrived (the link's
    share), bus bandwidth, and the time ranks spent waiting for the last one (the straggler's)."""
    from profaudit.fmt import fmt_bytes

    hdr = ["collective", "message", "calls", "median sync duration", "candidate / baseline", "median bus bandwidth", "total wait"]
    co = c.runs["collectives"]
    rows = []
    for r in co.head(top).iter_rows(named=True):
        rows.append([
            r["collective"],
            fmt_bytes(r["msg_bytes"]),
            _pair(r["baseline_calls"], r["candidate_calls"], fmt_num),
            _pair(r["baseline_median_sync_duration_ns"], r["candidate_median_sync_duration_ns"], fmt_ns),
            fmt_x(r["sync_duration_ratio"]),
            _pair(r["baseline_median_sync_busbw_bytes_per_s"], r["candidate_median_sync_busbw_bytes_per_s"], lambda v: fmt_si(v, "B/s")),
            _pair(r["baseline_total_wait_ns"], r["candidate_total_wait_ns"], fmt_ns),
        ])
    if co.height > top:
        rows.append([f"{co.height - top} more", "", "", "", "", "", ""])
    return hdr, rows


def sections(c: Comparison, top: int, width: int = 60) -> list[tuple[str, list[str], list[list[str]]]]:
    out = []
    out.append(("Fairness findings", ["severity", "rule", "pitfalls", "message"], findings_rows(c)))
    out.append(("Totals" if c.kind == "kernels" else "Totals (matched cases only)", *totals_rows(c)))
    if c.runs:
        nb, nc = c.runs["ranks"]["baseline"], c.runs["ranks"]["candidate"]
        out.append((f"Job steps ({nb} vs {nc} ranks, matched by step number)", *job_step_rows(c, top)))
        out.append(("Collectives (matched by kind and message size)", *collective_rows(c, top)))
    out.append(("Where the time went", *contributions_rows(c, top, width)))
    out.append(("Matched" if c.kind == "kernels" else "Matched cases", *matched_rows(c, top, width)))
    out.append(("Added (candidate only)", *unmatched_rows(c.added, top, width, c.kind, shortener(c))))
    out.append(("Removed (baseline only)", *unmatched_rows(c.removed, top, width, c.kind, shortener(c))))
    h, r = metrics_rows(c, max(1, top // 4), 8, width)
    if r:
        out.append(("Metrics that moved", h, r))
    h, r = roofline_rows(c, top, width)
    if r:
        out.append(("Roofline movement", h, r))
    return out


# --- formats -------------------------------------------------------------------------------------


def render(c: Comparison, fmt: str = "table", *, top: int = 20, width: int | None = None) -> str:
    if fmt not in FORMATS:
        from profaudit.errors import UsageError

        raise UsageError(f"--format {fmt!r}: choose one of {', '.join(FORMATS)}")
    top = max(1, int(top))
    if fmt == "json":
        return json.dumps(c.to_dict(), indent=1, allow_nan=False) + "\n"
    if fmt == "markdown":
        return render_markdown(c, top)
    if fmt == "html":
        return render_html(c, top)
    buf = io.StringIO()
    from rich.console import Console

    print_table(c, top, Console(file=buf, width=width or 200, force_terminal=False, no_color=True))
    return buf.getvalue()


# columns holding an item's name (kernel, case): cut to fit, never folded over several lines
_LABEL_COLUMNS = {"item", "case", "kernel"}
_WHOLE = 10**6  # sections() width that leaves labels whole, for the terminal to cut them
# what a narrow terminal gives up first, in order: the mean beside the median, the match method,
# the counts; never the speedup, its significance or the difference
_DROPPABLE = ("mean", "match", "samples", "launches", "of which launch count", "total", "op", "statistic")
_MIN_LABEL = 16


def _fit_labels(rows: list[list[str]], hdr: list[str], label: int, width: int, short: Callable[[str, int], str]) -> bool:
    """Cut the label cells so that every row of a bordered table fits `width` on one line; False
    (nothing cut) when the other columns leave less than _MIN_LABEL characters for the label."""
    natural = [max([len(h)] + [len(r[j]) for r in rows]) for j, h in enumerate(hdr)]
    room = width - (3 * len(hdr) + 1) - sum(w for j, w in enumerate(natural) if j != label)
    if room < _MIN_LABEL:
        return False
    full = [r[label] for r in rows]
    cut = [short(x, room) for x in full]
    for r, v in zip(rows, _apart(full, cut)):
        r[label] = v
    return True


def _apart(full: list[str], cut: list[str]) -> list[str]:
    """Cut labels that collided, cut again where they differ; kernel names without their return
    type and parameter list first ('voi…, 512, t…at)' told two cudnn kernels apart by 'void')."""
    from profaudit.cli.common import tell_apart
    from profaudit.names import instance_name

    if cut == full or len(set(cut)) == len(set(full)):
        return cut
    bare = [instance_name(x) if x else x for x in full]
    return tell_apart(bare if len(set(bare)) == len(set(full)) else full, cut)


def print_table(c: Comparison, top: int, console) -> None:
    from rich.table import Table

    from profaudit.audit.render import print_hanging

    style = {"no": "bold red", "with-warnings": "yellow", "yes": "green"}.get(c.comparable, "")
    for k, v in header_lines(c):
        # a long path or verdict wraps under its value, never inside a file name
        print_hanging(console, f"{k:>10}: ", str(v), style=style if k in ("comparable", "verdict") else "")
    short = shortener(c)
    for title, hdr, rows in sections(c, top, width=_WHOLE):
        t = Table(title=title, title_justify="left", header_style="bold", show_lines=False)
        rows = [[str(x) for x in r] for r in rows]
        label = next((j for j, h in enumerate(hdr) if h in _LABEL_COLUMNS), None)
        fitted = _fit_labels(rows, hdr, label, console.width, short) if label is not None and rows else False
        hidden = []
        while label is not None and rows and not fitted and (j := next((hdr.index(h) for h in _DROPPABLE if h in hdr), None)) is not None:
            # too many columns for one line per row: the least telling go, named in the caption
            hidden.append(hdr[j])
            hdr = hdr[:j] + hdr[j + 1:]
            rows = [r[:j] + r[j + 1:] for r in rows]
            label = next(i for i, h in enumerate(hdr) if h in _LABEL_COLUMNS)
            fitted = _fit_labels(rows, hdr, label, console.width, short)
        if hidden:
            t.caption = f"hidden to fit {console.width} columns: {', '.join(hidden)} (a wider terminal or --format markdown shows them)"
        for j, h in enumerate(hdr):
            # fitted: one row per line, the label cut to the room the numbers leave; otherwise
            # (too many columns even so) the numbers fold and the label is cut to _MIN_LABEL
            t.add_column(h, overflow="fold", no_wrap=fitted or j == label)
        if label is not None and rows and not fitted:
            full = [r[label] for r in rows]
            cut = [short(x, _MIN_LABEL) for x in full]
            for r, v in zip(rows, _apart(full, cut)):
                r[label] = v
        for r in rows:
            t.add_row(*r)
        if not rows:
            t.add_row(*(["none"] + [""] * (len(hdr) - 1)))
        console.print(t)
    from profaudit.compare.kernel_pairs import print_pairs, top_pairs

    print_pairs(top_pairs(c), console)
    for n in c.notes:
        print_hanging(console, "note: ", str(n))


def render_markdown(c: Comparison, top: int) -> str:
    lines = ["# profaudit compare", ""]
    for k, v in header_lines(c):
        lines.append(f"- **{k}**: {md_cell(v)}")
    lines.append("")
    for title, hdr, rows in sections(c, top, width=80):
        lines += [f"## {title}", ""]
        if not rows:
            lines += ["none", ""]
            continue
        lines.append("| " + " | ".join(md_cell(h) for h in hdr) + " |")
        lines.append("|" + "|".join("---" for _ in hdr) + "|")
        for r in rows:
            lines.append("| " + " | ".join(md_cell(x) for x in r) + " |")
        lines.append("")
    from profaudit.compare.kernel_pairs import pairs_markdown, top_pairs

    if (pm := pairs_markdown(top_pairs(c))):
        lines += [pm, ""]
    if c.notes:
        lines += ["## Notes", ""] + [f"- {md_cell(n)}" for n in c.notes] + [""]
    return "\n".join(lines)


_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:24px;color:#222}
table{border-collapse:collapse;margin:8px 0 24px 0;font-size:13px}
th,td{border:1px solid #ddd;padding:4px 8px;text-align:left;vertical-align:top}
th{background:#f4f4f4} td{font-variant-numeric:tabular-nums}
.no{color:#b00020;font-weight:bold}.with-warnings{color:#a06000;font-weight:bold}.yes{color:#1b7f2a;font-weight:bold}
dl{display:grid;grid-template-columns:max-content auto;gap:2px 12px}dt{font-weight:bold}
.figs{display:flex;flex-wrap:wrap;gap:16px}
"""


def _html_table(hdr: list[str], rows: list[list[str]]) -> str:
    if not rows:
        return "<p>none</p>"
    h = "".join(f"<th>{html.escape(str(x))}</th>" for x in hdr)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(x))}</td>" for x in r) + "</tr>" for r in rows)
    return f"<table><thead><tr>{h}</tr></thead><tbody>{body}</tbody></table>"


def render_html(c: Comparison, top: int, *, plotlyjs: str = "embed", output=None) -> str:
    """`plotlyjs`: embed, cdn or directory (plotly.min.js written beside `output`)."""
    from profaudit.compare import figures
    from profaudit.plotly_assets import ensure_bundle

    parts = ["<!DOCTYPE html><html><head><meta charset='utf-8'><title>profaudit compare</title>", f"<style>{_CSS}</style></head><body>"]
    parts.append("<h1>profaudit compare</h1><dl>")
    for k, v in header_lines(c):
        cls = f" class='{html.escape(c.comparable)}'" if k in ("comparable", "verdict") else ""
        parts.append(f"<dt>{html.escape(k)}</dt><dd{cls}>{html.escape(str(v))}</dd>")
    parts.append("</dl>")
    figs = figures.comparison_figures(c, top)
    secs = sections(c, top, width=100)
    for i, (title, hdr, rows) in enumerate(secs):
        parts.append(f"<h2>{html.escape(title)}</h2>")
        if title == "Where the time went" and figs.get("waterfall") is not None:
            parts.append(figures.to_div(figs["waterfall"], first=True, plotlyjs=plotlyjs))
        if title == "Roofline movement" and figs.get("roofline") is not None:
            parts.append(figures.to_div(figs["roofline"], first=figs.get("waterfall") is None, plotlyjs=plotlyjs))
        parts.append(_html_table(hdr, rows))
    from profaudit.compare.kernel_pairs import pairs_html, top_pairs

    parts.append(pairs_html(top_pairs(c)))
    if c.notes:
        parts.append("<h2>Notes</h2><ul>" + "".join(f"<li>{html.escape(n)}</li>" for n in c.notes) + "</ul>")
    parts.append("</body></html>")
    if any(f is not None for f in figs.values()):
        ensure_bundle(plotlyjs, output)
    return "\n".join(parts)
