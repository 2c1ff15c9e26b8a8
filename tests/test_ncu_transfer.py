"""The `.ncu-rep` child's compact chunks (ncu_child.Columns: typed arrays, string codes, integer
correlation ids) become exactly the frame that polars' non-strict construction made from the same
rows as Python lists, which is what the parent built before the chunks were compact."""

from __future__ import annotations

import pickle
import random
from array import array

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from profaudit import schema
from profaudit.parsers import ncu_rep
from profaudit.parsers.ncu_child import COLS, Columns, IntKeys

_U64 = (1 << 64) - 1


def _reference(rows: list[dict]) -> pl.DataFrame:
    """The rows as the parent built them from lists (strict=False: a value a column's type cannot
    hold is null)."""
    sch = {c: schema.METRICS.polars_schema[c] for c in COLS}
    return pl.DataFrame({c: [r.get(c) for r in rows] for c in COLS}, schema=sch, strict=False)


def _expand(n: int, cols: dict) -> list[dict]:
    """What `Columns.extend(n, **cols)` means, row by row."""
    rows = [{} for _ in range(n)]
    for c, v in cols.items():
        if isinstance(v, IntKeys):
            vals = [str(i) for i in v.ids] + [None] * v.pad
        elif isinstance(v, list):
            vals = v
        else:
            vals = [v] * n
        for r, x in zip(rows, vals):
            r[c] = x
    return rows


def _random_extend(rng: random.Random) -> tuple[int, dict]:
    n = rng.randint(1, 12)
    cols: dict = {}
    for c in COLS:
        pick = rng.random()
        if pick < 0.2:
            continue  # absent: null
        if c in ("kernel_id", "value_int", "instance"):
            pool = [None, 0, 7, -3, (1 << 63) - 1, 1 << 63, _U64, 1.5]
        elif c == "value":
            pool = [None, 0.0, -1.25, 1e300, float("inf"), float("-inf"), 3]
        else:
            pool = [None, "", "byte", "sector", "a;b", "ünïcode", "0"]
        if c == "instance_key" and pick > 0.85:
            k = rng.randint(0, n)
            ids = [rng.choice([0, 1, 12345, (1 << 63) + 5, _U64]) for _ in range(k)]
            cols[c] = IntKeys(array("Q", ids), n - k)
        elif pick < 0.5:
            cols[c] = rng.choice(pool)
        elif pick < 0.6:
            cols[c] = [None] * n
        else:
            cols[c] = [rng.choice(pool) for _ in range(n)]
    return n, cols


@pytest.mark.parametrize("seed", range(40))
def test_chunk_frame_equals_list_construction(seed):
    rng = random.Random(seed)
    chunks: list[dict] = []
    out = Columns(sink=chunks.append)
    out.FLUSH_ROWS = rng.choice([5, 40, 1000])  # several chunks, each with its own string table
    rows: list[dict] = []
    for _ in range(rng.randint(1, 30)):
        n, cols = _random_extend(rng)
        out.extend(n, **cols)
        rows.extend(_expand(n, cols))
    out.flush()
    # through the pipe as the child sends them
    frames = [ncu_rep._chunk_frame(pickle.loads(pickle.dumps(ch, protocol=pickle.HIGHEST_PROTOCOL))) for ch in chunks]
    got = pl.concat(frames) if len(frames) > 1 else frames[0]
    assert_frame_equal(got, _reference(rows), check_exact=True)


def test_nan_is_not_null_and_ids_are_decimal():
    chunks: list[dict] = []
    out = Columns(sink=chunks.append)
    out.extend(3, kernel_id=0, metric="m", value=[float("nan"), None, 2.0], instance_key=IntKeys(array("Q", [_U64, 9]), 1))
    out.flush()
    df = ncu_rep._chunk_frame(chunks[0])
    assert df["value"].is_nan().to_list() == [True, None, False]
    assert df["value"].null_count() == 1
    assert df["instance_key"].to_list() == [str(_U64), "9", None]


def test_metric_columns_keep_session_rows_first():
    out = ncu_rep._MetricColumns()
    out.extend(1, metric="creation_time", unit="s", value=[1.0], value_int=[1], kind="session")
    child = Columns(sink=None)
    child.extend(2, kernel_id=0, metric=["a", "b"], unit="", value=[1.0, 2.0], kind="metric")
    out.add_frame(ncu_rep._chunk_frame(child.chunk()))
    df = out.frame()
    assert df["metric"].to_list() == ["creation_time", "a", "b"]
    assert df["kernel_id"].to_list() == [None, 0, 0]
    assert df.schema == pl.Schema({c: schema.METRICS.polars_schema[c] for c in COLS})


@pytest.mark.parametrize("seed", range(12))
def test_kernel_rows_read_the_aggregates_the_frame_holds(seed, monkeypatch):
    """_KernelRows reads each kernel's aggregate rows from the chunk's arrays and string table,
    not from its frame: the values, texts and units handed to the derivation are the frame's own
    (nulls where the frame has null, a text value where the number is null), kernel by kernel,
    with instance rows between the kernels' aggregates."""
    rng = random.Random(seed)
    chunks: list[dict] = []
    out = Columns(sink=chunks.append)
    out.FLUSH_ROWS = rng.choice([7, 50, 1000])
    for kid in range(rng.randint(1, 6)):
        n = rng.randint(1, 15)
        names = [f"m{j}" for j in rng.sample(range(40), n)]
        values = [rng.choice([None, 0.0, 1.5, float("nan"), -2.0, 1e300]) for _ in range(n)]
        strs = [rng.choice([None, None, "GH200", "", "a;b"]) for _ in range(n)]
        out.mark_aggregates(kid, n)
        out.extend(n, kernel_id=kid, metric=names, unit=[rng.choice(["byte", "", "nsecond", None]) for _ in range(n)], value=values, value_str=strs, kind="metric")
        k = rng.randint(0, 4)
        if k:  # instance rows of one metric, which the derivation never sees
            out.extend(k, kernel_id=kid, metric=names[0], unit="byte", value=[1.0] * k, instance=list(range(k)), instance_key=IntKeys(array("Q", range(k)), 0), kind="metric")
    out.flush()
    seen: list[tuple[dict, dict]] = []
    monkeypatch.setattr(ncu_rep.ncu_common, "derive_kernel_columns", lambda vals, units: seen.append((vals, units)) or {})
    rows = ncu_rep._KernelRows(ncu_rep._MetricColumns())
    want: list[tuple[dict, dict]] = []
    for ch in chunks:
        ch = pickle.loads(pickle.dumps(ch, protocol=pickle.HIGHEST_PROTOCOL))
        frame = ncu_rep._chunk_frame(ch)
        for _kid, start, n in ch["_aggregates"]:
            sub = frame.slice(start, n)
            vals = dict(zip(sub["metric"].to_list(), sub["value"].to_list()))
            for name, s in zip(sub["metric"].to_list(), sub["value_str"].to_list()):
                if s is not None and vals.get(name) is None:
                    vals[name] = s
            want.append((vals, dict(zip(sub["metric"].to_list(), sub["unit"].to_list()))))
        rows.add_chunk(ch)
    assert len(seen) == len(want) == len(rows.rows)

    def same(a, b):  # NaN is NaN on both sides (never null)
        return a.keys() == b.keys() and all((x is None and y is None) or x == y or (x != x and y != y) for x, y in ((a[k], b[k]) for k in a))

    for (got_vals, got_units), (want_vals, want_units) in zip(seen, want):
        assert same(got_vals, want_vals) and got_units == want_units


@pytest.mark.parametrize("seed", range(12))
def test_session_rows_frame_is_what_columns_make(seed):
    """The session rows' frame, built from Python lists by polars' non-strict construction, holds
    what the same rows through Columns and _chunk_frame hold (the path the child's chunks take):
    texts, a creation time beyond int64 (null as an integer, kept as a float), absent groups."""
    from types import SimpleNamespace

    rng = random.Random(seed)
    texts = ["12.4", "", "ünïcode", "a;b", "Linux", "0"]
    session: dict = {}
    for grp in ("versions", "target_system", "host_system"):
        if rng.random() < 0.8:
            session[grp] = {f"k{j}": rng.choice(texts) for j in range(rng.randint(0, 5))}
    if rng.random() < 0.8:
        session["creation_time_s"] = rng.choice([0, 1_700_000_000, (1 << 63) - 1, 1 << 63, _U64])
    if rng.random() < 0.5:
        session["command_line"] = rng.choice(texts)
    c = SimpleNamespace(session=session)
    got = ncu_rep._MetricColumns()
    ncu_rep._session_rows(c, got)
    want_chunks: list[dict] = []
    want = Columns(sink=want_chunks.append)
    # the rows as the session code gave them to Columns before it built the frame itself
    rows = [(k, v, None, None) for k, v in (session.get("versions") or {}).items()]
    rows += [(f"{g}.{k}", v, None, None) for g in ("target_system", "host_system") for k, v in (session.get(g) or {}).items()]
    if "creation_time_s" in session:
        rows.append(("creation_time", None, float(session["creation_time_s"]), session["creation_time_s"]))
    if session.get("command_line"):
        rows.append(("command_line", session["command_line"], None, None))
    if rows:
        metric, vstr, value, ints = (list(x) for x in zip(*rows))
        want.extend(len(rows), kernel_id=None, metric=metric, unit=["s" if m == "creation_time" else "" for m in metric], value=value, value_str=vstr, value_int=ints, kind="session")
    want.flush()
    expected = ncu_rep._chunk_frame(want_chunks[0]) if want_chunks else schema.METRICS.empty().drop("profile_id")
    assert_frame_equal(got.frame(), expected, check_exact=True)


@pytest.mark.parametrize("seed", range(30))
def test_a_head_goes_first_in_the_chunks_frame(seed):
    """_chunk_frame with a head (the session rows, made in this process) is the two frames built
    apart and concatenated: codes of both string tables, null rows and integer-id rows of both,
    shifted by the head's rows (fails if the chunk's codes or row numbers are not shifted)."""
    rng = random.Random(seed)

    def chunk(rows_wanted):
        got: list[dict] = []
        out = Columns(sink=got.append)
        for _ in range(rows_wanted):
            n, cols = _random_extend(rng)
            out.extend(n, **cols)
        out.flush()
        return pickle.loads(pickle.dumps(got[0], protocol=pickle.HIGHEST_PROTOCOL)) if got else None

    head, ch = chunk(rng.randint(1, 4)), chunk(rng.randint(1, 6))
    want = pl.concat([ncu_rep._chunk_frame(head), ncu_rep._chunk_frame(ch)])
    assert_frame_equal(ncu_rep._chunk_frame(ch, head), want, check_exact=True)
    assert_frame_equal(ncu_rep._chunk_frame(ch, None), ncu_rep._chunk_frame(ch), check_exact=True)
    # through _MetricColumns, as read_report does: rows extended here, then the child's chunk
    out = ncu_rep._MetricColumns()
    out.extend(head["rows"], metric="session-like", kind="session")
    frame = out.chunk_frame(ch)
    out.add_frame(frame)
    got = out.frame()
    assert got.height == head["rows"] + ch["rows"]
    assert got["metric"].head(head["rows"]).to_list() == ["session-like"] * head["rows"]
    assert_frame_equal(got.slice(head["rows"]), ncu_rep._chunk_frame(ch), check_exact=True)
