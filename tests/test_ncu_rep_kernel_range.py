"""A damaged .ncu-rep can hold a launch figure past its kernel column's integer type: one line naming
the kernel and field, not the loader's catch-all (fuzz_long s17 seed 2035, ncu-rep #2064: a grid
size of ~1e300 from bytes set to 0x7f, OverflowError in polars)."""

from __future__ import annotations

import polars as pl
import pytest

from profaudit.errors import InputError
from profaudit.parsers import ncu_rep


@pytest.mark.parametrize("field, value, shown", [("grid_size", 2**70, "1.18059e+21"), ("block_x", -(2**64), "-1.84467e+19"),
                                                  ("grid_x", 10**300, "1e+300"), ("grid_y", 2**63, "9223372036854775808")])
def test_a_kernel_figure_past_its_column_type_is_one_line(field, value, shown):
    # the figure as fmt_refused shows it: six digits (the reproducer's 1e300 was printed as 301
    # digits), in full only where six digits would round it into Int64's range
    kernels = [{"name": "ok", "grid_size": 1}, {"name": "bad", field: value}]
    with pytest.raises(InputError) as got:
        ncu_rep._kernel_frame(kernels, "report.ncu-rep")
    assert str(got.value) == f"report.ncu-rep: kernel 1: {field} = {shown} is outside the range of its column (Int64)"


def test_every_integer_kernel_column_is_int64():
    # _kernel_frame's range check knows Int64 only: a narrower or unsigned column would reach the
    # catch-all again, so a schema change must come with a change there
    from profaudit import schema

    ints = {c: t for c, t in schema.KERNELS.polars_schema.items() if t.is_integer()}
    assert ints and all(t == pl.Int64 for t in ints.values()), ints


def test_figures_in_range_still_make_the_frame():
    df = ncu_rep._kernel_frame([{"name": "k", "grid_size": 2**63 - 1}], "report.ncu-rep")
    assert df["grid_size"].to_list() == [2**63 - 1]
