"""`parquet_read` builds a dictionary string column by gathering the dictionary's values, so every
row is a 16-byte view into one buffer of the distinct strings: cast from polars' Categorical, each
row's string over 12 bytes was written out again (the dataset read-back of a 200 MB rocprofv3
ingest: 14.25 M copies of a 26-byte profile id, 574 MB for a column whose views take 228; that
read peaked at 2,560 MB, now 1,940, same frame; s19 leftover c). Checked here on what a column's
Arrow export holds (machine-independent): its string bytes, beside its views."""

from __future__ import annotations

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from profaudit.parsers.parquet_read import read_parquet_frame

_PID = "rocprofv3-csv:/some/folder/4242_kernel_trace.csv#0"  # 50 bytes: past a view's 12 inline bytes


def _string_bytes(s: pl.Series) -> int:
    """Bytes of string data the column's views point into (its Arrow string_view buffers)."""
    arr = s.to_arrow(compat_level=pl.CompatLevel.newest())
    chunks = arr.chunks if isinstance(arr, pa.ChunkedArray) else [arr]
    assert all(pa.types.is_string_view(c.type) for c in chunks)
    return sum(b.size for c in chunks for b in c.buffers()[2:] if b is not None)


def _written(tmp_path, n: int):
    df = pl.DataFrame({
        "profile_id": [_PID] * n,
        "metric": [None if i % 11 == 0 else f"a_metric_name_number_{i % 7}" for i in range(n)],
        "short": [("KB", "", None)[i % 3] for i in range(n)],
        "value": [float(i) for i in range(n)],
    })
    f = tmp_path / "part.parquet"
    df.write_parquet(f, row_group_size=122_880)  # dataset_v2's row groups
    return df, f


def test_long_strings_are_stored_once_per_batch_not_once_per_row(tmp_path):
    n = 300_000  # three row groups, three batches
    df, f = _written(tmp_path, n)
    got = read_parquet_frame(f)
    assert got.equals(df, null_equal=True) and got.schema == df.schema
    # one copy of each distinct value per batch at most (before: 50 and 24 bytes a row, 15 MB and 6.5 MB)
    assert _string_bytes(got["profile_id"]) <= 3 * len(_PID)
    assert _string_bytes(got["metric"]) <= 3 * 7 * len("a_metric_name_number_0")
    assert _string_bytes(got["short"]) == 0  # inline in the views, as before


def test_the_same_frame_as_the_whole_table_read(tmp_path):
    df, f = _written(tmp_path, 130_000)
    whole = pl.read_parquet(f, use_pyarrow=True)
    got = read_parquet_frame(f)
    assert got.schema == whole.schema and got.equals(whole, null_equal=True)
    assert [got[c].n_chunks() for c in got.columns] == [whole[c].n_chunks() for c in whole.columns]
    # a large_string file and a batch whose dictionary indices are mostly null
    t = pa.table({"s": pa.array([None] * 99_999 + [_PID], pa.large_string()), "i": pa.array(range(100_000))})
    pq.write_table(t, tmp_path / "large.parquet")
    got = read_parquet_frame(tmp_path / "large.parquet")
    whole = pl.read_parquet(tmp_path / "large.parquet", use_pyarrow=True)
    assert got.schema == whole.schema and got.equals(whole, null_equal=True) and got["s"][-1] == _PID


def test_a_batch_of_strings_only(tmp_path):
    # every column a dictionary string (a Neuron Explorer Warning table holds one message column)
    t = pa.table({"message": [_PID, None, "short"], "kind": ["a", "b", None]})
    pq.write_table(t, tmp_path / "w.parquet")
    got = read_parquet_frame(tmp_path / "w.parquet")
    assert got.equals(pl.read_parquet(tmp_path / "w.parquet", use_pyarrow=True), null_equal=True)
    assert got.to_dict(as_series=False) == {"message": [_PID, None, "short"], "kind": ["a", "b", None]}


def test_a_path_that_is_not_utf8(tmp_path):
    # a part under a folder named with non-UTF-8 bytes (held by Python as surrogate escapes): pyarrow
    # refused the path ("surrogates not allowed"); the file object reads the same frame
    import os

    folder = os.fsdecode(os.fsencode(str(tmp_path)) + b"/caf\xe9")
    os.mkdir(folder)
    df, f = _written(tmp_path, 1_000)
    target = os.path.join(folder, "part.parquet")
    os.replace(f, target)
    got = read_parquet_frame(target)
    assert got.equals(df, null_equal=True) and got.schema == df.schema
