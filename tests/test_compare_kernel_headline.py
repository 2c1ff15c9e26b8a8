"""The kernel compare headline when not every kernel matches: over the matched kernels only, the
one-sided (fused, split, added, removed) kernels' time listed apart, and an explicit word when the
whole program's GPU time tells a different story. Expected numbers come from the kernel specs."""

from __future__ import annotations

import json

import pytest

from profaudit.compare import compare
from profaudit.fmt import fmt_ns, fmt_x
from profaudit.profile import ProfileSet
from test_compare import profile


def test_fused_kernels_headline_over_matched_only():
    # the candidate fuses bias + relu into one kernel and halves the GEMM
    b = profile("b", [("gemm", 20, 10_000), ("bias_add", 20, 1_000), ("relu", 20, 800)], noise=0)
    c = profile("c", [("gemm", 20, 5_000), ("fused_bias_relu", 20, 9_000)], noise=0)
    cmp = compare(b, c)
    t = cmp.totals
    mb, mc = 20 * 10_000, 20 * 5_000
    whole_b, whole_c = mb + 20 * 1_000 + 20 * 800, mc + 20 * 9_000
    assert t["headline"] == "matched_gpu_time"
    assert t["matched_gpu_time_diff_pct"] == pytest.approx((mc - mb) / mb * 100)
    assert t["gpu_time_speedup"] == pytest.approx(whole_b / whole_c)
    v = cmp.verdict
    assert v.startswith(f"candidate GPU time in the 1 matched kernel {(mc - mb) / mb * 100:+.1f}% ({fmt_x(mb / mc)}): candidate faster")
    assert f"listed apart: 2 removed kernels (baseline only) {fmt_ns(20 * 1_800)} and 1 added kernel (candidate only) {fmt_ns(20 * 9_000)}" in v
    whole_pct = (whole_c - whole_b) / whole_b * 100
    assert f"whole-program GPU time (all kernels) {whole_pct:+.1f}% ({fmt_x(whole_b / whole_c)}): differs from the matched kernels' {fmt_x(mb / mc)}" in v
    # the whole program is slower (+17 %) while the matched GEMM is 2x faster: never "candidate slower" as the headline
    assert whole_pct > 0 and "candidate slower" not in v


def test_totals_table_leads_with_the_matched_kernels():
    b = profile("b", [("gemm", 10, 4_000), ("old", 10, 1_000)], noise=0)
    c = profile("c", [("gemm", 10, 2_000), ("new", 10, 3_000)], noise=0)
    md = compare(b, c).render("markdown")
    totals = md.split("## Totals")[1].split("##")[0]
    rows = [r for r in totals.splitlines() if r.startswith("| ") and not r.startswith("|  |")]
    assert rows[0].startswith("| GPU time in matched kernels | 40.0 µs | 20.0 µs | -20.0 µs (-50.0%) | 2.00x |")
    assert rows[1].startswith("| GPU time, whole program (all kernels) | 50.0 µs | 50.0 µs |")
    assert "| removed kernels (baseline only) | 1: 10.0 µs |" in totals and "| added kernels (candidate only) |  | 1: 30.0 µs |" in totals


def test_whole_program_that_agrees_is_said_to_agree():
    # one-sided kernels too small to move the total at three significant digits
    b = profile("b", [("gemm", 20, 10_000), ("tiny_old", 1, 1)], noise=0)
    c = profile("c", [("gemm", 20, 5_000), ("tiny_new", 1, 2)], noise=0)
    v = compare(b, c).verdict
    assert "whole-program GPU time (all kernels) -50.0% (2.00x): the same as the matched kernels" in v


def test_matched_significance_uses_matched_kernels_only():
    # three runs a side; per-run GEMM totals differ, and a removed kernel whose time would swamp the test
    base = ProfileSet([profile(f"b{i}", [("gemm", 10, 10_000 + 200 * i), ("huge_old", 10, 50_000 + 9_000 * i)], noise=0) for i in range(3)])
    cand = ProfileSet([profile(f"c{i}", [("gemm", 10, 6_000 + 150 * i)], noise=0) for i in range(3)])
    cmp = compare(base, cand)
    sig = cmp.totals["matched_significance"]
    want = sum(10 * (10_000 + 200 * i) for i in range(3)) / sum(10 * (6_000 + 150 * i) for i in range(3))
    assert sig["basis"] == "per-profile totals of the matched kernels (3 vs 3 runs)"
    assert sig["speedup"] == pytest.approx(want)
    assert sig["speedup_ci_low"] <= want <= sig["speedup_ci_high"]
    assert "per-profile totals of the matched kernels (3 vs 3 runs)" in cmp.verdict
    # the whole-program test is still there, over every kernel
    assert cmp.totals["significance"]["speedup"] == pytest.approx(sum(10 * (60_000 + 9_200 * i) for i in range(3)) / sum(10 * (6_000 + 150 * i) for i in range(3)))


def test_all_matched_headline_unchanged():
    b = profile("b", [("gemm", 20, 10_000), ("relu", 20, 1_000)], noise=0)
    c = profile("c", [("gemm", 20, 5_000), ("relu", 20, 1_000)], noise=0)
    cmp = compare(b, c)
    assert cmp.totals["headline"] == "gpu_time" and "matched_significance" not in cmp.totals
    assert cmp.verdict.startswith(f"candidate GPU time {(120_000 - 220_000) / 220_000 * 100:+.1f}% ({fmt_x(220_000 / 120_000)}): candidate faster")
    assert "listed apart" not in cmp.verdict and "removed kernels" not in cmp.render("markdown")
    assert json.loads(cmp.render("json"))["totals"]["headline"] == "gpu_time"
