"""Chrome/Kineto ingest paths added for speed (issue 12): each must give the tables the plain
stdlib read gives, whatever the chunking."""

from __future__ import annotations

import json
import re

import polars as pl

import profaudit
from profaudit.parsers import chrome_trace as ct
from profaudit.parsers import jsonstream
from tests.test_chrome_trace import _kineto_events, ns, write_trace

EPOCH_US = 1_712_195_495_519_689  # (an ns-resolution Kineto trace of 2024 writes times like this)


def _literal_ts(path, events, **meta):
    """Write `events` with their text `ts` as JSON numbers, exactly as given."""
    write_trace(path, events, **meta)
    path.write_text(re.sub(r'"ts": "(-?[0-9.]+)"', r'"ts": \1', path.read_text()))
    return path


def _spy_quotes(monkeypatch) -> list[bool]:
    """quote_ts of every read of a chunk by polars' JSON reader."""
    seen = []
    real = ct._read_json

    def spy(chunk, schema, piece, quote_ts=False):
        seen.append(quote_ts)
        return real(chunk, schema, piece, quote_ts)

    monkeypatch.setattr(ct, "_read_json", spy)
    return seen


def test_epoch_ns_timestamps_are_read_as_text_once_a_chunk_needed_it(tmp_path, monkeypatch):
    # absolute epoch microseconds with three decimals in every chunk: after the first chunks the
    # reader quotes `ts` at once instead of reading numbers first and the text again
    ev = _kineto_events(3000)
    for i, e in enumerate(ev):
        e["ts"] = f"{EPOCH_US + 10 * i}.{(i * 37) % 1000:03d}"
    # the last third: 13-digit times (the quoting pattern matches) below 2**43 us, where numbers
    # are exact: those chunks go back to the numeric read
    for i, e in enumerate(ev[2000:], 2000):
        e["ts"] = f"{1_000_000_000_000 + 10 * i}.{(i * 37) % 1000:03d}"
    path = _literal_ts(tmp_path / "epoch.json", ev, schemaVersion=1)
    monkeypatch.setattr(jsonstream, "BLOCK_BYTES", 16 << 10)
    monkeypatch.setattr(ct, "PIECE_BYTES", 1 << 40)  # one read per chunk
    monkeypatch.setattr(ct, "_threads", lambda: 1)  # reads in file order
    seen = _spy_quotes(monkeypatch)
    ps = profaudit.load(path, parallel=False)
    doc = json.loads(path.read_text(), parse_float=str)
    exp = {e["name"]: [] for e in doc["traceEvents"]}
    for e in doc["traceEvents"]:
        exp[e["name"]].append(ns(e["ts"]))
    got = pl.concat([ps.kernels.select("name", "start_ns"), ps.ranges.select("name", "start_ns")])
    for name, starts in exp.items():
        assert sorted(got.filter(pl.col("name") == name)["start_ns"].to_list()) == sorted(starts), name
    # the test has teeth: doubles lose these nanoseconds
    assert sum(int(float(e["ts"]) * 1000) != ns(e["ts"]) for e in doc["traceEvents"][:2000]) > 1000
    quoted, numeric = seen.count(True), seen.count(False)
    # chunks already handed to the worker threads before the first one came back are read as
    # numbers first; the chunks of the last third are read both ways (text, then numbers)
    assert quoted > 20 and numeric < quoted, (quoted, numeric)
    assert seen[:4] == [False, True] * 2  # two chunks in flight before the first came back
    assert seen[-8:] == [True, False] * 4  # the last third: text, then numbers
