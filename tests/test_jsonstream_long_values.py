"""A metadata value of many blocks before the events array (a blown-up `distributedInfo`) is
scanned once, not from its start again for every block that arrives."""

from __future__ import annotations

import json

from profaudit.parsers import jsonstream


class _CountingTokens:
    """`jsonstream._TOKEN` with the bytes each scan starts on counted."""

    def __init__(self, real):
        self.real = real
        self.scanned = 0

    def finditer(self, buf, start=0):
        self.scanned += len(buf) - start
        return self.real.finditer(buf, start)


def test_a_long_metadata_value_is_scanned_once(tmp_path, monkeypatch):
    groups = [{"pg_name": str(i), "ranks": list(range(40)), "desc": "a [bracket] {inside} a string"} for i in range(3000)]
    events = [{"ph": "X", "cat": "cpu_op", "name": f"op{i}", "pid": 1, "tid": 1, "ts": i, "dur": 1} for i in range(50)]
    doc = {"schemaVersion": 1, "distributedInfo": {"pg_config": groups}, "traceEvents": events, "after": [1, {"x": "]"}]}
    path = tmp_path / "t.json"
    path.write_text(json.dumps(doc))
    value_bytes = len(json.dumps(doc["distributedInfo"]))
    counting = _CountingTokens(jsonstream._TOKEN)
    monkeypatch.setattr(jsonstream, "_TOKEN", counting)
    monkeypatch.setattr(jsonstream, "BLOCK_BYTES", 4096)  # the value spans ~150 blocks
    items = list(jsonstream.TraceWalker(path))
    meta = {k: v for kind, k, v in items if kind == "meta"}
    assert meta["schemaVersion"] == 1 and meta["distributedInfo"] == doc["distributedInfo"]
    # each block is scanned about once (from the last token of the one before): the rescans of
    # the whole value from its start were ~75 times its size here
    assert value_bytes < counting.scanned < 3 * value_bytes + 20 * 4096
