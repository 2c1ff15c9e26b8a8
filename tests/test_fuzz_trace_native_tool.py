"""tools/fuzz_trace_native.py: its token edits, and its child's verdicts (same / declined /
different / polars-only-fails) on inputs where the answer is known."""

from __future__ import annotations

import io
import json
import pickle
import random
import sys

import polars as pl
import pytest

from tests.fuzz import tool_module

@pytest.fixture(scope="module")
def tool():
    return tool_module.load("fuzz_trace_native")


CHUNK = b'[{"ph": "X", "name": "k", "ts": 1.5, "dur": 2, "args": {"stream": 7}}, {"ph": "X", "name": "m", "ts": 4, "dur": 1}]'
SCHEMA = {"ph": pl.String, "name": pl.String, "ts": pl.Float64, "dur": pl.Float64, "args": pl.Struct({"stream": pl.Int64})}


def test_token_edits_change_the_chunk_and_say_how(tool):
    kinds = set()
    for n in range(200):
        data, label = tool.token_edit(CHUNK, random.Random(n))
        assert data != CHUNK, label
        kinds.add(label.split()[0])
    assert kinds == {"token", "whitespace", "repeat"}


def _child(tool, monkeypatch, tmp_path, inputs, read_events=None):
    from profaudit.parsers import trace_native

    if read_events is not None:
        monkeypatch.setattr(trace_native, "read_events", read_events)
    f = tmp_path / "schemas.pickle"
    f.write_bytes(pickle.dumps([SCHEMA]))
    stdin = b"".join(f"{i} 0 {len(d)}\n".encode() + d for i, d in enumerate(inputs))
    out = io.BytesIO()
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin)))
    monkeypatch.setattr(sys, "stdout", io.TextIOWrapper(out, write_through=True))
    assert tool.child(f) == 0
    return [json.loads(l)["res"] for l in out.getvalue().decode().splitlines()]


def test_child_tells_same_declined_and_different(tool, monkeypatch, tmp_path):
    from profaudit.parsers import trace_native

    if trace_native._native is None:
        pytest.skip("the native trace reader is not built here")
    res = _child(tool, monkeypatch, tmp_path, [CHUNK, CHUNK[:-3]])
    assert res == ["same", "declined"]

    def off_by_one(chunk, schema):
        df = pl.read_json(io.BytesIO(chunk), schema=schema)
        return df.with_columns(pl.col("dur") + 1)

    res = _child(tool, monkeypatch, tmp_path, [CHUNK], read_events=off_by_one)
    assert res[0].startswith("different")

    def answers_anything(chunk, schema):
        return pl.DataFrame(schema=schema)

    res = _child(tool, monkeypatch, tmp_path, [b"[{]"], read_events=answers_anything)
    assert res[0].startswith("polars-only-fails")
