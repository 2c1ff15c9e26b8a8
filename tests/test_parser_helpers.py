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


@pytest.mark.parametrize("module, name", [("nsys_sqlite", "a.sqlite"), ("nsys_rep", "b.nsys-rep"), ("xplane", "c.xplane.pb"),
                                          ("ncu_csv", "d.csv"), ("nsys_stats_csv", "d.csv"), ("nvprof_csv", "d.csv")])
def test_a_file_the_os_will_not_read_is_one_line_in_every_parser(tmp_path, module, name):
    # a folder where a file belongs: open() fails with IsADirectoryError in each parser's own read
    import importlib

    from profaudit.errors import InputError
    from profaudit.parsers.base import ReadOptions

    (tmp_path / name).mkdir()
    parser = importlib.import_module(f"profaudit.parsers.{module}").PARSER
    with pytest.raises(InputError) as ei:
        parser.read(tmp_path / name, ReadOptions())
    assert str(ei.value) == f"{tmp_path / name}: cannot read: Is a directory"
