"""parsers.base.csv_cells: the one 'cells of a CSV line, or None' helper the CSV parsers share."""

from __future__ import annotations

from profaudit.parsers.base import csv_cells


def test_cells_of_one_line():
    assert csv_cells('a,"b,c",') == ["a", "b,c", ""]
    assert csv_cells("a\tb", "\t") == ["a", "b"]
    assert csv_cells("") == []


def test_a_line_the_csv_module_refuses_is_none():
    # a quoted field beyond csv.field_size_limit (131,072 characters by default)
    assert csv_cells('"' + "x" * 200_000 + '"') is None
