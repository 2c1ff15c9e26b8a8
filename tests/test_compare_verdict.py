"""The verdict line names no winner where the data cannot carry one, and a tensor-core kernel whose
tensor FLOPs were not counted gets no FLOP-based roofline position in a comparison."""

from __future__ import annotations

import polars as pl
import pytest

from profaudit.compare import compare
from test_compare import profile, samples_profile


def test_single_run_difference_below_noise_names_no_winner():
    # the same run read through two tools: the durations differ by the CSV's rounding (a few ns)
    b = profile("rep", [("k", 1, 6_133_792.0), ("j", 2, 17_424.0)], noise=0)
    c = profile("csv", [("k", 1, 6_133_790.0), ("j", 2, 17_424.0)], noise=0)
    cmp = compare(b, c)
    assert cmp.totals["significance"]["verdict"] == "unknown"
    v = cmp.verdict
    assert "no winner declared" in v and "noise threshold" in v
    assert "candidate faster" not in v and "candidate slower" not in v
    # the difference is printed, not rounded to zero: profaudit.fmt.fmt_pct's "below one decimal" form
    assert "+0.0%" not in v and "-0.0%" not in v and "GPU time >-0.1% (1.00x)" in v


def test_single_run_difference_above_noise_still_gives_the_direction():
    b = profile("b", [("k", 1, 10_000.0)], noise=0)
    c = profile("c", [("k", 1, 8_000.0)], noise=0)
    v = compare(b, c).verdict
    assert v.startswith("candidate GPU time -20.0% (1.25x): candidate faster") and "significance unknown" in v


def test_timing_verdict_without_a_significant_case_names_no_winner():
    # one sample per case cannot be tested: every case's significance is unknown
    b = samples_profile("b", [("add", {"N": 1}, 1, 10_000), ("mul", {"N": 1}, 1, 20_000)], seed=1)
    c = samples_profile("c", [("add", {"N": 1}, 1, 9_000), ("mul", {"N": 1}, 1, 18_000)], seed=2)
    cmp = compare(b, c)
    assert cmp.kind == "samples"
    assert set(cmp.totals["case_significance"]) <= {"unknown", "same", "inconclusive"}
    v = cmp.verdict
    assert "no winner declared" in v and not v.startswith("candidate faster")


def _tensor_profile(pid, dur, *, counted):
    """An ncu-like profile of one HMMA kernel: vector FLOPs counted, tensor pipe 40 % busy, and the
    tensor FLOPs either counted (sm__ops_path) or not (pct-only sections)."""
    method = "sass-counters(sum):fp32;" + ("tensor-ops-path:fp16" if counted else "tensor:unknown(pct-or-inst-only)")
    extra = {"flops_fp32": 1e6, "dram_bytes": 1e8, "flops_method": method, "sm_clock_hz": 1.6e9}
    if counted:
        extra["flops_fp16_tensor"] = 4e11
    metrics = pl.DataFrame({
        "profile_id": [pid], "kernel_id": [0], "metric": ["sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active"],
        "unit": ["%"], "value": [40.0], "kind": ["metric"],
    })
    return profile(pid, [("hmma_gemm", 1, dur, extra)], source="ncu", noise=0, metrics=metrics)


def test_roofline_movement_leaves_uncounted_tensor_work_unplaced():
    cmp = compare(_tensor_profile("b", 2_000_000.0, counted=False), _tensor_profile("c", 1_000_000.0, counted=False))
    rf = cmp.roofline
    assert rf.height == 2
    # without the tensor FLOPs, 1e6 vector FLOPs against 1e8 bytes would call a GEMM memory-bound
    assert rf["flops"].to_list() == [None, None]
    assert rf["intensity_flop_per_byte"].to_list() == [None, None] and rf["binding"].to_list() == [None, None]
    assert all("tensor pipe active (40.0% of peak)" in n for n in rf["roof_note"].to_list())
    # the DRAM throughput is still a measured fact
    assert rf["achieved_dram_bytes_per_s"].to_list() == pytest.approx([1e8 / 2e-3, 1e8 / 1e-3])


def test_roofline_movement_places_counted_tensor_work():
    cmp = compare(_tensor_profile("b", 2_000_000.0, counted=True), _tensor_profile("c", 1_000_000.0, counted=True))
    rf = cmp.roofline
    assert rf["flops"].to_list() == pytest.approx([4e11 + 1e6] * 2)
    assert rf["binding"].to_list() == ["compute", "compute"]
    assert all(n is None or "tensor pipe" not in n for n in rf["roof_note"].to_list())



def test_verdict_warns_when_matched_kernels_hold_little_of_the_time():
    # the only shared kernel is a tiny one: the totals are dominated by kernels of different programs
    b = profile("b", [("shared", 4, 1_000.0), ("only_b", 4, 24_000.0)], noise=0)
    c = profile("c", [("shared", 4, 1_000.0), ("only_c", 4, 99_000.0)], noise=0)
    v = compare(b, c).verdict
    assert "matched kernels hold only 4.0% / 1.0% of the baseline's / candidate's GPU time" in v
    # a pair where the matched kernels are the work gets no such caveat
    v2 = compare(profile("b", [("k", 4, 1_000.0)], noise=0), profile("c", [("k", 4, 800.0)], noise=0)).verdict
    assert "matched kernels hold" not in v2
