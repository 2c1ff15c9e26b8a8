"""Nesting thousands of levels deep (one range repeated: each twin nests in the one before) takes
whole-array passes in `chrome_trace.nest_sorted` instead of one pass per level; both give what
the per-range stack walk (`_nest`) gives."""

from __future__ import annotations

import json

import numpy as np
import pytest

import profaudit
from profaudit.parsers import chrome_trace as ct
from tests.range_families import families


def _families(laminar: bool, seed: int):
    """Random ranges in 20 groups, with runs of identical twins (up to 40: deep chains) and (unless
    `laminar`) ranges that outlive the one they start in."""
    return families(seed, laminar, groups=20, span=3000, max_rows=20000, twins=lambda rng: rng.choice([0, 0, 0, 1, 5, 40]), outliving=30)


def _check(g, s, e, kinds):
    ref = ct._nest(g.tolist(), s.tolist(), e.tolist(), kinds)
    got = ct.nest_sorted(g, s, e, np.array([k == "user_annotation" for k in kinds]), np.array([k == "cpu_op" for k in kinds]))
    for r, x, what in zip(ref, got, ("parent", "depth", "annotation", "cpu_op")):
        assert x.tolist() == list(r), what
    return got


@pytest.mark.parametrize("laminar", [True, False])
def test_whole_array_passes_match_the_stack_walk(laminar, monkeypatch):
    monkeypatch.setattr(ct, "_LEVEL_LOOP_MAX", 0)  # every family takes the whole-array passes
    _check(*_families(laminar, 21 if laminar else 22))


def test_a_long_run_of_twins_nests_one_in_the_next():
    n = 30000
    g = np.zeros(n + 3, np.int64)
    s = np.r_[0, np.full(n, 10), 20, 2000].astype(np.int64)  # an outer range (row 0), the twins (1..n), a child, a later range
    e = np.r_[1000, np.full(n, 400), 30, 2100].astype(np.int64)
    kinds = ["user_annotation"] + ["cpu_op" if i % 3 else "cuda_runtime" for i in range(n)] + ["cuda_runtime", "cpu_op"]
    assert len(np.unique(_levels_of(g, s, e))) > ct._LEVEL_LOOP_MAX  # (the whole-array passes run)
    parent, depth, ann, op = _check(g, s, e, kinds)
    assert depth[n] == n and parent[n] == n - 1 and depth[n + 1] == n + 1 and parent[n + 1] == n
    assert ann[n + 1] == 0 and parent[n + 2] == -1


def _levels_of(g, s, e):
    return ct._depths(np.array([0]), s, e, e > s)


def test_a_blown_up_kineto_trace_loads_its_twins_as_a_chain(tmp_path, monkeypatch):
    # one cpu_op written 20,000 times (a line repeated by damage), inside a step annotation
    ev = [{"ph": "X", "cat": "user_annotation", "name": "step", "pid": 1, "tid": 1, "ts": 0, "dur": 1000}]
    ev += [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 10, "dur": 5}] * 20000
    path = tmp_path / "twins.pt.trace.json"
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": ev}))
    calls = []
    real = ct._inherited
    monkeypatch.setattr(ct, "_inherited", lambda *a: calls.append(1) or real(*a))
    r = profaudit.load(path).table("ranges").sort("range_id")
    assert calls  # the whole-array passes, not one per level (~20 us each: minutes for a 200 MB blow-up)
    assert r.height == 20001
    assert r["depth"].to_list() == list(range(20001))
    assert r["parent_range_id"].to_list()[1:] == r["range_id"].to_list()[:-1]
