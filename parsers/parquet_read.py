"""A Parquet file as a polars DataFrame through pyarrow's decoder, row group by row group, its
string columns read as dictionaries: the same frame as `pl.read_parquet(source, use_pyarrow=True)`
(same columns, dtypes, values and chunks), at about half the peak memory.

Why pyarrow at all: polars' own page decoder aborts the process on a damaged page header (see
`profaudit.parsers.isolate.read_parquet_untrusted`). Why not `read_table` + `from_arrow` whole:
pyarrow decodes every string column in full (a dictionary-encoded column of 14 M rows holding 20
distinct names becomes 14 M strings), and polars then copies each into its own string layout while
the whole Arrow table is still alive. Reading the dataset `ingest` writes for a 200 MB rocprofv3
profile (14.3 M metric rows) peaked at 5.7 GB that way, 4.1 GB of it for the metrics part alone.

Here the file is decoded batch by batch (read_table's batches), its string columns kept as
dictionaries (pyarrow's `read_dictionary`: indices plus the distinct values), and each becomes a
String column by gathering its distinct values: 16-byte views onto one buffer of them, never a
copy of every string (see `_batch_frame`). Only one batch's Arrow data is alive at a time, and a
column null in every row (most of a dataset's kernels columns) is not decoded at all.
Measured on that dataset: 5.7 GB -> 2.6 GB peak, 28 -> 7 CPU s (s18, strings cast from
Categorical); gathered, 2.6 -> 1.94 GB (s19).
"""

from __future__ import annotations

import os
from typing import Any

# pyarrow.dataset's default batch size, which `pq.read_table` (and so polars' use_pyarrow read) uses
_BATCH_ROWS = 131_072


def _string_columns(schema) -> list[str]:
    """Top-level plain string columns: the ones read as dictionaries and cast back. Columns that
    are dictionaries in the file's own Arrow schema (written from a Categorical) stay as they are,
    as `read_table` gives them."""
    import pyarrow as pa

    return [f.name for f in schema if pa.types.is_string(f.type) or pa.types.is_large_string(f.type)]


def read_parquet_frame(source: Any):
    """`source` (a path or a binary file object) as a polars DataFrame, equal to
    `pl.read_parquet(source, use_pyarrow=True)`. Errors are pyarrow's and polars' own (the caller
    words them)."""
    import polars as pl
    import pyarrow.parquet as pq

    from profaudit.parsers.textsafe import utf8_name

    if isinstance(source, (str, os.PathLike)) and not utf8_name(source):
        # pyarrow takes a path as UTF-8 text only: a Neuron Explorer folder or a dataset under a
        # parent named with non-UTF-8 bytes failed with "'utf-8' codec can't encode characters ...
        # surrogates not allowed" (D, s19). Python opens such a path; pyarrow reads the file object
        with open(source, "rb") as fh:
            return read_parquet_frame(fh)
    plain = pq.ParquetFile(source, memory_map=True)
    strings = _string_columns(plain.schema_arrow)
    names = plain.schema_arrow.names
    if plain.metadata.num_rows == 0 or len(set(names)) != len(names):
        # nothing to gain (no rows), or two columns of one name (a damaged or hand-made file,
        # which polars refuses): the whole-table read, as before
        if hasattr(source, "seek"):
            source.seek(0)  # pyarrow moved a file object's position reading the footer
        return pl.read_parquet(source, use_pyarrow=True)
    pf = pq.ParquetFile(source, memory_map=True, read_dictionary=strings)
    dtypes: dict[str, Any] = {}
    parts: list[tuple[Any, int]] = []  # (the batch's columns that hold a value, its rows)
    # in read_table's batches (its scanner's default size, never across a row group), so that the
    # frame's chunks are the ones the whole-table read gave
    for group in range(pf.num_row_groups):
        for batch in pf.iter_batches(batch_size=_BATCH_ROWS, row_groups=[group], use_threads=True):
            if not dtypes:
                dtypes = _cast(pl.from_arrow(batch.slice(0, 0), rechunk=False), strings).schema
            # a column null on every row of the batch is left out here and comes back as one typed
            # null column (see below): decoded, each row took 8-16 bytes (a view per string), and
            # a profaudit dataset's tables are mostly such columns (40 of the kernels table's 54
            # for a rocprofv3 trace)
            held = [n for n, col in zip(batch.schema.names, batch.columns) if col.null_count < batch.num_rows]
            df = _batch_frame(batch, held, strings) if held else None
            parts.append((df, batch.num_rows))
            del batch, df  # this batch's Arrow buffers go before the next one is decoded
    return _assemble(parts, names, dtypes)


def _batch_frame(batch, held: list[str], strings: list[str]):
    """The batch's `held` columns as a polars frame, its dictionary string columns as String.

    A string column is its dictionary's values (a String Series: views and one buffer of the
    distinct strings) gathered by the indices: each row a 16-byte view into that one buffer. Cast
    from polars' Categorical instead, every row's string over 12 bytes was written out again (a
    view and a copy of its bytes): the dataset read-back of a 200 MB rocprofv3 ingest kept a 26-byte
    profile id 14.25 M times, 574 MB for that column where its views are 228 (s19 leftover c)."""
    import polars as pl
    import pyarrow as pa

    gathered = {}
    for name in held:
        col = batch.column(name)
        if name in strings and pa.types.is_dictionary(col.type):
            gathered[name] = pl.from_arrow(col.dictionary).gather(pl.from_arrow(col.indices)).alias(name)
    rest = [n for n in held if n not in gathered]
    if not rest:  # strings only (a frame of no columns has no height to add them to)
        return pl.DataFrame(list(gathered.values())).select(held)
    df = _cast(pl.from_arrow(batch.select(rest), rechunk=False), strings)
    return df.with_columns(gathered.values()).select(held) if gathered else df


def _cast(df, strings: list[str]):
    import polars as pl

    return df.with_columns(pl.col(c).cast(pl.String) for c in strings if c in df.columns)


def _assemble(parts: list, names: list[str], dtypes: dict):
    """The batches as one frame, columns in the file's order and chunked by batch as the whole-table
    read gave them. A column null in every batch is one typed null column, sliced into those chunks
    (polars does not write the pages of a new null column, and slices share them: no memory until
    used; chunks unlike the other columns' would make polars copy the whole frame into one chunk).
    A column null in some batches only gets typed nulls in those, as the decode gave them."""
    import polars as pl

    total = sum(n for _, n in parts)
    held = [c for c in names if any(df is not None and c in df.columns for df, _ in parts)]
    frames = []
    for df, n in parts:
        missing = [c for c in held if df is None or c not in df.columns]
        if df is None:
            df = pl.DataFrame([_nulls(c, dtypes[c], n) for c in missing])
        elif missing:
            # a Series, not pl.lit: concat joins neighbouring literal columns into one chunk
            df = df.with_columns(_nulls(c, dtypes[c], n) for c in missing)
        frames.append(df.select(held) if held else None)
    out = None if not held else pl.concat(frames, how="vertical", rechunk=False) if len(frames) > 1 else frames[0]
    empty = []
    for c in names:
        if c in held:
            continue
        full = _nulls(c, dtypes[c], total)
        col, at = None, 0
        for _, n in parts:
            piece = full.slice(at, n)
            at += n
            if col is None:
                col = piece
            else:
                col.append(piece)
        empty.append(col)
    out = pl.DataFrame(empty) if out is None else out.with_columns(empty)
    return out.select(names)


def _nulls(name: str, dtype, n: int):
    """A Series of `n` typed nulls."""
    import polars as pl

    return pl.select(pl.repeat(None, n, dtype=dtype).alias(name)).to_series()
