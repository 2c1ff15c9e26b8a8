"""Modules that print numbers or Markdown cells do it through the one formatter (profaudit.fmt), so
that the same value prints the same way in the CLI tables, Markdown reports and notebooks."""

from __future__ import annotations

import polars as pl
import pytest


def test_batch_markdown_cells_match_the_cli_table_cells():
    from profaudit.batch import to_markdown

    df = pl.DataFrame({
        "claim": ["a|b", "two\nlines"],
        "verdict": ["PASS", None],
        "claimed_speedup": [2.125, None],
        "samples": [12_345.0, 3.0],  # exact integers stored as doubles
        "change_pct": [20.0, 0.04],
    })
    md = to_markdown(df, "verdicts").splitlines()
    assert md[:4] == ["# verdicts", "", "| claim | verdict | claimed_speedup | samples | change_pct |", "|---|---|---|---|---|"]
    assert md[4] == "| a\\|b | PASS | 2.125 | 12,345 | 20.0% |"
    assert md[5] == "| two lines | — | — | 3 | <0.1% |"


def test_dashboard_tables_share_one_builder():
    # the kernel view's tables are ui.table's (same missing-value and long-text cells), with the
    # value columns marked numeric
    pytest.importorskip("dash")
    from profaudit.dashboards.kernel_view import _table
    from profaudit.dashboards.ui import LONG_TEXT

    t = _table(["metric", "value"], [["dram", "1.13 MB"], ["x" * (LONG_TEXT + 1), None]], {1})
    assert t.className == "tbl kr-table"
    head, body = t.children
    assert [th.children for th in head.children.children] == ["metric", "value"]
    rows = [[(td.children, getattr(td, "className", None)) for td in tr.children] for tr in body.children]
    assert rows[0] == [("dram", None), ("1.13 MB", "num")]
    assert rows[1][1] == ("—", "num") and rows[1][0][0].className == "long-text"


def test_compare_roofline_hover_prints_unknown_as_unknown():
    # an unplaced point (no roof for its device) read "0.0% of roof" before: unknown is never zero
    pytest.importorskip("plotly")
    from profaudit.compare import compare
    from profaudit.compare.figures import roofline_figure
    from profaudit.fmt import fmt_pct
    from test_compare import profile

    extra = {"flops_fp32": 2.0e9, "dram_bytes": 1.0e8}
    cmp = compare(profile("rb", [("k", 5, 100_000, extra)], source="ncu"), profile("rc", [("k", 5, 50_000, extra)], source="ncu"))
    pct = cmp.roofline.sort("side")["pct_of_roof"].to_list()  # baseline, candidate
    hover = [t.hovertext for t in roofline_figure(cmp).data if t.hovertext]
    assert hover == [f"k<br>{fmt_pct(p)} of roof, bound: compute" for p in pct] and pct[1] > pct[0] > 0
    cmp.roofline = cmp.roofline.with_columns(pl.lit(None, pl.Float64).alias("pct_of_roof"), pl.lit(None, pl.Utf8).alias("binding"))
    assert [t.hovertext for t in roofline_figure(cmp).data if t.hovertext] == ["k<br>— of roof, bound: —"] * 2


def test_dashboard_table_cells_carry_no_null_props():
    pytest.importorskip("dash")
    from profaudit.dashboards.ui import table

    t = table(["a", "b"], [["x", 1.5]], numeric={1}).to_plotly_json()
    cells = t["props"]["children"][1].to_plotly_json()["props"]["children"][0].to_plotly_json()["props"]["children"]
    assert [c.to_plotly_json()["props"] for c in cells] == [{"children": "x"}, {"children": "1.5", "className": "num"}]
