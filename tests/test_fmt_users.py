"""Modules that print numbers or Markdown cells do it through the one formatter (profaudit.fmt), so
that the same value prints the same way in the CLI tables, Markdown reports and notebooks."""

from __future__ import annotations

import polars as pl


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
