"""API and marker range nesting (parsers/rocprof_sdk.py nest_api_ranges, shared by the rocprofv3
CSV, rocprofiler-sdk JSON and rocpd readers) at trace size (issue 13, size blow-ups): the array
walk (chrome_trace.nest_sorted) gives exactly what the per-range walk gives, and a 200 MB API trace
(millions of ranges) costs no Python work per range, a long run of identical ranges (a blown-up
trace) included; only ranges with a null start go to the per-range walk."""

from __future__ import annotations

import random

import polars as pl
import pytest

from profaudit.parsers import chrome_trace, rocprof_sdk
from tests.read_cost import read_cost

_KINDS = ["user_annotation", "cuda_runtime", "hsa_api", "cuda_driver"]


def _frame(rng: random.Random, n: int, *, nulls: bool) -> pl.DataFrame:
    rows = []
    for _ in range(n):
        a = rng.randrange(0, 2_000)
        b = a + rng.choice([0, 0, 1, 5, 40, 300, 1_500])
        rows.append({"kind": rng.choice(_KINDS), "name": rng.choice(["r1", "r2", "hipLaunchKernel", "hsa_signal_wait"]),
                     "thread_id": rng.choice([1, 2, 3] + ([None] if nulls else [])), "process_id": 7,
                     "start_ns": a, "end_ns": None if nulls and rng.random() < 0.05 else b,
                     "correlation_id": rng.choice([None, rng.randrange(0, 40)])})
        if rng.random() < 0.15:
            rows.append(dict(rows[-1]))  # an identical twin: nests inside the first
    schema = {"kind": pl.String, "name": pl.String, "thread_id": pl.Int64, "process_id": pl.Int64, "start_ns": pl.Int64, "end_ns": pl.Int64,
              "correlation_id": pl.Int64}
    return pl.DataFrame(rows, schema=schema)


def _both(R: pl.DataFrame, monkeypatch):
    arrays = rocprof_sdk.nest_api_ranges(R, "rocprofv3")
    with monkeypatch.context() as m:
        m.setattr(rocprof_sdk, "_nest_arrays", rocprof_sdk._nest_walk)  # every range through the per-range walk
        walk = rocprof_sdk.nest_api_ranges(R, "rocprofv3")
    return arrays, walk


@pytest.mark.parametrize("seed", range(8))
def test_array_walk_matches_the_per_range_walk(seed, monkeypatch):
    rng = random.Random(seed)
    # distinct (thread, start, end) keys sort the same way whatever the sort's tie order
    R = _frame(rng, rng.randint(1, 400), nulls=seed % 2 == 1).unique(["thread_id", "start_ns", "end_ns"], keep="first", maintain_order=True)
    (ranges, launch), (ranges_w, launch_w) = _both(R, monkeypatch)
    assert ranges.equals(ranges_w)
    assert launch.sort("correlation_id").equals(launch_w.sort("correlation_id"))


def test_twins_nest_one_in_the_next_either_way(monkeypatch):
    # identical ranges (same key, same kind and name): each nests in the one before
    R = pl.DataFrame({"kind": ["user_annotation"] * 5 + ["cuda_runtime"], "name": ["m"] * 5 + ["hipLaunchKernel"], "thread_id": [1] * 6,
                      "process_id": [7] * 6, "start_ns": [0] * 5 + [10], "end_ns": [100] * 5 + [20], "correlation_id": [None] * 5 + [3]})
    (ranges, launch), (ranges_w, launch_w) = _both(R, monkeypatch)
    assert ranges.equals(ranges_w) and launch.equals(launch_w)
    assert ranges.sort("range_id")["depth"].to_list() == [0, 1, 2, 3, 4, 5]
    assert launch.rows() == [(3, "m")]


def test_a_long_run_of_identical_ranges_takes_the_arrays(monkeypatch):
    # a blown-up marker trace (fuzz_long seed 3101, rocprofv3-csv-dir #141: one marker range 3.8 M
    # times) took the per-range walk, whose 3.8 M-deep stack and Python lists grew the read by
    # ~840 MB and left the worker 12 MB short of its 2 GB bound; the arrays take any run now and
    # give what the walk gives. A null start still takes the walk
    calls = []
    real = chrome_trace.nest_sorted
    monkeypatch.setattr(chrome_trace, "nest_sorted", lambda *a: calls.append(1) or real(*a))
    n = 2_000  # past the arrays' 256 levels done one at a time: the whole-array passes
    R = pl.DataFrame({"kind": ["user_annotation"] * n + ["cuda_runtime"], "name": ["m"] * n + ["hipLaunchKernel"], "thread_id": [1] * (n + 1),
                      "process_id": [7] * (n + 1), "start_ns": [0] * n + [10], "end_ns": [100] * n + [20], "correlation_id": [None] * n + [3]},
                     schema_overrides={"correlation_id": pl.Int64})
    (ranges, launch), (ranges_w, launch_w) = _both(R, monkeypatch)
    assert calls == [1] and ranges.equals(ranges_w) and launch.equals(launch_w)
    assert ranges["depth"].max() == n and launch.rows() == [(3, "m")]
    calls.clear()
    rocprof_sdk.nest_api_ranges(R.with_columns(start_ns=pl.when(pl.col("end_ns") == 20).then(None).otherwise(pl.col("start_ns"))), "rocprofv3")
    assert calls == []


@pytest.mark.parametrize("seed", range(4))
def test_long_twin_runs_among_other_ranges_match_the_walk(seed, monkeypatch):
    # runs of hundreds of identical rows (whole rows alike, so the sort's tie order cannot differ)
    # inside and around other ranges: past the 256 levels done one at a time, as a blow-up is
    rng = random.Random(100 + seed)
    R = _frame(rng, 300, nulls=False)
    twins = [R.sample(1, seed=seed + i).select(pl.all().repeat_by(rng.randint(257, 600)).explode()) for i in range(3)]
    R = pl.concat([R, *twins]).sample(fraction=1.0, shuffle=True, seed=seed)
    (ranges, launch), (ranges_w, launch_w) = _both(R, monkeypatch)
    assert ranges["depth"].max() >= 257
    assert ranges.equals(ranges_w)
    assert launch.sort("correlation_id").equals(launch_w.sort("correlation_id"))


def _api_trace(path, calls: int):
    """A rocprofv3 HIP API trace: per thread, a marker range around every nine calls."""
    lines = ['"Domain","Function","Process_Id","Thread_Id","Correlation_Id","Start_Timestamp","End_Timestamp"\n']
    for i in range(calls):
        t, k = i % 4, i // 4
        if k % 10 == 0:
            lines.append(f'"MARKER_CORE_RANGE_API","step",4242,{t},0,{k * 100},{k * 100 + 999}\n')
        else:
            lines.append(f'"HIP_RUNTIME_API_EXT","hipLaunchKernel",4242,{t},{i},{k * 100 + 10},{k * 100 + 60}\n')
    path.write_text("".join(lines))
    return path


def test_api_trace_python_work_does_not_grow_per_range(tmp_path):
    a = read_cost(_api_trace(tmp_path / "a_hip_api_trace.csv", 40_000), "rocprofv3_csv", "ranges")
    b = read_cost(_api_trace(tmp_path / "b_hip_api_trace.csv", 80_000), "rocprofv3_csv", "ranges")
    assert a["rows"] == 40_000 and b["rows"] == 80_000
    # the per-range walk made ~8 Python calls per range; the arrays make the same number of calls
    # for twice the ranges, give or take polars' wrappers
    assert b["calls"] - a["calls"] < 2_000, (a["calls"], b["calls"])


def test_a_blown_up_marker_trace_costs_no_python_work_per_range(tmp_path):
    # fuzz_long seed 3101, rocprofv3-csv-dir #141: one marker line repeated 3.8 M times (200 MB)
    # went to the per-range walk (~6 Python calls a range) and peaked at 2,036 MB in a worker whose
    # bound is 2,048. The arrays take it now: the same calls for twice the ranges
    head = '"Domain","Function","Process_Id","Thread_Id","Correlation_Id","Start_Timestamp","End_Timestamp"\n'
    line = '"MARKER_CORE_RANGE_API","my-region",4242,9,5,100,1000\n'
    (tmp_path / "a_marker_api_trace.csv").write_text(head + line * 40_000)
    (tmp_path / "b_marker_api_trace.csv").write_text(head + line * 80_000)
    a = read_cost(tmp_path / "a_marker_api_trace.csv", "rocprofv3_csv", "ranges")
    b = read_cost(tmp_path / "b_marker_api_trace.csv", "rocprofv3_csv", "ranges")
    assert a["rows"] == 40_000 and b["rows"] == 80_000
    assert b["calls"] - a["calls"] < 2_000, (a["calls"], b["calls"])


@pytest.mark.parametrize("starts, ends", [
    ([2**63 - 1], [1000]),  # fuzz_long s17 seed 2033, rocprofv3-csv-dir #1949: OverflowError in the offsets
    ([2**63 - 1, 2**63 - 1], [2**63 - 1, 2**63 - 1]),
    ([2**63 - 10, 2**63 - 8, 2**63 - 2], [2**63 - 1, 2**63 - 5, 2**63 - 1]),
    ([0, 2**62, 2**63 - 1], [2**63 - 1, 2**62 + 1, 5]),
])
def test_times_at_the_top_of_int64_nest_as_the_per_range_walk_does(starts, ends, monkeypatch):
    n = len(starts)
    R = pl.DataFrame({"kind": ["user_annotation"] * n, "name": ["m"] * n, "thread_id": [1] * n, "process_id": [7] * n,
                      "start_ns": starts, "end_ns": ends, "correlation_id": [None] * n},
                     schema={"kind": pl.String, "name": pl.String, "thread_id": pl.Int64, "process_id": pl.Int64,
                             "start_ns": pl.Int64, "end_ns": pl.Int64, "correlation_id": pl.Int64})
    (ranges, launch), (ranges_w, launch_w) = _both(R, monkeypatch)
    assert ranges.equals(ranges_w) and launch.equals(launch_w)
