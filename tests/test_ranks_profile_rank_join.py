"""`profaudit.ranks.activity._with_profile_rank` adds each profile's rank as a new column instead of
an inner join that copied the whole table (b89aae0); it must keep exactly the rows the join kept
(review G5, session 16: a null profile_id was kept, the join drops it)."""

from __future__ import annotations

import polars as pl
import pytest


@pytest.mark.parametrize("ids", [["a", None], ["a", "b", "a"], ["c"], [None], [], ["b", None, "a"]])
def test_rank_column_keeps_the_rows_of_the_inner_join(ids):
    from profaudit.ranks.activity import _with_profile_rank

    df = pl.DataFrame({"profile_id": ids, "x": list(range(len(ids)))}, schema={"profile_id": pl.Utf8, "x": pl.Int64})
    whole = pl.DataFrame({"profile_id": ["a", "b"], "rank": [3, 1]})
    got = _with_profile_rank(df, whole)
    want = df.join(whole, on="profile_id", how="inner")
    assert got.sort("x").equals(want.sort("x")), (got, want)
