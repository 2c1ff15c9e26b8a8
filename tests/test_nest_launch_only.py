"""The launch table alone (parsers/rocprof_sdk.py `nest_api_ranges(..., ranges=False)`), as a
rocprofv3 kernel trace's reader asks for it to place its kernels inside the marker ranges of the
API traces beside it. It must be the launch table the whole nesting gives: the kernels' nvtx_range
comes from it.

Why it exists (issue 13, fuzz_long size blow-ups, RISE rocprofv3-csv-dir #111 in s17 seed 3105): a
rocprofv3 folder whose HIP API trace was one line repeated to 200 MB (3.6 M calls) peaked at 2,004 MB
read alone in a fresh fuzz worker whose bound is 2,048, and 2,266 MB in a warm one. The kernel
trace's read nested the 3.6 M calls and built every column of the range table it then threw away
(~340 MB); read by the harness alone the folder now peaks at 1,431 MB instead of 1,788 MB."""

from __future__ import annotations

import random

import polars as pl
import pytest

from profaudit.parsers import rocprof_sdk
from tests.test_nest_api_ranges import _frame


def _launch_both_ways(R: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    ranges, whole = rocprof_sdk.nest_api_ranges(R, "rocprofv3")
    assert ranges is not None
    none, alone = rocprof_sdk.nest_api_ranges(R, "rocprofv3", ranges=False)
    assert none is None  # no range table is built
    return whole, alone


@pytest.mark.parametrize("seed", range(8))
def test_launch_alone_is_the_whole_nestings_launch(seed):
    rng = random.Random(seed)
    # distinct (thread, start, end) keys: one order whatever the sort does with ties, so the two
    # calls' `keep="first"` pick the same row for a correlation id launched twice
    R = _frame(rng, rng.randint(1, 400), nulls=seed % 2 == 1).unique(["thread_id", "start_ns", "end_ns"], keep="first", maintain_order=True)
    whole, alone = _launch_both_ways(R)
    # the table's row order is unique()'s, which differs from one call to the next either way; it
    # is joined on correlation_id, which it holds once each
    assert alone.sort("correlation_id").equals(whole.sort("correlation_id")), (alone, whole)


def test_launch_alone_on_a_blown_up_api_trace_shape():
    # the RISE input's shape, small: one HIP call repeated (same correlation id, same times) under
    # one marker range, and calls outside it
    n = 3_000
    R = pl.DataFrame({"kind": ["user_annotation"] + ["cuda_runtime"] * n + ["cuda_runtime"],
                      "name": ["step"] + ["hipLaunchKernel"] * n + ["hipMemcpy"],
                      "thread_id": [9] * (n + 2), "process_id": [4242] * (n + 2),
                      "start_ns": [100] + [200] * n + [5_000], "end_ns": [1_000] + [300] * n + [5_100],
                      "correlation_id": [None] + [6] * n + [7]}, schema_overrides={"correlation_id": pl.Int64})
    whole, alone = _launch_both_ways(R)
    assert alone.sort("correlation_id").equals(whole.sort("correlation_id"))
    assert sorted(alone.rows()) == [(6, "step"), (7, None)]


def test_empty_frame_gives_nothing_either_way():
    R = _frame(random.Random(0), 1, nulls=False).clear()
    assert rocprof_sdk.nest_api_ranges(R, "rocprofv3", ranges=False) == (None, None)
