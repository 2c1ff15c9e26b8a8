"""The native reader of Chrome-trace event chunks (`_trace_reader.c`), as polars frames.

`read_events(chunk, schema)` returns exactly the frame `pl.read_json(chunk, schema=schema)`
returns (column names and order, dtypes, values bit for bit, nulls, the `args` struct's field
order and its own nulls), or raises `Unsupported` for any input outside the subset the C reader
implements (its header lists it: type mismatches, repeated keys, numbers polars would format or
truncate, odd escapes, deep nesting, invalid UTF-8, ...). The caller then runs polars on the
same text, so a decline costs time, never correctness. Strings come back as Arrow string views,
which polars takes without a copy.

The extension is optional: it is built by `pip install -e .` where a C compiler exists
(pyproject.toml `ext-modules`, `optional = true`); without it `available()` is False and every
chunk goes through polars. `PROFAUDIT_NATIVE_TRACE=0` switches it off (benchmarks measure the
polars path in the same run with it).
"""

from __future__ import annotations

import os

import polars as pl

try:
    from profaudit.parsers import _trace_reader as _native
except ImportError:  # no compiler at install time: polars reads every chunk
    _native = None

_KINDS = {pl.String: 0, pl.Int64: 1, pl.Float64: 2}
_LIST, _STRUCT = 3, 4


class Unsupported(Exception):
    """The chunk or the schema is outside what the native reader reads exactly."""


def available() -> bool:
    return _native is not None and os.environ.get("PROFAUDIT_NATIVE_TRACE", "1") != "0"


def _field_spec(name: str, dtype: pl.DataType):
    """(spec entry for the C reader, pyarrow type) of one field, or None if not supported."""
    import pyarrow as pa

    for base, kind in _KINDS.items():
        if dtype == base:
            return (name, kind, None), {0: pa.string_view(), 1: pa.int64(), 2: pa.float64()}[kind]
    if isinstance(dtype, pl.List) and dtype.inner == pl.Int64:
        return (name, _LIST, None), pa.list_(pa.int64())
    if isinstance(dtype, pl.Struct):
        kids = [_field_spec(f.name, f.dtype) for f in dtype.fields]
        if any(k is None or k[0][1] == _STRUCT for k in kids) or len(kids) > 64:
            return None  # one level of struct, as the chrome-trace schemas have
        return (name, _STRUCT, tuple(k[0] for k in kids)), pa.struct([pa.field(k[0][0], k[1]) for k in kids])
    return None


_PREPARED: dict[tuple, tuple | None] = {}


def _prepare(schema: dict[str, pl.DataType]):
    key = tuple((k, str(v)) for k, v in schema.items())
    hit = _PREPARED.get(key, False)
    if hit is not False:
        return hit
    fields = [_field_spec(k, v) for k, v in schema.items()]
    prepared = None
    if fields and len(fields) <= 64 and all(f is not None for f in fields):
        prepared = (tuple(f[0] for f in fields), [f[1] for f in fields], list(schema))
    if len(_PREPARED) < 64:  # a handful of schemas per process; bounded anyway
        _PREPARED[key] = prepared
    return prepared


_ZEROS: list = []  # [pyarrow Buffer of zero bytes], shared by the all-null columns of every chunk


def _zeros(rows: int):
    """A read-only zero buffer big enough for any buffer of a column of `rows` rows (16-byte string
    views are the widest). Kept for the next chunk: its pages are never written, so it costs
    address space, not memory."""
    import pyarrow as pa

    need = 16 * rows + 16
    if not _ZEROS or _ZEROS[0].size < need:
        _ZEROS[:] = [pa.py_buffer(_native.zeros(max(need, 1 << 20)))]
    return _ZEROS[0]


def _nulls(typ, rows: int, zeros):
    """An all-null array of `typ` over the shared zero buffer (validity all 0, values 0, string
    views empty, list offsets 0): `pa.nulls` wrote a block of its own per column per chunk."""
    import pyarrow as pa

    if pa.types.is_struct(typ):
        kids = [_nulls(typ.field(i).type, rows, zeros) for i in range(typ.num_fields)]
        return pa.Array.from_buffers(typ, rows, [zeros], null_count=rows, children=kids)
    if pa.types.is_list(typ):
        child = pa.Array.from_buffers(typ.value_type, 0, [None, zeros], null_count=0)
        return pa.Array.from_buffers(typ, rows, [zeros, zeros], null_count=rows, children=[child])
    return pa.Array.from_buffers(typ, rows, [zeros, zeros], null_count=rows)


def _array(typ, col, rows: int):
    """A pyarrow array of `typ` over the buffers the C reader filled (no copy)."""
    import pyarrow as pa

    if col is None:  # no row had a value
        return _nulls(typ, rows, _zeros(rows))
    nvalid, valid = col[0], col[1]
    nulls = rows - nvalid
    vbuf = pa.py_buffer(valid) if nulls else None
    if pa.types.is_struct(typ):
        kids = [_array(typ.field(i).type, c, rows) for i, c in enumerate(col[2])]
        return pa.Array.from_buffers(typ, rows, [vbuf], null_count=nulls, children=kids)
    if pa.types.is_list(typ):
        _, _, offsets, nelem, nelem_valid, cvalid, values = col
        enulls = nelem - nelem_valid
        child = pa.Array.from_buffers(pa.int64(), nelem, [pa.py_buffer(cvalid) if enulls else None, pa.py_buffer(values)],
                                      null_count=enulls)
        return pa.Array.from_buffers(typ, rows, [vbuf, pa.py_buffer(offsets)], null_count=nulls, children=[child])
    if pa.types.is_string_view(typ):
        return pa.Array.from_buffers(typ, rows, [vbuf, pa.py_buffer(col[2]), pa.py_buffer(col[3])], null_count=nulls)
    return pa.Array.from_buffers(typ, rows, [vbuf, pa.py_buffer(col[2])], null_count=nulls)


def identical(a: pl.DataFrame, b: pl.DataFrame) -> bool:
    """The contract's equality: same schema (names, order, dtypes, struct fields), rows, nulls
    (a struct's own nulls too) and values, floats bit for bit (so -0.0 differs from 0.0)."""
    import numpy as np

    if a.schema != b.schema or a.height != b.height:
        return False
    for c in a.columns:
        x, y = a[c], b[c]
        if not x.is_null().equals(y.is_null()):
            return False
        if x.dtype == pl.Struct:
            if not identical(x.struct.unnest(), y.struct.unnest()):
                return False
        elif x.dtype == pl.Float64:
            bx, by = (s.fill_null(0.0).to_numpy().view(np.int64) for s in (x, y))
            if not np.array_equal(bx, by):
                return False
        elif not x.equals(y):
            return False
    return True


def read_events(chunk: bytes, schema: dict[str, pl.DataType]) -> pl.DataFrame:
    """The events of `chunk` (a JSON array of objects) as `pl.read_json(chunk, schema=schema)`
    reads them; Unsupported where the native reader does not answer (or is not built)."""
    if not available():
        raise Unsupported("the native trace reader is not built or is switched off")
    prepared = _prepare(schema)
    if prepared is None:
        raise Unsupported("schema outside the native reader's types")
    spec, types, names = prepared
    try:
        rows, cols = _native.scan(chunk, spec)
    except _native.Unsupported as exc:
        raise Unsupported(str(exc)) from None
    import pyarrow as pa

    batch = pa.RecordBatch.from_arrays([_array(t, c, rows) for t, c in zip(types, cols)], names=names)
    return pl.from_arrow(batch)
