"""The chrome-trace reader checks every chunk of trace events against the address space left
before decoding it, as it does its tail (62aae11) and kineto_comms its chunks (a8902a7): polars'
read_json and orjson do not survive a failed allocation (abort / segfault) under an address-space
limit (ulimit -v, RLIMIT_AS, strict overcommit). A chunk is about two walker blocks, unless no cut
between events is found in eight blocks: then the walker cuts loosely, and a 35 MB value after
traceEvents (1.2 M small objects) came as one chunk, which aborted the process with 500 MB to
1.1 GB of address space left (exit 134, nothing on stderr; s18 leftover, fixed s19)."""

from __future__ import annotations

import json
import sys

import pytest

from profaudit.errors import InputError
from profaudit.parsers import chrome_trace, textsafe
from tests.address_space import run_with_room

_KERNEL = {"ph": "X", "cat": "kernel", "name": "ncclKernel_AllReduce", "pid": 0, "tid": 7, "dur": 1,
           "args": {"External id": 0, "correlation": 0}}


def _trace(path, n: int):
    """Three kernels, then a distributedInfo holding `n` small objects (~31 bytes each)."""
    big = ",".join('{"kernel":"k%d","time_ms":%d.5}' % (i % 7, i) for i in range(n))
    events = json.dumps([{**_KERNEL, "ts": 10 + i} for i in range(3)])
    path.write_text('{"traceEvents":' + events + ', "distributedInfo": {"rank": 0, "pg_config": [' + big + "]}}")
    return path


def test_a_chunk_is_checked_before_it_is_decoded(tmp_path, monkeypatch):
    # 128 KiB blocks: the 1.3 MB value after the array has no strict cut in eight blocks, so the
    # walker hands out a loose chunk of 1.18 MB, then the tail; with no room left that chunk is the
    # line (before: it went to polars and orjson, and only the tail was checked: "a trace tail")
    doc = _trace(tmp_path / "rank0.json", 40_000)
    meta, _, _ = chrome_trace.stream_events(doc, 128 << 10)
    assert len(meta["distributedInfo"]["pg_config"]) == 40_000  # with room, the value is read whole
    monkeypatch.setattr(textsafe, "_address_space_left", lambda: 0)
    with pytest.raises(InputError, match=r"rank0\.json: a chunk of trace events of 1\.18 MB needs up to "):
        chrome_trace.stream_events(doc, 128 << 10)


def test_a_chunk_merged_with_the_next_is_checked_too(tmp_path, monkeypatch):
    # an event whose args hold a long list of objects: no strict cut inside it in eight blocks,
    # so the walker cuts loosely inside the list; that chunk is invalid and is decoded again joined
    # with the next one, which is more text than either and is checked as well
    doc = tmp_path / "trace.json"
    nested = {**_KERNEL, "ts": 5, "args": {"External id": 1, "correlation": 1, "list": [{"a": i} for i in range(150_000)]}}
    events = [{**_KERNEL, "ts": 10 + i, "args": {"External id": 2 + i, "correlation": 2 + i}} for i in range(20_000)]
    doc.write_text(json.dumps({"traceEvents": [nested] + events}))
    sizes = []
    real = textsafe.check_room

    def spy(path, nbytes, what, per_byte, base):
        sizes.append((what, nbytes))
        return real(path, nbytes, what, per_byte, base)

    monkeypatch.setattr(textsafe, "check_room", spy)
    _, acc, _ = chrome_trace.stream_events(doc, 128 << 10)
    chunks = [n for what, n in sizes if what == "chunk of trace events"]
    # chunks as submitted, then the merged text (the first loose chunk and the one after it)
    assert any(m == a + b - 1 for i, m in enumerate(chunks) for a, b in zip(chunks[:i], chunks[1:i])), chunks
    monkeypatch.setattr(textsafe, "_address_space_left", lambda: 0)
    with pytest.raises(InputError, match=r"trace\.json: a chunk of trace events of [\d.]+ MB needs up to "):
        chrome_trace.stream_events(doc, 128 << 10)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_AS and /proc/self/status are Linux's")
def test_a_big_value_after_the_events_under_a_cap_is_one_line_not_an_abort(tmp_path):
    # the s18 reproducer's shape: 37 MB, read by profaudit.load with 800 MB of address space left
    # (before: SIGABRT in polars' read_json on a worker thread, exit -6 and an empty stderr)
    doc = _trace(tmp_path / "trace.json", 1_200_000)
    out = run_with_room(doc, 800)
    assert out.returncode == 2, (out.returncode, out.stdout[-500:], out.stderr[-2000:])
    line = out.stdout.strip()
    assert line.startswith(f"{doc}: a chunk of trace events of 37.7 MB needs up to "), line
    assert "\n" not in line and "ulimit -v" in line
