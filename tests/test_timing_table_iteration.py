"""A timing table without an iteration column numbers each (run, benchmark, variant, params,
statistic) group's rows 0, 1, 2 ... in file order. The grouping uses category codes for the text
keys (grouping by the text built a key of every name's bytes a row: +520 MB on a 200 MB blow-up);
checked here against a count kept in Python, with nulls and repeats in every key."""

from __future__ import annotations

import random

import pytest

from profaudit.parsers import timing_table
from profaudit.parsers.base import ReadOptions


@pytest.mark.parametrize("seed", range(4))
def test_iterations_count_each_group_in_file_order(tmp_path, seed):
    rng = random.Random(seed)
    lines = ["benchmark,variant,block,run,time_ms"]
    want, seen = [], {}
    for _ in range(400):
        b, v = rng.choice(["gemm", "conv", ""]), rng.choice(["a", "b", ""])
        blk, run = rng.choice(["64", "128"]), rng.choice(["0", "1", ""])
        lines.append(f"{b},{v},{blk},{run},{rng.uniform(0.1, 2):.4f}")
        key = (run, b, v, blk)
        want.append(seen.get(key, 0))
        seen[key] = want[-1] + 1
    p = tmp_path / "t.csv"
    p.write_text("\n".join(lines) + "\n")
    s = timing_table.PARSER.read(p, ReadOptions()).tables["samples"]
    assert s.height == 400
    assert s["iteration"].to_list() == want
