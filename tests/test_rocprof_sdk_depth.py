"""rocprofiler-sdk JSON's nesting check rides on the parser's own passes (rocprof_sdk._DepthGuard):
every byte is scanned once before ijson sees it, and the check makes no read of its own."""

from __future__ import annotations

import copy
import gzip
import json

import pytest

import profaudit
from profaudit.errors import InputError
from profaudit.parsers import jsonshape
from test_chrome_trace import _sdk_doc


def _big_doc(calls: int = 3_000) -> dict:
    # enough hip_api records that every pass spans many of ijson's read buffers
    doc = copy.deepcopy(_sdk_doc())
    tool = doc["rocprofiler-sdk-tool"][0]
    tool["buffer_records"]["hip_api"] = [
        {"kind": 5, "operation": 0, "thread_id": 9, "correlation_id": {"internal": 100 + i}, "start_timestamp": 2_000 + 10 * i, "end_timestamp": 2_005 + 10 * i}
        for i in range(calls)
    ]
    return doc


@pytest.mark.parametrize("gz", [False, True])
def test_each_byte_is_scanned_once_over_all_passes(tmp_path, monkeypatch, gz):
    text = json.dumps(_big_doc(), indent=1).encode()
    path = tmp_path / ("results.json.gz" if gz else "results.json")
    path.write_bytes(gzip.compress(text) if gz else text)
    from profaudit.parsers import rocprof_sdk

    fed, opens = [], []
    feed, opener = jsonshape.DepthScan.feed, rocprof_sdk.open_maybe_gzip
    monkeypatch.setattr(jsonshape.DepthScan, "feed", lambda self, chunk: fed.append(len(chunk)) or feed(self, chunk))
    monkeypatch.setattr(rocprof_sdk, "open_maybe_gzip", lambda p: opens.append(p) or opener(p))
    passes = []
    items = rocprof_sdk._items
    monkeypatch.setattr(rocprof_sdk, "_items", lambda *a, **k: passes.append(a[1]) or items(*a, **k))
    ps = profaudit.load(path)
    assert ps.ranges.height == 3_000 + 1  # the API calls and the one marker range
    assert ps.kernels.height == 1 and ps.transfers.height == 1
    # several passes read the file (metadata, agents, ..., kernel dispatches, API records, copies),
    # yet the scan saw the text exactly once, in more than one chunk
    assert sum(fed) == len(text) and len(fed) > 1
    assert len(opens) == len(passes) > 1  # no open of the file for the check alone


@pytest.mark.parametrize("gz", [False, True])
def test_deep_nesting_in_a_later_record_list_is_refused(tmp_path, cli, gz):
    from conftest import assert_one_line_error

    doc = _big_doc(1_000)
    deep = {"x": 1}
    for _ in range(200):
        deep = [deep]
    # past the kernel dispatches, in a list only a later pass reads (memory copies come last)
    doc["rocprofiler-sdk-tool"][0]["buffer_records"]["memory_copy"][0]["extra"] = deep
    text = json.dumps(doc).encode()
    path = tmp_path / ("results.json.gz" if gz else "results.json")
    path.write_bytes(gzip.compress(text) if gz else text)
    with pytest.raises(InputError, match="damaged rocprofiler-sdk JSON: nested more than 64 deep"):
        profaudit.load(path)
    assert_one_line_error(cli("kernels", path), "nested more than 64 deep")


def test_depth_scan_fed_in_pieces_matches_one_piece():
    text = json.dumps({"a": [[{"b": "[[\\\"{"}], [[[1]]]], "c": "\\\\"}).encode()
    whole = jsonshape.DepthScan()
    whole.feed(text)
    for size in (1, 2, 7):
        scan = jsonshape.DepthScan()
        for i in range(0, len(text), size):
            scan.feed(text[i:i + size])
        assert scan.deepest == whole.deepest == 5 and scan.depth == 0
