"""Chrome/Kineto trace text layouts the streaming reader must not care about: names full of JSON
syntax, escapes and non-ASCII text on both sides of chunk and piece cuts, `traceEvents` before or
after the metadata, gzip cut into small blocks, empty arrays; and the per-chunk classification
(`chrome_trace._chunk_classes`) against the per-row rules it stands for. Each result is checked
against a plain stdlib read of the same file."""

from __future__ import annotations

import gzip
import json
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path

import polars as pl
import pytest

import profaudit
from profaudit.parsers import chrome_trace as ct
from profaudit.parsers import jsonstream
from tests.conftest import assert_one_line_error, run_cli

# names a cut search could mistake for event gaps, escapes of every kind, and text outside ASCII
# (2-, 3- and 4-byte UTF-8, which a byte-level cut must never split)
NAMES = [
    'k}, {"ph": "X"',
    'quote " inside',
    "back\\slash\\",
    'tail backslash \\"} ,{',
    "tab\tnew\nline",
    "café ünïcode",
    "核函数_内核",
    "rocket 🚀 kernel",
    "[bracket]{brace}",
    "ctrl \u0001 \u001f",
]


def _events(n: int) -> list[dict]:
    ev = []
    for i in range(n):
        t = 1000 + 10 * i
        name = NAMES[i % len(NAMES)] + f" #{i}"
        ev.append({"ph": "X", "cat": "cpu_op", "name": "op " + NAMES[(i + 3) % len(NAMES)], "pid": 7, "tid": 7,
                   "ts": t, "dur": 9, "args": {"External id": i}})
        ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 7, "tid": 7, "ts": t + 1, "dur": 2,
                   "args": {"External id": i, "correlation": 100 + i}})
        ev.append({"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": 7, "ts": t + 4.5, "dur": 3.001,
                   "args": {"External id": i, "correlation": 100 + i, "device": 0, "stream": 7, "grid": [i + 1, 1, 1],
                            "block": [128, 1, 1]}})
    return ev


def _write(path: Path, doc, ascii_only: bool = False, gz: bool = False) -> Path:
    data = json.dumps(doc, ensure_ascii=ascii_only, indent=1).encode()
    path.write_bytes(gzip.compress(data) if gz else data)
    return path


def _ns(v) -> int:
    return int((Decimal(str(v)) * 1000).to_integral_value(rounding=ROUND_HALF_UP))


def _tables(ps) -> dict[str, pl.DataFrame]:
    return {t: ps.table(t).drop("profile_id") for t in ("kernels", "ranges", "transfers")}


def _same(a, b) -> None:
    for t, df in _tables(a).items():
        assert _tables(b)[t].equals(df), t


@pytest.mark.parametrize("ascii_only", [False, True], ids=["utf8", "u-escapes"])
def test_names_with_json_syntax_escapes_and_unicode_across_cuts(tmp_path, monkeypatch, ascii_only):
    ev = _events(800)
    path = _write(tmp_path / "names.json", {"schemaVersion": 1, "traceEvents": ev}, ascii_only)
    whole = profaudit.load(path)
    # blocks of 1.5 kB: every few events a chunk cut, and pieces of 2 kB inside the chunks
    monkeypatch.setattr(jsonstream, "BLOCK_BYTES", 1500)
    monkeypatch.setattr(ct, "PIECE_BYTES", 2000)
    cut = profaudit.load(path)
    _same(whole, cut)
    plain = [e for e in json.loads(path.read_bytes())["traceEvents"]]
    kernels = [e for e in plain if e["cat"] == "kernel"]
    assert cut.kernels["name"].to_list() == [e["name"] for e in kernels]
    assert cut.kernels["start_ns"].to_list() == [_ns(e["ts"]) for e in kernels]
    assert cut.kernels["op_name"].to_list() == ["op " + NAMES[(i + 3) % len(NAMES)] for i in range(800)]
    ranges = cut.ranges.filter(pl.col("kind") == "cpu_op").sort("start_ns")
    assert ranges["name"].to_list() == [e["name"] for e in plain if e["cat"] == "cpu_op"]


def test_escaped_and_raw_utf8_files_give_the_same_tables(tmp_path):
    ev = _events(300)
    a = profaudit.load(_write(tmp_path / "a.json", {"schemaVersion": 1, "traceEvents": ev}))
    b = profaudit.load(_write(tmp_path / "b.json", {"schemaVersion": 1, "traceEvents": ev}, ascii_only=True))
    _same(a, b)


def test_trace_events_before_between_or_after_the_metadata(tmp_path):
    ev = _events(400)
    head = {"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "NVIDIA H100 80GB HBM3"}], "baseTimeNanoseconds": 10**18}
    first = profaudit.load(_write(tmp_path / "first.json", {"traceEvents": ev, **head}))
    middle = profaudit.load(_write(tmp_path / "middle.json", {"schemaVersion": 1, "traceEvents": ev,
                                                             "deviceProperties": head["deviceProperties"],
                                                             "baseTimeNanoseconds": 10**18}))
    last = profaudit.load(_write(tmp_path / "last.json", {**head, "traceEvents": ev}))
    _same(last, first)
    _same(last, middle)
    # the time base is applied wherever it sits in the document
    assert first.kernels["start_ns"][0] == 10**18 + _ns(1004.5)
    for ps in (first, middle, last):
        md = next(iter(ps)).metadata
        assert md["device_name"] == "NVIDIA H100 80GB HBM3", md


@pytest.mark.parametrize("block", [700, 4096])
def test_gzip_in_small_blocks_matches_plain_text(tmp_path, monkeypatch, block):
    ev = _events(600)
    doc = {"schemaVersion": 1, "traceEvents": ev}
    plain = profaudit.load(_write(tmp_path / "p.json", doc))
    monkeypatch.setattr(jsonstream, "BLOCK_BYTES", block)
    gz = profaudit.load(_write(tmp_path / "p.json.gz", doc, gz=True))
    for t, df in _tables(plain).items():
        got = _tables(gz)[t]
        assert got.equals(df), t


@pytest.mark.parametrize("text, needle", [
    ('{"schemaVersion": 1, "traceEvents": []}', "holds no trace events"),
    ('{"traceEvents": [\n ],\n "schemaVersion": 1}', "holds no trace events"),
    ('{"schemaVersion": 1, "traceEvents": [', "truncated"),
])
def test_empty_or_unfinished_events_array_is_one_line(tmp_path, text, needle):
    p = tmp_path / "empty.json"
    p.write_text(text)
    assert_one_line_error(run_cli("kernels", p), needle)


def test_chunk_classes_equal_the_per_row_rules():
    cats = ["kernel", "Kernel", "KERNEL", "gpu_memcpy", "Memcpy", "gpu_memset", "memset", "cuda_profiler_range", "Trace",
            "cpu_op", "operator", "python", "cuda_runtime", "Runtime", "driver", "user_annotation", "gpu_user_annotation",
            "something_else", "", None]
    cls, kind = ct._cat_rules()

    def check(raw: pl.DataFrame) -> None:
        """The category masks, device classes and range kinds equal the per-row rules."""
        want = raw.select(cls.alias("cls"), kind.alias("kind"))
        table, per_row = ct._chunk_classes(raw)
        assert not per_row
        is_range, is_device, dev_cls, launch = ct._class_masks(tuple(table.items()))
        got = raw.select(is_range.alias("r"), is_device.alias("d"), dev_cls, launch.alias("l"))
        assert got["r"].to_list() == (want["cls"] == "range").to_list()
        assert got["d"].to_list() == want["cls"].is_in(ct._DEVICE_CLASSES).to_list()
        assert got.filter("d")["cls"].to_list() == want.filter(pl.col("cls").is_in(ct._DEVICE_CLASSES))["cls"].to_list()
        assert got["l"].to_list() == want["kind"].is_in(ct._LAUNCH_KINDS).to_list()
        # ranges carry no kind column: it is mapped from the category on the stacked frame
        R = raw.select(pl.col("cat").cast(pl.Categorical), pl.lit(None, dtype=pl.String).alias("kind"))
        assert ct._range_kinds(R)["kind"].cast(pl.String).to_list() == want["kind"].to_list()

    check(pl.DataFrame({"cat": cats * 3, "name": [f"n{i}" for i in range(len(cats) * 3)]}))
    # no category at all; no range category; no device category
    check(pl.DataFrame({"cat": pl.Series([None, None], dtype=pl.String), "name": ["a", "b"]}))
    check(pl.DataFrame({"cat": ["kernel", "Trace", "gpu_memcpy"], "name": ["a", "b", "c"]}))
    check(pl.DataFrame({"cat": ["cpu_op", None, "cuda_runtime"], "name": ["a", "b", "c"]}))
    # MTIA's category looks at the event name too: such a chunk is classified row by row
    mtia = pl.DataFrame({"cat": ["mtia_ccp_events"] * 3 + ["kernel", None],
                         "name": ["dma_request", "event_wait", "gemm", "k", None]})
    assert ct._chunk_classes(mtia)[1]
    got = mtia.select(cls.alias("cls"), kind.alias("kind"))
    assert got["cls"].to_list() == ["memcpy", "range", "kernel", "kernel", "range"]
    # their per-row kinds are kept where the stacked frame has them; other rows map from `cat`
    R = pl.DataFrame({"cat": pl.Series(["mtia_ccp_events", "cpu_op"], dtype=pl.Categorical),
                      "kind": pl.Series(["mtia_sync", None], dtype=pl.Categorical)})
    assert ct._range_kinds(R)["kind"].cast(pl.String).to_list() == ["mtia_sync", "cpu_op"]

@pytest.mark.parametrize("seed", range(6))
def test_thread_time_order_equals_the_lexsort(seed):
    """The nesting order (group, start, -end, seq) from the packed stable sort equals numpy's
    lexsort of the keys: with rows sharing a start (ties), rows out of file order, and times too
    wide to pack (epoch nanoseconds beside a missing start filled with 0)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    n = 3000
    g = rng.integers(0, 4, n).astype(np.uint32)
    s = np.sort(rng.integers(0, 400, n)).astype(np.int64)  # few distinct starts: many ties
    s[rng.integers(0, n, 50)] = rng.integers(0, 400, 50)  # not quite in time order
    e = s + rng.integers(0, 30, n)
    if seed % 3 == 2:
        s = s + 1_700_000_000_000_000_000
        e = e + 1_700_000_000_000_000_000
        s[0] = 0
    seq = np.arange(n, dtype=np.int64) if seed % 2 == 0 else rng.permutation(n).astype(np.int64)
    want = np.lexsort((seq, -e, s, g))
    got = ct._thread_time_order(g, s, e, pl.Series("seq", seq))
    assert np.array_equal(got, want)


def test_dense_ranks_of_ids_equal_a_search_in_the_distinct_values():
    import numpy as np

    rng = np.random.default_rng(3)
    for v in (np.array([], np.int64), np.array([5]), rng.integers(-3, 40, 1000), rng.integers(0, 2**62, 1000),
              np.array([-2**63, 2**63 - 1, 0, 7, 0])):
        v = v.astype(np.int64)
        want = pl.Series(v).unique().sort().search_sorted(pl.Series(v)).to_numpy()
        assert np.array_equal(ct._dense_ranks(v), want)
