"""schema.conform on a big frame takes the select path (typed null literals), not the insertion
path (null Series): a literal column stays free when the frame is later sorted, joined or
gathered, where an inserted null Series is copied row by row (s18 B: `roofline` on the 200 MB
rocprofv3 blow-up 1,941 MB peak through the select path, 2,349 through insertion; `kernel-report`
1,837 against 2,187). Small frames keep the insertion path (its gain is per read, for ncu's
one-row tables: tests/test_conform_insertion.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import polars as pl

from profaudit import schema

REPO = Path(__file__).resolve().parents[1]


def test_big_frames_take_the_select_path_and_small_ones_insertion():
    t = schema.ALL_TABLES["kernels"]
    for n, insertion in ((schema._INSERT_MAX_ROWS, True), (schema._INSERT_MAX_ROWS + 1, False)):
        df = pl.DataFrame({"kernel_id": pl.int_range(n, eager=True), "name": pl.Series(["k"] * n)})
        assert (schema._conform_by_insertion(t, df, df.schema, "p") is not None) is insertion
        got = schema.conform(t, df, "p")
        assert got.columns == [c.name for c in t.columns] and got["grid_x"].null_count() == n


_CHILD = textwrap.dedent(
    """
    import json
    import polars as pl
    from profaudit import schema
    def peak_kb():
        with open("/proc/self/status") as fh:
            return next(int(l.split()[1]) for l in fh if l.startswith("VmHWM:"))
    n = 1_000_000
    df = pl.DataFrame({"kernel_id": pl.int_range(n, eager=True).reverse(), "start_ns": pl.int_range(n, eager=True).reverse()})
    base = peak_kb()
    k = schema.conform("kernels", df, "p").sort("start_ns")
    print(json.dumps({"grown_kb": peak_kb() - base, "rows": k.height, "width": k.width}))
    """
)


def test_absent_columns_of_a_big_frame_cost_nothing_when_sorted():
    """A 1 M-row kernels frame of two columns, conformed (52 absent columns) and sorted: the peak's
    growth, measured as tests/read_cost.py does (fresh interpreter, VmHWM, 2 polars threads,
    jemalloc decay off): 15 MB through the select path, 525 MB through insertion (fails before)."""
    env = {**os.environ, "POLARS_MAX_THREADS": "2", "_RJEM_MALLOC_CONF": "dirty_decay_ms:0,muzzy_decay_ms:0"}
    r = subprocess.run([sys.executable, "-c", _CHILD], capture_output=True, text=True, cwd=REPO, timeout=300, env=env)
    assert r.returncode == 0, r.stderr[-2000:]
    got = json.loads(r.stdout.strip().splitlines()[-1])
    assert got["rows"] == 1_000_000 and got["width"] == len(schema.ALL_TABLES["kernels"].columns)
    assert got["grown_kb"] < 150 * 1024, got
