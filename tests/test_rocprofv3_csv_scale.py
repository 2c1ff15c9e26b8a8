"""rocprofv3 CSV traces of real size (issue 13, size blow-ups): a 200 MB kernel trace (2 M
dispatches) is a real workload, so it is read in batches with only the columns a record kind uses,
cast as it is read, and its launch metrics are built in their final order instead of sorted.
Checked here: the same tables as a plain reference, peak memory per MB of trace and Python work
that does not grow with the rows (tests/read_cost.py), and damage the batched read must still see."""

from __future__ import annotations

import random

import polars as pl
import pytest

from conftest import assert_one_line_error
from profaudit.parsers import rocprofv3_csv
from profaudit.parsers.base import ReadOptions
from tests.read_cost import read_cost
from tests.test_rocprofv3_csv import KERNEL_COLS

_HEAD = ",".join(f'"{c}"' for c in KERNEL_COLS) + "\n"
_LINE = '"KERNEL_DISPATCH","Agent 2",1,0,9,1,3,"add(float*, float*)",6,400,650,1536,0,12,4,24,256,1,1,1000,2,1\n'


def test_kernel_trace_memory_per_mb_and_python_work(tmp_path):
    """Two blow-ups of one dispatch (9 and 19 MB): what the larger one adds to the peak, per MB
    added, is the cost of a real 200 MB trace. The whole-file text read with a sort of the
    launch metrics took 17.9 MB per MB here (3.6 GB for 200 MB); the batched read takes 7.2-7.9
    (both measured by tests/read_cost.py, jemalloc decay 0, on 1-32 polars threads; s18, review F18-1)."""
    rows = 100_000
    small, big = tmp_path / "a_kernel_trace.csv", tmp_path / "b_kernel_trace.csv"
    small.write_text(_HEAD + _LINE * rows)
    big.write_text(_HEAD + _LINE * (2 * rows))
    # read_cost makes a read's peak its live bytes (jemalloc decay 0, 2 polars threads): runs agree
    # to about 1 MB, so the least of three only guards against a stray outlier. Before that, the
    # purge timer's luck gave 6.9-15.1 per MB and fresh-clone CI runs failed at 13.8x and 14.8x.
    runs = {p: [read_cost(p, "rocprofv3_csv", "metrics") for _ in range(3)] for p in (small, big)}
    a, b = (min(runs[p], key=lambda r: r["peak_kb"] - r["base_kb"]) for p in (small, big))
    assert a["rows"] == 7 * rows and b["rows"] == 14 * rows  # 7 launch metrics per dispatch
    added_mb = (big.stat().st_size - small.stat().st_size) / 2**20
    grown_mb = ((b["peak_kb"] - b["base_kb"]) - (a["peak_kb"] - a["base_kb"])) / 1024
    assert added_mb > 8
    assert grown_mb < 11 * added_mb, (grown_mb, added_mb)
    # the rows never pass through Python: the calls are the same for twice the rows
    assert b["calls"] - a["calls"] < 1_000, (a["calls"], b["calls"])


def _reference_metrics(K: pl.DataFrame) -> pl.DataFrame:
    """The launch metrics as the reader built them before: one frame per column, concatenated, sorted."""
    parts = [K.filter(pl.col(c).is_not_null()).select("kernel_id", metric=pl.lit(m), unit=pl.lit(u), value=pl.col(c).cast(pl.Float64),
                                                      value_int=pl.col(c), kind=pl.lit("launch"))
             for c, m, u in rocprofv3_csv._LAUNCH_METRICS if c in K.columns]
    return pl.concat(parts).sort("kernel_id", "metric")


@pytest.mark.parametrize("seed", range(6))
def test_launch_metrics_in_order_without_a_sort(seed):
    rng = random.Random(seed)
    n = rng.randint(1, 300)
    cols = [c for c, _, _ in rocprofv3_csv._LAUNCH_METRICS if rng.random() < 0.8] or ["SGPR_Count"]
    K = pl.DataFrame({"kernel_id": pl.Series(range(n), dtype=pl.Int64),
                      **{c: pl.Series([rng.choice([None, 0, rng.randint(-5, 1 << 40)]) for _ in range(n)], dtype=pl.Int64) for c in cols}})
    got = rocprofv3_csv._launch_metrics(K)
    want = _reference_metrics(K)
    assert got.select(want.columns).equals(want), (got, want)


def test_no_launch_metric_columns():
    assert rocprofv3_csv._launch_metrics(pl.DataFrame({"kernel_id": [0, 1]})) is None


@pytest.mark.parametrize("line, needle", [
    # a line with more fields than the header: a batched read that parsed only the columns it
    # keeps would load this without a word
    (_LINE.rstrip("\n") + ",7\n", "not a readable rocprofv3 CSV"),
    (_LINE.replace(",650,", ",6.5e2,"), "column End_Timestamp, data row 2: '6.5e2' is not an integer"),
])
def test_damage_after_the_first_batch_is_one_line(tmp_path, cli, line, needle):
    p = tmp_path / "1_kernel_trace.csv"
    p.write_text(_HEAD + _LINE + line + _LINE * 3)
    assert_one_line_error(cli("kernels", p), needle)


def test_file_name_with_pattern_characters(tmp_path):
    # the batched read is handed a path, which polars would expand as a glob pattern
    d = tmp_path / "run[1]*"
    d.mkdir()
    p = d / "x[2]?_kernel_trace.csv"
    p.write_text(_HEAD + _LINE * 3)
    assert rocprofv3_csv.PARSER.read(p, ReadOptions()).tables["kernels"].height == 3
