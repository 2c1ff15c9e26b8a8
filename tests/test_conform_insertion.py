"""schema.conform's insertion path (columns in declared order with their dtypes: the absent ones
inserted, no query plan) gives the frame the select path gives, on random frames of every table."""

from __future__ import annotations

import random

import polars as pl
import pytest

from profaudit import schema

_VALUES = {pl.Int64: lambda r: r.choice([None, 0, -7, 2**62, r.randint(-1000, 1000)]),
           pl.Float64: lambda r: r.choice([None, 0.0, -1.5, float("nan"), float("inf"), r.random()]),
           pl.Utf8: lambda r: r.choice([None, "", "x", "ä ü", str(r.random())])}


def _select_path(t, df, profile_id):
    # the select conform built before the insertion path: the reference
    exprs = []
    have = df.schema
    for col in t.columns:
        if col.name == "profile_id" and profile_id is not None:
            exprs.append(pl.lit(profile_id, dtype=pl.Utf8).alias("profile_id"))
        elif col.name in have:
            exprs.append(pl.col(col.name) if have[col.name] == col.dtype else pl.col(col.name).cast(col.dtype, strict=False))
        else:
            exprs.append(pl.lit(None, dtype=col.dtype).alias(col.name))
    return df.select(exprs)


def _random_frame(t, r, in_order: bool):
    cols = [c for c in t.columns if r.random() < 0.6] or [t.columns[-1]]
    if not in_order:
        r.shuffle(cols)
    n = r.choice([0, 1, 2, 17])
    return pl.DataFrame({c.name: pl.Series(c.name, [_VALUES[c.dtype](r) for _ in range(n)], dtype=c.dtype) for c in cols})


@pytest.mark.parametrize("name", schema.DATA_TABLES)
def test_insertion_path_gives_the_select_paths_frame(name):
    t = schema.ALL_TABLES[name]
    r = random.Random(name)
    fast = 0
    for k in range(150):
        df = _random_frame(t, r, in_order=k % 3 != 0)
        before = df.clone()
        for pid in (None, "p-1234abcd"):
            if pid is None and "profile_id" not in df.columns and k % 2:
                continue
            got, want = schema.conform(t, df, pid), _select_path(t, df, pid)
            assert got.schema == want.schema
            assert got.equals(want, null_equal=True)
            fast += schema._conform_by_insertion(t, df, df.schema, pid) is not None
        assert df.equals(before, null_equal=True) and df.columns == before.columns  # the caller's frame untouched
    assert fast > 50  # the insertion path itself was compared, not only the fallback


def test_insertion_path_declines_what_needs_a_cast_or_an_order():
    t = schema.ALL_TABLES["metrics"]
    names = [c.name for c in t.columns if c.name != "profile_id"]
    df = pl.DataFrame({n: pl.Series(n, [None], dtype=t.polars_schema[n]) for n in names})
    assert schema._conform_by_insertion(t, df, df.schema, "p") is not None
    assert schema._conform_by_insertion(t, df.select(list(reversed(names))), df.select(list(reversed(names))).schema, "p") is None
    typed = df.with_columns(pl.col(names[0]).cast(pl.Int32 if t.polars_schema[names[0]] != pl.Int32 else pl.Int64))
    assert schema._conform_by_insertion(t, typed, typed.schema, "p") is None
    with_id = df.with_columns(pl.lit("old").alias("profile_id"))
    assert schema._conform_by_insertion(t, with_id, with_id.schema, "new") is None
    assert schema.conform(t, with_id, "new")["profile_id"].to_list() == ["new"]
