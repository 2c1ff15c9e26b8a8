"""A big value after traceEvents (Kineto's distributedInfo, a blown-up metadata key): the walker
finds no event start in eight blocks and cuts loosely inside it, so the chunks it hands out from
there hold the end of the events array and then pieces of that value. The first such chunk fails
as JSON with content after the closed array; it and every chunk after it go to the tail, which
parses them whole. Before (s19), that chunk was merged with the next one only, failed again, and a
valid trace was refused as "invalid JSON in traceEvents near byte 459" once the value spanned two
loose chunks (~64 MB at the walker's 4 MiB blocks; tests use 128 KiB blocks for the same shape)."""

from __future__ import annotations

import json

import orjson
import pytest

from profaudit.errors import InputError
from profaudit.parsers import chrome_trace
from profaudit.parsers.jsonstream import TraceWalker

_KERNEL = {"ph": "X", "cat": "kernel", "name": "ncclKernel_AllReduce", "pid": 0, "tid": 7, "dur": 1,
           "args": {"External id": 0, "correlation": 0}}
_BLOCK = 128 << 10


def _trace(path, n: int, after: str = ""):
    big = ",".join('{"kernel":"k%d","time_ms":%d.5}' % (i % 7, i) for i in range(n))
    events = json.dumps([{**_KERNEL, "ts": 10 + i} for i in range(3)])
    path.write_text('{"traceEvents":' + events + ', "distributedInfo": {"rank": 0, "pg_config": [' + big + "]}" + after + "}")
    return path


@pytest.mark.parametrize("n", [40_000, 100_000, 200_000])  # one, three and six loose chunks
def test_a_value_after_the_array_over_several_loose_chunks_loads(tmp_path, n):
    doc = _trace(tmp_path / "t.json", n, ', "traceName": "rank0"')
    chunks = sum(item[0] == "events" for item in TraceWalker(doc, _BLOCK))
    assert chunks == {40_000: 1, 100_000: 3, 200_000: 6}[n]  # the shape this test is about
    meta, acc, form = chrome_trace.stream_events(doc, _BLOCK)
    want = orjson.loads(doc.read_bytes())
    assert meta["distributedInfo"] == want["distributedInfo"] and meta["traceName"] == "rank0"
    assert form == "object"


def test_the_events_before_it_are_all_kept(tmp_path):
    # the same events as with blocks big enough to hold the whole file (no loose cut at all)
    doc = _trace(tmp_path / "t.json", 100_000)
    _, small, _ = chrome_trace.stream_events(doc, _BLOCK)
    _, whole, _ = chrome_trace.stream_events(doc, 64 << 20)
    assert sum(small.sizes.values()) == sum(whole.sizes.values()) == 3
    assert small.phases == whole.phases == {"X": 3}


def test_a_damaged_value_after_the_array_is_still_one_line(tmp_path):
    # a brace missing deep inside the value: the tail's parse fails, named as invalid JSON
    doc = _trace(tmp_path / "t.json", 100_000)
    text = doc.read_bytes()
    cut = text.index(b'{"kernel":"k3","time_ms":70003.5}')
    doc.write_bytes(text[:cut] + text[cut + 1:])
    with pytest.raises(InputError, match=r"t\.json: invalid JSON"):
        chrome_trace.stream_events(doc, _BLOCK)
