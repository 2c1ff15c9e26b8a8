"""`profaudit.parsers.parquet_read`: the frame of `pl.read_parquet(source, use_pyarrow=True)` (columns,
dtypes, values, chunks), read row group by row group with string columns as dictionaries, at a
bounded peak per row (reading back the dataset `ingest` wrote from a 200 MB rocprofv3 profile
peaked at 5.7 GB the whole-table way)."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from profaudit.errors import InputError
from profaudit.parsers.isolate import read_parquet_untrusted
from profaudit.parsers.parquet_read import _BATCH_ROWS, read_parquet_frame

REPO = Path(__file__).resolve().parents[1]


def _frame(n: int) -> pl.DataFrame:
    """Strings with few distinct values and nulls, a column null everywhere (string and integer),
    one null until late in the file, a Categorical, a list of strings and a float column."""
    i = pl.int_range(n, eager=True)
    return pl.DataFrame({
        "s": pl.Series([None if k % 5 == 0 else f"name{k % 7}" for k in range(n)], dtype=pl.String),
        "all_null_s": pl.Series([None] * n, dtype=pl.String),
        "all_null_i": pl.Series([None] * n, dtype=pl.Int64),
        "late": pl.Series([None if k < n * 2 // 3 else f"late-{k % 3}-a-string-longer-than-twelve-bytes" for k in range(n)], dtype=pl.String),
        "i": i,
        "cat": pl.Series([f"c{k % 3}" for k in range(n)], dtype=pl.Categorical),
        "lst": pl.Series([[f"x{k % 2}"] if k % 3 else None for k in range(n)]),
        "f": pl.Series([None if k % 4 == 0 else k / 3 for k in range(n)], dtype=pl.Float64),
    })


def _same(a: pl.DataFrame, b: pl.DataFrame) -> None:
    assert a.schema == b.schema
    assert a.equals(b, null_equal=True)
    assert [a[c].n_chunks() for c in a.columns] == [b[c].n_chunks() for c in b.columns]


def _files(tmp_path: Path) -> list[Path]:
    n = _BATCH_ROWS * 2 + 1_000  # row groups past one batch: chunks split inside a row group
    df = _frame(n)
    out = []
    for name, write in (
        ("polars_small_groups", lambda p: df.write_parquet(p, row_group_size=70_000)),
        ("pyarrow_big_groups", lambda p: pq.write_table(df.to_arrow(), p, row_group_size=n)),
        ("only_nulls", lambda p: pq.write_table(df.select("all_null_s", "all_null_i").to_arrow(), p, row_group_size=50_000)),
        ("no_rows", lambda p: pq.write_table(df.head(0).to_arrow(), p)),
        ("no_strings", lambda p: pq.write_table(df.select("i", "f").to_arrow(), p)),
        ("large_string", lambda p: pq.write_table(df.select("s", "late", "i").to_arrow().cast(
            pa.schema([("s", pa.large_string()), ("late", pa.large_string()), ("i", pa.int64())])), p, row_group_size=100_000)),
    ):
        f = tmp_path / f"{name}.parquet"
        write(f)
        out.append(f)
    return out


def test_same_frame_as_the_whole_table_read(tmp_path):
    for f in _files(tmp_path):
        _same(pl.read_parquet(f, use_pyarrow=True), read_parquet_frame(f))
        # a file object (remote dataset parts are read from bytes)
        _same(pl.read_parquet(io.BytesIO(f.read_bytes()), use_pyarrow=True), read_parquet_frame(io.BytesIO(f.read_bytes())))


def test_columns_null_everywhere_take_no_memory_of_their_own(tmp_path):
    """What the bound below rests on: the null columns come back typed, as nulls, in the same
    chunks as the others."""
    f = tmp_path / "t.parquet"
    _frame(_BATCH_ROWS + 10).write_parquet(f, row_group_size=_BATCH_ROWS // 2)
    df = read_parquet_frame(f)
    assert df["all_null_s"].dtype == pl.String and df["all_null_i"].dtype == pl.Int64
    assert df["all_null_s"].null_count() == df.height and df["all_null_i"].null_count() == df.height
    assert df["all_null_s"].n_chunks() == df["i"].n_chunks() == 3


def test_damaged_part_is_one_line(tmp_path):
    f = tmp_path / "t.parquet"
    _frame(1000).write_parquet(f)
    data = bytearray(f.read_bytes())
    data[len(data) // 3: len(data) // 3 + 64] = b"\xff" * 64
    f.write_bytes(bytes(data))
    with pytest.raises(InputError) as e:
        read_parquet_untrusted(f, f, "unreadable Parquet part")
    assert "unreadable Parquet part" in str(e.value) and "\n" not in str(e.value)


_CHILD = textwrap.dedent(
    """
    import json, sys
    from pathlib import Path
    def peak_kb():
        with open("/proc/self/status") as fh:
            return next(int(l.split()[1]) for l in fh if l.startswith("VmHWM:"))
    import polars as pl, pyarrow.parquet
    from profaudit.parsers.isolate import read_parquet_untrusted
    path = Path(sys.argv[1])
    base = peak_kb()
    df = read_parquet_untrusted(path, path, "unreadable Parquet part")
    print(json.dumps({"base_kb": base, "peak_kb": peak_kb(), "rows": df.height}))
    """
)


def test_dataset_part_peak_per_row(tmp_path):
    """A metrics part as `ingest` writes it (dataset_v2's writer: dictionary-encoded strings,
    122,880-row groups), 1.5 M rows: the read's growth per row. Measured as tests/read_cost.py
    does (fresh interpreter, VmHWM, polars on 2 threads, jemalloc decay off): 139-145 bytes per
    row here (193-199 while string columns were cast from Categorical, before s19); the whole-table read (pyarrow decodes every string, polars copies each while the
    Arrow table is alive) 363-374. The bound sits between them with room both ways (the columns
    alone, 4 strings of 16-byte views and 3 numbers, are 88)."""
    from profaudit import schema
    from profaudit.dataset_v2 import _parquet_bytes

    n = 1_500_000
    k = pl.int_range(n, eager=True)
    names = ["SQ_WAVES", "SQ_INSTS_VALU", "GRBM_GUI_ACTIVE", "TCC_HIT_sum", "TCC_MISS_sum", "FETCH_SIZE", "WRITE_SIZE"]
    df = schema.conform("metrics", pl.DataFrame({
        "kernel_id": k // 7,
        "metric": pl.Series(names * (n // 7) + names[: n % 7]),
        "unit": pl.Series((["", "", "", "", "", "KB", "KB"] * (n // 7 + 1))[:n]),
        "value": (k % 1000).cast(pl.Float64),
        "value_int": k % 1000,
        "kind": pl.Series(["metric"] * n),
    }), "rocprofv3-csv:/some/folder/4242_kernel_trace.csv#0")
    part = tmp_path / "part-00000-000.parquet"
    part.write_bytes(_parquet_bytes(df))
    env = {**os.environ, "POLARS_MAX_THREADS": "2", "_RJEM_MALLOC_CONF": "dirty_decay_ms:0,muzzy_decay_ms:0"}
    r = subprocess.run([sys.executable, "-c", _CHILD, str(part)], capture_output=True, text=True, cwd=REPO, timeout=300, env=env)
    assert r.returncode == 0, r.stderr[-2000:]
    got = json.loads(r.stdout.strip().splitlines()[-1])
    assert got["rows"] == n
    per_row = (got["peak_kb"] - got["base_kb"]) * 1024 / n
    assert per_row < 280, f"{per_row:.0f} bytes per row"
