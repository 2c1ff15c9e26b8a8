"""kineto_comms decodes whole texts with orjson (the trace's tail, and chunks that hold collective
arguments), and so does the chrome-trace reader (the tail), and orjson segfaults when an allocation
fails under an address-space limit: each such text is checked against the room left first, as
parsers/textsafe.check_orjson_room does for the other whole documents (c61e23c;
tests/test_orjson_room.py)."""

from __future__ import annotations

import json
import sys

import pytest

import profaudit
from profaudit.errors import InputError
from profaudit.parsers import kineto_comms, textsafe
from tests.address_space import run_with_room

_KERNEL = {"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllReduce", "pid": 0, "tid": 7, "dur": 1,
           "args": {"External id": 1, "correlation": 1, "Collective name": "allreduce", "In msg nelems": 4, "dtype": "Float"}}


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_AS and /proc/self/status are Linux's")
def test_a_big_key_after_the_events_is_one_line_not_a_segfault(tmp_path):
    # 38 MB of small lists after traceEvents: no cut between events inside it, so it is all in the
    # tail. With 700 or 900 MB of address space left, orjson segfaulted on it (exit 139, s18); it
    # needs 48x + 256 MiB by the shared rule, so 800 MB left is one line now on any machine
    doc = tmp_path / "rank0.json"
    big = ",".join('[%d,%d.5,"k%d"]' % (i % 1000, i % 100, i % 7) for i in range(2_400_000))
    doc.write_text('{"traceEvents":' + json.dumps([{**_KERNEL, "ts": 10}]) + ', "distributedInfo": {"rank": 0, "pg_config": [' + big + "]}}")
    out = run_with_room(doc, 800, "kineto_comms.read_comm_args(sys.argv[1]).height", "from profaudit.parsers import kineto_comms")
    assert out.returncode == 2, (out.returncode, out.stdout[-500:], out.stderr[-2000:])
    line = out.stdout.strip()
    assert line.startswith(f"{doc}: a trace tail (the last events and the keys after them) of 37.9 MB needs up to ")
    assert "\n" not in line and "ulimit -v" in line


def test_a_chunk_with_collective_arguments_is_checked_too(tmp_path, monkeypatch):
    # the chunks that hold collective arguments are decoded whole as well: with no room left, the
    # first such chunk (over 1 MiB: the walker's blocks are 4 MiB) is the line
    doc = tmp_path / "rank0.json"
    doc.write_text(json.dumps({"traceEvents": [{**_KERNEL, "ts": 10 + i, "args": {**_KERNEL["args"], "External id": i}} for i in range(60_000)]}))
    assert kineto_comms.read_comm_args(doc).height == 60_000
    monkeypatch.setattr(textsafe, "_address_space_left", lambda: 0)
    with pytest.raises(InputError, match=r"rank0\.json: a chunk of trace events of [\d.]+ MB needs up to"):
        kineto_comms.read_comm_args(doc)


def test_the_chrome_trace_readers_tail_is_checked_too(tmp_path, monkeypatch):
    # the same 38 MB value after traceEvents made profaudit.load segfault with 1.3-1.5 GB of address
    # space left (s18); which allocation fails first under a real cap varies with the decode
    # threads, so the check itself is shown here: with no room left, the tail is the line
    doc = tmp_path / "rank0.json"
    big = ",".join('[%d,%d.5]' % (i % 1000, i % 100) for i in range(200_000))  # ~2 MB, no cut inside
    doc.write_text('{"traceEvents":' + json.dumps([{**_KERNEL, "ts": 10}]) + ', "distributedInfo": {"rank": 0, "pg_config": [' + big + "]}}")
    assert profaudit.load(doc).kernels.height == 1
    monkeypatch.setattr(textsafe, "_address_space_left", lambda: 0)
    with pytest.raises(InputError, match=r"rank0\.json: a trace tail \(the last events and the keys after them\) of [\d.]+ MB needs up to"):
        profaudit.load(doc)
