"""Neuron instruction metrics are built in slices of kernels (parsers/neuron_parquet.py
`instructions_to_kernels`, issue 13: built whole, a 200 MB Instruction table's 9.9 M metric rows
peaked at 2.9 GB). Whatever the slice size, the long form must be exactly the rows an independent,
plain-Python reading of the instruction table gives: kernels in start order (ties by row), each
kernel's non-null metric columns in the reader's order, with the same units, kinds and values."""

from __future__ import annotations

import random

import polars as pl
import pytest

from profaudit.parsers import neuron_parquet as npq


def _instructions(n: int) -> pl.DataFrame:
    rng = random.Random(7)
    starts = [rng.randrange(0, n // 3 + 1) * 10 for _ in range(n)]  # many ties: the row order decides
    return pl.DataFrame({
        "start_ts": starts,
        "end_ts": [s + 5 for s in starts],
        "engine": [rng.choice(["tensor", "vector", None]) for _ in range(n)],
        "opcode": [rng.choice(["MATMUL", "ACTIVATE"]) for _ in range(n)],
        "pc": [rng.choice([None, rng.randrange(100)]) for _ in range(n)],
        "hlo_name": [rng.choice([None, "dot.1", "%t = tanh(%d)"]) for _ in range(n)],
        "adjusted_flops": [rng.choice([None, 2.0 ** rng.randrange(40)]) for _ in range(n)],
        "sbuf_read_bytes": [rng.choice([None, rng.randrange(1 << 20)]) for _ in range(n)],
        "evt_wait_time_ns": [rng.choice([None, rng.randrange(50)]) for _ in range(n)],
    }, schema_overrides={"pc": pl.Int64, "sbuf_read_bytes": pl.Int64, "evt_wait_time_ns": pl.Int64})


def _expected(ins: pl.DataFrame) -> list[tuple]:
    """The long form by hand: (metric, value, unit, value_str, kind, kernel_id) per row."""
    numeric = [c for c in npq._INSTRUCTION_METRICS if c in ins.columns]
    extra = [c for c in ("engine", "label", "pcore_idx", "pc", "bir_id", "performance_mode", "nki_source_location", "layer", "hlo_name") if c in ins.columns]
    rows = ins.to_dicts()
    order = sorted(range(len(rows)), key=lambda i: (rows[i]["start_ts"], i))
    out = []
    for kid, i in enumerate(order):
        r = rows[i]
        for c in numeric:
            if r[c] is not None:
                unit = "ns" if c.endswith("_ns") else "byte" if "bytes" in c else "flop"
                out.append((c, float(r[c]), unit, None, "metric", kid))
        for c in extra:
            if r[c] is not None:
                out.append((c, None, "", str(r[c]), "launch", kid))
    return out


@pytest.mark.parametrize("slice_kernels", [1, 7, 64, 1 << 17])
def test_metrics_in_slices_are_the_rows_read_by_hand(monkeypatch, slice_kernels):
    monkeypatch.setattr(npq, "_METRIC_SLICE_KERNELS", slice_kernels)
    ins = _instructions(300)
    kernels, metrics = npq.instructions_to_kernels(ins, device_name="Trainium2", device_id=0, module=None)
    assert metrics.columns == ["metric", "value", "unit", "value_str", "kind", "kernel_id"]
    assert metrics.rows() == _expected(ins)
    # the kernels are in the same order as the metrics' kernel ids
    assert kernels["kernel_id"].to_list() == list(range(300))
    assert kernels["start_ns"].to_list() == sorted(ins["start_ts"].to_list())
