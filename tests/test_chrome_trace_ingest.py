"""Chrome/Kineto ingest paths added for speed (issue 12): each must give the tables the plain
stdlib read gives, whatever the chunking."""

from __future__ import annotations

import json
import random
import re

import polars as pl

import profaudit
from profaudit.parsers import chrome_trace as ct
from profaudit.parsers import jsonstream
from tests.test_chrome_trace import _fix_ts, _kineto_events, ns, write_trace

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

    def spy(chunk, schema, piece, quote_ts=False, **kw):
        seen.append(quote_ts)
        return real(chunk, schema, piece, quote_ts, **kw)

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


class _CountingDict(dict):
    clears = 0

    def clear(self):
        self.clears += 1
        super().clear()


def test_category_memo_evicts_and_still_classifies(tmp_path, monkeypatch):
    # the classes of categories are remembered across chunks and files; a memo smaller than the
    # categories in use is cleared again and again, and every event is still classified by its own
    ev = _kineto_events(600)
    extra = ["gpu_memcpy", "gpu_memset", "user_annotation", "python_function", "Trace", "my_cat", None]
    for i, e in enumerate(ev[::3]):  # the cpu_op of every third triple gets another category
        e["cat"] = extra[i % len(extra)]
        if e["cat"] == "my_cat":  # a new category in every chunk
            e["cat"] = f"my_cat{i}"
        elif e["cat"] is None:
            del e["cat"]
    path = write_trace(tmp_path / "cats.json", _fix_ts(ev), schemaVersion=1)
    monkeypatch.setattr(jsonstream, "BLOCK_BYTES", 8 << 10)
    monkeypatch.setattr(ct, "_CAT_MEMO", {})
    full = profaudit.load(path, parallel=False)
    memo = _CountingDict()
    monkeypatch.setattr(ct, "_CAT_MEMO", memo)
    monkeypatch.setattr(ct, "_CAT_MEMO_MAX", 2)
    small = profaudit.load(path, parallel=False)
    assert memo.clears > 5
    for t in ("kernels", "ranges", "transfers"):
        assert small.table(t).drop("profile_id").equals(full.table(t).drop("profile_id")), t
    # against the events themselves: memcpy/memset are transfers, "Trace" is skipped, others ranges
    cats = [e.get("cat") if not e.get("cat", "").startswith("my_cat") else "my_cat" for e in ev]
    assert full.transfers.height == cats.count("gpu_memcpy") + cats.count("gpu_memset")
    assert full.kernels.height == cats.count("kernel")
    assert full.ranges.height == len(ev) - full.transfers.height - full.kernels.height - cats.count("Trace")
    kinds = dict(zip(*full.ranges.group_by(pl.col("kind").str.replace(r"^my_cat\d+$", "my_cat")).len().to_dict(as_series=False).values()))
    assert kinds["python_function"] == cats.count("python_function") and kinds["my_cat"] == cats.count("my_cat")
    assert kinds["host"] == cats.count(None)


def test_plain_text_timestamps_convert_as_the_general_rules_do():
    # Kineto's own text form goes through a path without regular expressions; every other form
    # falls through to the general rules, and the results are the same for all of them
    fast = ct._plain_text_ns(pl.Series(["1712195495519689.047", "-0.5", "15", "007.25", "9223372036854774.999"]))
    assert fast.to_list() == [1712195495519689047, -500, 15000, 7250, 9223372036854774999]
    odd = ["1.2.3", "712.2.", "--1", "-+1", "+1.5", "1.-5", "1.+5", " 2", "2 ", "0.0005", "1e3", ".5", "12.", "-", "", "0x1f", "1_0", "١٢"]
    assert ct._plain_text_ns(pl.Series(odd)).null_count() == len(odd)
    rnd = random.Random(12)
    vals: list[str | None] = odd + ["9223372036854775.807", "-9223372036854775.807", None]
    for _ in range(3000):
        v = "".join(rnd.choice("0123456789") for _ in range(rnd.randrange(1, 16)))
        if rnd.random() < 0.2:
            v = "17" + v.zfill(14)[:14]  # 16 digits: epoch microseconds
        if rnd.random() < 0.7:
            v += rnd.choice([".", "..", ". "]) + "".join(rnd.choice("0123456789") for _ in range(rnd.randrange(0, 6)))
        vals.append(rnd.choice(["", "-", "+", " ", "--"]) + v if rnd.random() < 0.4 else v)
    s = pl.Series("ts", vals, dtype=pl.String)
    general = ct._fix_odd_text(s, pl.select(ct.text_ns_expr(pl.lit(s)).alias("ts")).to_series())
    assert ct.text_us_to_ns(s).to_list() == general.to_list()
    assert general.null_count() > 100 and general.is_not_null().sum() > 1000  # (both kinds of rows)
