"""Small readers the parsers share (profaudit.parsers.base): csv_cells, finite_number."""

from __future__ import annotations

import math

import pytest

from profaudit.parsers.base import csv_cells, finite_number


def test_cells_of_one_line():
    assert csv_cells('a,"b,c",') == ["a", "b,c", ""]
    assert csv_cells("a\tb", "\t") == ["a", "b"]
    assert csv_cells("") == []


def test_a_line_the_csv_module_refuses_is_none():
    # a quoted field beyond csv.field_size_limit (131,072 characters by default)
    assert csv_cells('"' + "x" * 200_000 + '"') is None


@pytest.mark.parametrize("v, want", [(12.5, 12.5), ("12.5", 12.5), (" 1e-3 ", 1e-3), (3, 3.0), ("abc", None), (None, None),
                                     (math.nan, None), ("inf", None), (10**400, None), ({"a": 1}, None)])
def test_finite_number_from_numbers_and_numeric_text(v, want):
    assert finite_number(v) == want
