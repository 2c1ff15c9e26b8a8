"""A damaged .ncu-rep can hold a launch figure past its kernel column's integer type: one line naming
the kernel and field, not the loader's catch-all (fuzz_long s17 seed 2035, ncu-rep #2064: a grid
size of ~1e300 from bytes set to 0x7f, OverflowError in polars)."""

from __future__ import annotations

import pytest

from profaudit.errors import InputError
from profaudit.parsers import ncu_rep


@pytest.mark.parametrize("field, value", [("grid_size", 2**70), ("block_x", -(2**64)), ("grid_x", 10**300)])
def test_a_kernel_figure_past_its_column_type_is_one_line(field, value):
    kernels = [{"name": "ok", "grid_size": 1}, {"name": "bad", field: value}]
    with pytest.raises(InputError, match=rf"report\.ncu-rep: kernel 1: {field} = -?\d+ is outside the range of its column \(Int64\)"):
        ncu_rep._kernel_frame(kernels, "report.ncu-rep")


def test_figures_in_range_still_make_the_frame():
    df = ncu_rep._kernel_frame([{"name": "k", "grid_size": 2**63 - 1}], "report.ncu-rep")
    assert df["grid_size"].to_list() == [2**63 - 1]
