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
    rows = [[(td.children, td.className) for td in tr.children] for tr in body.children]
    assert rows[0] == [("dram", None), ("1.13 MB", "num")]
    assert rows[1][1] == ("—", "num") and rows[1][0][0].className == "long-text"
