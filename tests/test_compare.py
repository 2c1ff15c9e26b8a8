"""`profaudit.compare` on constructed pairs with a known answer: matching, totals, where the time
went, significance, metrics that moved, renderers, the CLI and bad input."""

from __future__ import annotations

import json

import numpy as np
import polars as pl
import pytest

import profaudit
from profaudit.compare import compare
from profaudit.compare.match import library_class, library_variant, similarity
from profaudit.profile import Profile, ProfileSet
from conftest import assert_one_line_error

H100 = "NVIDIA H100 80GB HBM3"


def kernels(spec, *, seed=0, noise=0.01, gap_ns=500):
    """spec: (name, launches, mean_ns[, extra columns]) -> a kernels frame in launch order.

    Durations are mean x (1 + noise x N(0,1)), rescaled so each kernel's mean is exactly `mean_ns`
    (the tests compare exact sums)."""
    rng = np.random.default_rng(seed)
    rows, t = [], 0
    for item in spec:
        name, n, mean = item[:3]
        extra = item[3] if len(item) > 3 else {}
        d = mean * (1 + noise * rng.standard_normal(n)) if noise else np.full(n, float(mean))
        d = d * (mean / d.mean())
        for i in range(n):
            row = {"name": name, "duration_ns": float(d[i]), "start_ns": t, "end_ns": t + int(d[i])}
            for k, v in extra.items():
                row[k] = v[i] if isinstance(v, list) else v
            rows.append(row)
            t += int(d[i]) + gap_ns
    return pl.DataFrame(rows).with_columns(pl.int_range(pl.len(), dtype=pl.Int64).alias("kernel_id"))


def profile(pid, spec, *, source="nsys", device=H100, metadata=None, metrics=None, **kw):
    md = {"source": source, "format": source, "device_name": device, **(metadata or {})}
    tables = {"kernels": kernels(spec, **kw).with_columns(pl.lit(device).alias("device_name"), pl.lit(source).alias("source"))}
    if metrics is not None:
        tables["metrics"] = metrics
    return Profile(pid, md, tables)


GEMM_B = "void gemm_kernel<float, 128>(float*, int)"
GEMM_C = "gemm_kernel<float,128>(float *, int)"  # the same kernel as another tool spells it


@pytest.fixture(scope="module")
def known():
    b = profile("base", [(GEMM_B, 40, 10_000), ("triton_poi_fused_add_0", 40, 2_000), ("old_kernel", 10, 5_000), ("same_kernel", 40, 3_000)], seed=1)
    c = profile("cand", [(GEMM_C, 40, 5_000), ("triton_poi_fused_add_7", 40, 2_000), ("new_kernel", 20, 1_000), ("same_kernel", 40, 3_000)], seed=2)
    return b, c, compare(b, c)


def test_known_answer_sets(known):
    _, _, cmp = known
    m = {r["label"]: r for r in cmp.matched.iter_rows(named=True)}
    assert set(m) == {GEMM_B, "triton_poi_fused_add", "same_kernel"}
    assert m[GEMM_B]["method"] == "normal"
    assert m["triton_poi_fused_add"]["method"] == "family"
    assert m["same_kernel"]["method"] == "exact"
    assert cmp.added["name"].to_list() == ["new_kernel"]
    assert cmp.removed["name"].to_list() == ["old_kernel"]
    assert cmp.methods == {"exact": 1, "normal": 1, "family": 1}


def test_known_answer_differences_sum_to_total(known):
    _, _, cmp = known
    m = {r["label"]: r for r in cmp.matched.iter_rows(named=True)}
    assert m[GEMM_B]["diff_ns"] == pytest.approx(-200_000)
    assert m[GEMM_B]["speedup"] == pytest.approx(2.0)
    assert m["same_kernel"]["diff_ns"] == pytest.approx(0, abs=1e-6)
    t = cmp.totals
    assert t["baseline"]["gpu_time_ns"] == pytest.approx(40 * 10_000 + 40 * 2_000 + 10 * 5_000 + 40 * 3_000)
    assert t["candidate"]["gpu_time_ns"] == pytest.approx(40 * 5_000 + 40 * 2_000 + 20 * 1_000 + 40 * 3_000)
    assert t["gpu_time_diff_ns"] == pytest.approx(-200_000 - 50_000 + 20_000)
    c = cmp.contributions
    assert c["diff_ns"].sum() == pytest.approx(t["gpu_time_diff_ns"])
    assert c["share_pct"].sum() == pytest.approx(100.0)
    assert c["cumulative_pct"][-1] == pytest.approx(100.0)
    assert c["kind"].to_list()[:3] == ["matched", "removed", "added"]
    assert c.filter(pl.col("kind") == "removed")["diff_ns"][0] == pytest.approx(-50_000)
    assert c.filter(pl.col("kind") == "added")["diff_ns"][0] == pytest.approx(20_000)
    assert t["baseline"]["kernels"] == 130 and t["candidate"]["kernels"] == 140
    # launches are back to back with a 500 ns gap: the span is the sum of durations plus gaps
    assert t["baseline"]["wall_time_ns"] == pytest.approx(t["baseline"]["gpu_time_ns"] + 129 * 500, rel=1e-3)


def test_known_answer_significance(known):
    _, _, cmp = known
    m = {r["label"]: r for r in cmp.matched.iter_rows(named=True)}
    g = m[GEMM_B]
    assert g["significance"] == "faster"
    assert g["speedup_ci_low"] < 2.0 < g["speedup_ci_high"]
    assert g["p_value"] < 1e-6
    assert m["same_kernel"]["significance"] in ("same", "inconclusive")
    assert m["same_kernel"]["speedup_ci_low"] < 1.0 < m["same_kernel"]["speedup_ci_high"]
    # one profile per side: the total is one measurement
    assert cmp.totals["significance"]["verdict"] == "unknown"
    assert "faster" in cmp.verdict and "-" in cmp.verdict


def test_no_repetition_is_unknown():
    b = profile("b", [("k", 1, 100.0), ("j", 2, 50.0)], noise=0)
    c = profile("c", [("k", 1, 50.0), ("j", 2, 50.0)], noise=0)
    m = {r["label"]: r for r in compare(b, c).matched.iter_rows(named=True)}
    assert m["k"]["significance"] == "unknown" and m["k"]["p_value"] is None
    assert m["j"]["significance"] == "unknown"


def test_swap_is_antisymmetric(known):
    b, c, cmp = known
    rev = compare(c, b)
    assert rev.totals["gpu_time_diff_ns"] == pytest.approx(-cmp.totals["gpu_time_diff_ns"])
    assert set(rev.added["name"]) == set(cmp.removed["name"])
    assert set(rev.removed["name"]) == set(cmp.added["name"])
    assert sorted(rev.matched["diff_ns"].to_list()) == pytest.approx(sorted(-x for x in cmp.matched["diff_ns"].to_list()))


def test_stable_output(known):
    b, c, cmp = known
    again = compare(b, c)
    assert json.dumps(again.to_dict(), sort_keys=True) == json.dumps(cmp.to_dict(), sort_keys=True)


def test_launch_count_change_is_decomposed():
    b = profile("b", [("k", 10, 5_000)], noise=0)
    c = profile("c", [("k", 20, 4_000)], noise=0)
    r = compare(b, c).matched.row(0, named=True)
    assert r["diff_ns"] == pytest.approx(30_000)
    assert r["diff_from_duration_ns"] == pytest.approx(-10_000)
    assert r["diff_from_count_ns"] == pytest.approx(40_000)
    assert r["count_b"] == 10 and r["count_c"] == 20 and r["aligned"] == 10


def test_mangled_against_demangled():
    b = profile("b", [("_Z17matrix_addition2DPfS_S_ii", 5, 1_000)], source="ncu")
    c = profile("c", [("matrix_addition2D(float *, float *, float *, int, int)", 5, 800)], source="ncu")
    cmp = compare(b, c)
    assert cmp.matched.height == 1 and cmp.matched["method"][0] == "normal"
    assert cmp.added.height == 0 and cmp.removed.height == 0


def test_function_name_only_against_full_signature():
    # ncu CSV "function" kernel names against nsys demangled names
    b = profile("b", [("matrix_addition2D", 5, 1_000)])
    c = profile("c", [("void matrix_addition2D<4>(float*, int)", 5, 800)])
    cmp = compare(b, c)
    assert cmp.matched["method"].to_list() == ["short"]


def test_function_name_base_against_a_namespaced_kernel():
    # ncu's default --kernel-name-base function drops namespaces; the report keeps them
    b = profile("b", [("saxpyKernel", 5, 1_000), ("reduce", 5, 500)], source="ncu")
    c = profile("c", [("void bench::demo::<unnamed>::saxpyKernel<float>(float, const float *, float *, int)", 5, 800), ("cub::reduce(int*)", 5, 400), ("thrust::reduce(int*)", 5, 400)], source="ncu")
    cmp = compare(b, c)
    assert sorted(cmp.matched["method"].to_list()) == ["unqualified", "unqualified"]
    # two namespaced kernels of one name are not merged with each other by this level
    b2 = profile("b2", [("cub::reduce(int*)", 5, 500)], source="ncu")
    c2 = profile("c2", [("thrust::reduce(int*)", 5, 400)], source="ncu")
    assert "unqualified" not in compare(b2, c2).matched["method"].to_list()


def test_library_variants_and_classes():
    assert library_class("ampere_sgemm_128x64_nn") == "gemm"
    assert library_class("sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize128x128x8_stage3_warpsize2x2x1_ffma_aligna4_alignc4_execute_kernel_trt") == "gemm"
    assert library_class("Cijk_Alik_Bljk_SB_MT128x128x16_MI32x32x2x1_SN_1LDSB0") == "gemm"
    assert library_class("ncclDevKernel_AllReduce_Sum_f32_RING_LL") == "nccl:AllReduce"
    assert library_class("void cudnn::detail::implicit_convolve_sgemm<float, float, 128>(int)") == "conv:fprop"
    assert library_class("sm80_xmma_dgrad_implicit_gemm_f32") == "conv:dgrad"
    assert library_class("at::native::convert_kernel") is None  # "conv" of "convert" is not a convolution
    assert library_variant("ampere_sgemm_128x64_nn") == library_variant("volta_sgemm_64x32_sliced1x4_nn") == "gemm:sgemm_nn"
    a = "void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_128x128_16x4_nn_align4>(cutlass_80_tensorop_s1688gemm_128x128_16x4_nn_align4::Params)"
    b = "void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_64x64_32x6_nn_align4>(cutlass_80_tensorop_s1688gemm_64x64_32x6_nn_align4::Params)"
    assert library_variant(a) == library_variant(b)


def test_cublas_tile_change_matches_by_library_level():
    b = profile("b", [("ampere_sgemm_128x64_nn", 5, 10_000), ("ampere_sgemm_32x32_sliced1x4_tn", 5, 3_000), ("softmax_kernel", 5, 1_000)])
    c = profile("c", [("ampere_sgemm_64x64_nn", 5, 8_000), ("sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize64x64x8_stage3_warpsize2x2x1_ffma_execute_kernel_trt", 5, 2_000), ("softmax_kernel", 5, 1_000)])
    cmp = compare(b, c)
    methods = dict(zip(cmp.matched["label"].to_list(), cmp.matched["method"].to_list()))
    assert methods == {"gemm:sgemm_nn": "library-variant", "gemm": "op-class", "softmax_kernel": "exact"}
    assert cmp.added.height == 0 and cmp.removed.height == 0
    assert any("low-confidence" in n for n in cmp.notes)
    # the name mode uses no heuristics: the GEMMs are added and removed
    strict = compare(b, c, match="name")
    assert strict.matched["label"].to_list() == ["softmax_kernel"]
    assert set(strict.removed["name"]) == {"ampere_sgemm_128x64_nn", "ampere_sgemm_32x32_sliced1x4_tn"}


def test_cross_vendor_by_framework_op():
    # Kineto on H100 vs MI300: different BLAS kernels under the same torch op
    b = profile("b", [("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64", 4, 20_000, {"op_name": "aten::mm"}), ("void at::native::vectorized_elementwise_kernel<4, AddFunctor>(int)", 4, 1_000, {"op_name": "aten::add"})], source="kineto")
    c = profile("c", [("Cijk_Alik_Bljk_BBS_BH_MT128x128x64_MI16x16x16x1", 4, 25_000, {"op_name": "aten::mm"}), ("void at::native::vectorized_elementwise_kernel<4, AddFunctor>(int)", 4, 1_200, {"op_name": "aten::add"})], source="kineto", device="AMD Instinct MI300X")
    cmp = compare(b, c)
    methods = dict(zip(cmp.matched["label"].to_list(), cmp.matched["method"].to_list()))
    assert methods["op aten::mm"] == "op"
    assert len(methods) == 2 and cmp.added.height == 0


def test_triton_autotune_signature_suffix():
    b = profile("b", [("matmul_kernel_0d1d2d3d4d5d6d7c8d9c10d11c", 3, 9_000)])
    c = profile("c", [("matmul_kernel_0d1d2d3d4d5d6d7c8d9d10d11c", 3, 7_000)])
    cmp = compare(b, c)
    assert cmp.matched["method"].to_list() == ["family"] and cmp.matched["label"][0] == "matmul_kernel"


def test_fuzzy_only_as_last_resort():
    assert similarity("reduce_v1", "reduce_v2") > similarity("stencil_naive", "stencil_tiled") > similarity("gemm_kernel", "histogram_kernel")
    b = profile("b", [("reduce_v1", 5, 4_000), ("stencil_naive", 5, 9_000)])
    c = profile("c", [("reduce_v2", 5, 3_000), ("stencil_tiled", 5, 3_000)])
    auto = compare(b, c)
    assert auto.matched["method"].to_list() == ["fuzzy"]
    assert auto.matched["label"][0] == "reduce_v1 ~ reduce_v2"
    assert 0 < auto.matched["score"][0] < 1
    assert auto.removed["name"].to_list() == ["stencil_naive"]
    loose = compare(b, c, match="fuzzy")
    assert sorted(loose.matched["label"].to_list()) == ["reduce_v1 ~ reduce_v2", "stencil_naive ~ stencil_tiled"]
    assert compare(b, c, match="exact").matched.height == 0


def test_user_matmul_kernels_pair_by_operation_class():
    b = profile("b", [("matmul_naive", 5, 9_000)])
    c = profile("c", [("matmul_tiled", 5, 3_000)])
    cmp = compare(b, c)
    assert cmp.matched["method"].to_list() == ["op-class"] and cmp.matched["label"][0] == "gemm"


def test_exact_mode_keeps_spellings_apart():
    b = profile("b", [(GEMM_B, 3, 1_000)])
    c = profile("c", [(GEMM_C, 3, 1_000)])
    cmp = compare(b, c, match="exact")
    assert cmp.matched.height == 0 and cmp.added.height == 1 and cmp.removed.height == 1
    assert cmp.contributions["diff_ns"].sum() == pytest.approx(0.0)


def test_repeated_kernel_aligned_within_nvtx_range():
    # k runs in layers A, A, B on the baseline and B, A, A on the candidate: pair layer with layer
    b = profile("b", [("k", 3, 1_000, {"nvtx_range": ["A", "A", "B"]})], noise=0)
    c = profile("c", [("k", 3, 1_000, {"nvtx_range": ["B", "A", "A"]})], noise=0)
    cmp = compare(b, c)
    p = cmp.pairs
    assert p["context"].unique().to_list() == ["nvtx"]
    assert p.select("baseline_kernel_id", "candidate_kernel_id").sort("baseline_kernel_id").rows() == [(0, 1), (1, 2), (2, 0)]


def test_repeated_kernel_aligned_by_order_without_context():
    b = profile("b", [("k", 4, 1_000)], noise=0)
    c = profile("c", [("k", 3, 1_000)], noise=0)
    p = compare(b, c).pairs
    assert p["context"].unique().to_list() == ["order"]
    assert p.select("baseline_kernel_id", "candidate_kernel_id").rows() == [(0, 0), (1, 1), (2, 2)]


def test_repeated_runs_are_per_profile_and_give_total_significance():
    bs = ProfileSet([profile(f"b{i}", [("k", 20, 10_000), ("j", 20, 1_000)], seed=i) for i in range(4)])
    cs = ProfileSet([profile(f"c{i}", [("k", 20, 8_000), ("j", 20, 1_000)], seed=10 + i, noise=0.01) for i in range(3)])
    cmp = compare(bs, cs)
    t = cmp.totals
    assert t["baseline"]["profiles"] == 4 and t["candidate"]["profiles"] == 3
    assert t["baseline"]["gpu_time_ns"] == pytest.approx(20 * 10_000 + 20 * 1_000)  # per profile
    assert t["candidate"]["gpu_time_ns"] == pytest.approx(20 * 8_000 + 20 * 1_000)
    assert cmp.contributions["diff_ns"].sum() == pytest.approx(t["gpu_time_diff_ns"])
    sig = t["significance"]
    assert sig["basis"].startswith("per-profile totals") and sig["p_value"] is not None
    k = cmp.matched.filter(pl.col("label") == "k").row(0, named=True)
    assert "runs" in k["significance_basis"]


def _ncu_metrics(pid, values):
    rows = []
    for kid, metrics in enumerate(values):
        for m, v in metrics.items():
            rows.append({"kernel_id": kid, "metric": m, "unit": "", "value": float(v), "kind": "metric"})
    rows.append({"kernel_id": 0, "metric": "device__attribute_clock_rate", "unit": "", "value": 1.0, "kind": "device"})
    return pl.DataFrame(rows).with_columns(pl.lit(pid).alias("profile_id"))


def test_metrics_that_moved_for_ncu_pairs():
    mb = _ncu_metrics("b", [{"lts__t_sector_hit_rate.pct": 50.0, "smsp__inst_executed.sum": 1e6, "sm__throughput.avg.pct_of_peak_sustained_elapsed": 40.0, "launch__grid_size": 80}])
    mc = _ncu_metrics("c", [{"lts__t_sector_hit_rate.pct": 90.0, "smsp__inst_executed.sum": 1e6, "sm__throughput.avg.pct_of_peak_sustained_elapsed": 44.0, "launch__grid_size": 160}])
    b = profile("b", [("k", 1, 10_000, {"dram_bytes": 4e6, "registers_per_thread": 32, "achieved_occupancy_pct": 50.0})], source="ncu", metrics=mb)
    c = profile("c", [("k", 1, 6_000, {"dram_bytes": 1e6, "registers_per_thread": 40, "achieved_occupancy_pct": 50.0})], source="ncu", metrics=mc)
    mm = compare(b, c).metrics_moved
    got = {r["metric"]: r for r in mm.iter_rows(named=True)}
    # unchanged metrics, launch__ duplicates and device attributes are left out
    assert set(got) == {"lts__t_sector_hit_rate.pct", "sm__throughput.avg.pct_of_peak_sustained_elapsed", "dram_bytes", "registers_per_thread"}
    assert got["dram_bytes"]["rel_change_pct"] == pytest.approx(-75.0)
    assert got["dram_bytes"]["movement"] == pytest.approx(0.75)
    assert got["lts__t_sector_hit_rate.pct"]["category"] == "memory"
    assert got["registers_per_thread"]["category"] == "occupancy"
    assert mm["metric"].to_list()[0] == "dram_bytes"  # most moved first
    assert mm["rank"].to_list() == [1, 2, 3, 4]


# --- timing logs ------------------------------------------------------------------------------


def samples_profile(pid, cases, *, seed=0, time_source="cuda_events", device=H100, runs=1):
    from profaudit import samples as smp

    rng = np.random.default_rng(seed)
    cols = {k: [] for k in ("benchmark", "params", "run", "iteration", "duration_ns", "time_source", "device_name")}
    for bench, params, n, mean in cases:
        for r in range(runs):
            d = mean * (1 + 0.01 * rng.standard_normal(n))
            for i, v in enumerate(d):
                cols["benchmark"].append(bench)
                cols["params"].append(smp.canonical_params(params))
                cols["run"].append(r)
                cols["iteration"].append(i)
                cols["duration_ns"].append(float(v))
                cols["time_source"].append(time_source)
                cols["device_name"].append(device)
    return Profile(pid, {"source": "timing", "format": "timing-csv", "device_name": device}, {"samples": smp.frame(cols)})


def test_timing_logs_compare_per_case():
    b = samples_profile("b", [("add", {"N": 1024}, 50, 10_000), ("add", {"N": 4096}, 50, 40_000), ("copy", {"N": 1024}, 50, 5_000)], seed=1)
    c = samples_profile("c", [("add", {"N": 1024}, 50, 5_000), ("add", {"N": 4096}, 50, 40_000), ("scale", {"N": 1024}, 50, 2_000)], seed=2)
    cmp = compare(b, c)
    assert cmp.kind == "samples"
    m = {r["label"]: r for r in cmp.matched.iter_rows(named=True)}
    assert set(m) == {'add N=1024', 'add N=4096'}
    assert m['add N=1024']["significance"] == "faster"
    assert m['add N=1024']["speedup"] == pytest.approx(2.0, rel=0.02)
    assert m['add N=4096']["significance"] in ("same", "inconclusive")
    assert cmp.added["benchmark"].to_list() == ["scale"] and cmp.removed["benchmark"].to_list() == ["copy"]
    assert cmp.contributions["diff_ns"].sum() == pytest.approx(cmp.totals["time_diff_ns"])
    assert cmp.totals["geomean_speedup"] == pytest.approx(2 ** 0.5, rel=0.02)
    assert cmp.totals["case_significance"]["faster"] == 1


def test_totals_name_the_statistic_the_cases_use():
    from profaudit import samples as smp
    from profaudit.compare.render import totals_rows

    raw = compare(samples_profile("b", [("add", {"N": 1024}, 20, 10_000)], seed=1), samples_profile("c", [("add", {"N": 1024}, 20, 5_000)], seed=2))
    assert totals_rows(raw)[1][0][0] == "sum of case medians"

    def means(pid, v):
        cols = {"benchmark": ["add"], "params": [smp.canonical_params({"N": 1024})], "duration_ns": [v], "statistic": ["mean"], "sample_count": [100]}
        return Profile(pid, {"source": "timing", "format": "timing-json"}, {"samples": smp.frame(cols)})

    reported = compare(means("b", 10_000.0), means("c", 5_000.0))
    assert totals_rows(reported)[1][0][0] == "sum of case means (as reported)"
    assert reported.totals["baseline"]["time_ns"] == 10_000.0
    mixed = compare(samples_profile("b", [("add", {"N": 1024}, 20, 10_000)], seed=1), means("c", 5_000.0))
    assert totals_rows(mixed)[1][0][0] == "sum of case times (baseline: median; candidate: mean)"


def test_profile_against_timing_log_is_a_usage_error():
    b = profile("b", [("k", 3, 1_000)])
    c = samples_profile("c", [("k", {}, 5, 1_000)])
    with pytest.raises(profaudit.UsageError, match="compare profiles with profiles"):
        compare(b, c)


# --- renderers, CLI, inputs --------------------------------------------------------------------


def test_json_has_the_documented_keys(known):
    _, _, cmp = known
    d = json.loads(cmp.render("json"))
    for key in ("matched", "added", "removed", "totals", "findings", "metrics_moved", "roofline", "contributions", "verdict", "comparable"):
        assert key in d
    assert {r["name"] for r in d["added"]} == {"new_kernel"}
    assert sum(r["diff_ns"] for r in d["contributions"]) == pytest.approx(d["totals"]["gpu_time_diff_ns"])


def test_markdown_and_table_show_fairness_before_numbers(known):
    _, _, cmp = known
    md = cmp.render("markdown", top=2)
    assert md.index("## Fairness findings") < md.index("## Totals") < md.index("## Where the time went")
    assert "| 1 | matched |" in md and "more" in md  # top=2 folds the rest into one row
    txt = cmp.render("table")
    assert txt.index("Fairness findings") < txt.index("Totals")
    assert "new_kernel" in txt and "old_kernel" in txt


def test_html_has_waterfall(known):
    _, _, cmp = known
    h = cmp.render("html")
    assert h.startswith("<!DOCTYPE html>") and "Waterfall" not in h[:200]
    assert '"type":"waterfall"' in h and "plotly" in h.lower()
    assert h.count("<script type=\"text/javascript\">/**") <= 1  # plotly.js inlined once


def test_datasets_and_paths_as_inputs(tmp_path, known):
    from profaudit.dataset import write_dataset

    b, c, cmp = known
    write_dataset(ProfileSet([b]), tmp_path / "b")
    write_dataset(ProfileSet([c]), tmp_path / "c")
    again = profaudit.compare(str(tmp_path / "b"), tmp_path / "c")
    assert again.totals["gpu_time_diff_ns"] == pytest.approx(cmp.totals["gpu_time_diff_ns"])
    assert set(again.matched["label"]) == set(cmp.matched["label"])


def test_cli_compare_formats(tmp_path, cli, known):
    from profaudit.dataset import write_dataset

    b, c, _ = known
    write_dataset(ProfileSet([b]), tmp_path / "b")
    write_dataset(ProfileSet([c]), tmp_path / "c")
    res = cli("compare", tmp_path / "b", tmp_path / "c", "--format", "json")
    assert res.code == 0, res
    d = json.loads(res.out)
    assert {r["name"] for r in d["removed"]} == {"old_kernel"}
    res = cli("compare", tmp_path / "b", tmp_path / "c", "--top", "3")
    assert res.code == 0 and "Where the time went" in res.out
    out = tmp_path / "r.html"
    res = cli("compare", tmp_path / "b", tmp_path / "c", "-f", "html", "-o", out, "--match", "name")
    assert res.code == 0 and out.read_text().startswith("<!DOCTYPE html>")
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".r.html")]  # no temp left behind


def test_cli_bad_input(tmp_path, cli, known):
    from profaudit.dataset import write_dataset

    b, _, _ = known
    write_dataset(ProfileSet([b]), tmp_path / "b")
    assert_one_line_error(cli("compare", tmp_path / "b", tmp_path / "missing.json"), "no such file")
    empty = tmp_path / "empty.json"
    empty.write_text("")
    assert_one_line_error(cli("compare", empty, tmp_path / "b"), "empty file")
    junk = tmp_path / "junk.bin"
    junk.write_bytes(b"\x00\x01 not a profile")
    assert_one_line_error(cli("compare", tmp_path / "b", junk), "junk.bin")
    assert_one_line_error(cli("compare", tmp_path / "b", tmp_path / "b", "--match", "bogus"), "--match 'bogus'")
    assert_one_line_error(cli("compare", tmp_path / "b", tmp_path / "b", "--format", "pdf"), "--format 'pdf'")
    assert_one_line_error(cli("compare", tmp_path / "b", tmp_path / "b", "--top", "0"), "--top 0")


def test_cli_mixed_kinds_one_line(tmp_path, cli):
    from profaudit.dataset import write_dataset

    write_dataset(ProfileSet([profile("b", [("k", 3, 1_000)])]), tmp_path / "b")
    write_dataset(ProfileSet([samples_profile("c", [("k", {}, 5, 1_000)])]), tmp_path / "c")
    assert_one_line_error(cli("compare", tmp_path / "b", tmp_path / "c"), "compare profiles with profiles")


def test_api_rejects_bad_arguments(known):
    b, c, _ = known
    with pytest.raises(profaudit.UsageError, match="--match"):
        compare(b, c, match="nope")
    with pytest.raises(profaudit.UsageError, match="expected a path"):
        compare(b, 42)
    empty = Profile("e", {"source": "nsys"}, {})
    with pytest.raises(profaudit.InputError, match="no kernel durations"):
        compare(b, empty)


def test_top_level_api_is_callable_and_the_package_stays_a_package(known):
    import profaudit.compare as pkg

    b, c, _ = known
    assert callable(profaudit.compare) and profaudit.compare is pkg
    assert isinstance(profaudit.compare(b, c), pkg.Comparison)
    from profaudit.compare import Comparison, match  # the package stays importable

    assert Comparison.__name__ == "Comparison" and hasattr(match, "match_entities")


# --- fairness (audit rules over the pair) ------------------------------------------------------


def _codes(cmp, status="fail"):
    return {f.rule for f in cmp.findings if f.status.value == status}


def test_fair_pair_lists_checks_and_missing_facts(known):
    _, _, cmp = known
    assert {"PA201", "PA106"} <= _codes(cmp, "pass")  # same device, both nsys
    assert not _codes(cmp, "fail")
    # dtype and workload are not recorded in plain traces: decisive facts that could not be checked
    assert {"PA301", "PA302"} <= _codes(cmp, "unknown")
    assert cmp.comparable == "with-warnings"
    md = cmp.render("markdown")
    assert "| pass | PA106, PA201" in md and "cannot check: the dtype" in md


def test_ncu_against_nsys_is_a_time_source_finding():
    b = profile("b", [("k", 5, 10_000)], source="ncu")
    c = profile("c", [("k", 5, 5_000)], source="nsys")
    cmp = compare(b, c)
    assert "PA106" in _codes(cmp)
    assert cmp.comparable == "no"
    assert cmp.verdict.startswith("not comparable") and "no winner declared" in cmp.verdict
    assert "faster" not in cmp.verdict
    # the numbers are still there, under the finding
    assert cmp.matched["speedup"][0] == pytest.approx(2.0)
    d = json.loads(cmp.render("json"))
    assert d["comparable"] == "no" and d["findings"][0]["rule"] == "PA106" and d["findings"][0]["severity"] == "fail"


def test_different_devices_unless_intended():
    b = profile("b", [("k", 5, 10_000)], source="kineto", device=H100)
    c = profile("c", [("k", 5, 8_000)], source="kineto", device="AMD Instinct MI300X")
    cmp = compare(b, c)
    assert "PA201" in _codes(cmp) and cmp.comparable == "no"
    ok = compare(b, c, intended=("device",))
    f = [x for x in ok.findings if x.rule == "PA201"][0]
    assert f.severity.label == "warn" and "intended" in f.message
    assert ok.comparable == "with-warnings" and "faster" in ok.verdict


def test_ncu_clock_and_cache_control_from_metadata():
    md_b = {"clock_control": "base", "clock_control_origin": "recorded", "cache_control": "all", "cache_control_origin": "recorded"}
    md_c = {"clock_control": "none", "clock_control_origin": "recorded", "cache_control": "none", "cache_control_origin": "recorded"}
    b = profile("b", [("k", 3, 10_000)], source="ncu", metadata=md_b)
    c = profile("c", [("k", 3, 7_000)], source="ncu", metadata=md_c)
    cmp = compare(b, c)
    assert {"PA204", "PA209"} <= _codes(cmp)
    assert cmp.comparable == "no"


def test_precision_from_ncu_flop_counters():
    b = profile("b", [("gemm", 2, 10_000, {"flops_fp32": 1e9, "flops_tf32_tensor": 0.0})], source="ncu")
    c = profile("c", [("gemm", 2, 4_000, {"flops_bf16_tensor": 1e9, "flops_fp32": 1e6})], source="ncu")
    cmp = compare(b, c)
    f = [x for x in cmp.findings if x.rule == "PA301"][0]
    assert f.status.value == "fail" and "fp32" in f.message and "bf16" in f.message
    same = compare(b, b)
    g = [x for x in same.findings if x.rule == "PA301"][0]
    assert g.status.value == "pass"  # fp32 on both sides, TF32 pipe counted idle on both


def test_timing_logs_with_different_time_sources():
    b = samples_profile("b", [("add", {"N": 1024}, 20, 10_000)], time_source="cuda_events")
    c = samples_profile("c", [("add", {"N": 1024}, 20, 9_000)], time_source="host")
    cmp = compare(b, c)
    assert "PA106" in _codes(cmp) and cmp.comparable == "no"
    # one problem per side: its parameters are the workload the audit compares
    same = compare(b, samples_profile("c2", [("add", {"N": 1024}, 20, 9_000)]))
    assert "PA302" in _codes(same, "pass")
    other = compare(b, samples_profile("c3", [("add", {"N": 2048}, 20, 9_000)]))
    assert "PA302" in _codes(other) and other.matched.height == 0


def test_roofline_movement_and_figure():
    from profaudit.roofline import roofline

    def side(pid, dur, dram):
        return profile(pid, [("gemm", 2, dur, {"flops_fp32": 2e9, "dram_bytes": dram, "sm_clock_hz": 1.2e9}), ("copy", 2, 1_000, {"dram_bytes": 1e6})], source="ncu", noise=0)

    b, c = side("b", 100_000, 4e7), side("c", 50_000, 1e7)
    cmp = compare(b, c)
    rf = cmp.roofline
    g = {r["side"]: r for r in rf.filter(pl.col("label") == "gemm").iter_rows(named=True)}
    assert set(g) == {"baseline", "candidate"}
    # the group is placed as one kernel: total FLOPs over total bytes and time
    assert g["baseline"]["intensity_flop_per_byte"] == pytest.approx(4e9 / 8e7)
    assert g["candidate"]["intensity_flop_per_byte"] == pytest.approx(4e9 / 2e7)
    assert g["candidate"]["achieved_flop_per_s"] == pytest.approx(2 * g["baseline"]["achieved_flop_per_s"])
    assert g["candidate"]["pct_of_roof"] == pytest.approx(2 * g["baseline"]["pct_of_roof"])
    # independent check: the roofline module on the same work as a single kernel
    one = roofline(pl.DataFrame({"kernel_id": [0], "duration_ns": [200_000.0], "flops_fp32": [4e9], "dram_bytes": [8e7], "device_name": [H100], "sm_clock_hz": [1.2e9]}))
    assert g["baseline"]["pct_of_roof"] == pytest.approx(one["roof_pct_at_boost"][0])
    assert g["baseline"]["binding"] == one["bound_at_boost"][0]
    assert g["baseline"]["pct_of_roof_at_kernel_clock"] == pytest.approx(one["roof_pct_at_kernel_clock"][0])
    # the copy kernel has bytes but no FLOP counts: its DRAM throughput is still placed
    cp = rf.filter(pl.col("label") == "copy")
    assert cp.height == 2 and cp["achieved_dram_bytes_per_s"].to_list() == pytest.approx([2e6 / 2e-6] * 2)
    h = cmp.render("html")
    assert "Roofline before and after" in h and h.count('"type":"scatter"') >= 2
    assert "Roofline movement" in cmp.render("markdown")


def test_no_counters_no_roofline_no_metrics():
    cmp = compare(profile("b", [("k", 3, 1_000)]), profile("c", [("k", 3, 900)]))
    assert cmp.roofline.height == 0 and cmp.metrics_moved.height == 0
    md = cmp.render("markdown")
    assert "Roofline movement" not in md and "Metrics that moved" not in md


def _write_log(path, rows, header="benchmark,n,iteration,time_us"):
    path.write_text(header + "\n" + "\n".join(",".join(str(x) for x in r) for r in rows) + "\n")
    return path


def test_timing_log_files_end_to_end(tmp_path, cli):
    rng = np.random.default_rng(3)
    rows = lambda scale: [("softmax", n, i, round(n / 100 * scale * (1 + 0.01 * rng.standard_normal()), 4)) for n in (1024, 4096) for i in range(30)]
    b = _write_log(tmp_path / "base.csv", rows(1.0))
    c = _write_log(tmp_path / "cand.csv", rows(0.8))
    cmp = compare(b, c)
    assert cmp.kind == "samples" and cmp.matched.height == 2
    assert set(cmp.matched["significance"]) == {"faster"} and set(cmp.matched["significance_basis"]) == {"iterations"}
    assert cmp.totals["geomean_speedup"] == pytest.approx(1.25, rel=0.01)
    # an ambiguous time column: the loader's one-line error names the option, which compare takes
    amb = [("softmax", 1024, round(10 * (1 + 0.01 * rng.standard_normal()), 4)) for _ in range(20)]
    ab = _write_log(tmp_path / "a.csv", amb, "benchmark,n,t")
    ac = _write_log(tmp_path / "c.csv", [(x, y, z * 0.5) for x, y, z in amb], "benchmark,n,t")
    assert_one_line_error(cli("compare", ab, ac), "--time-column")
    res = cli("compare", ab, ac, "--time-column", "t", "--time-unit", "us", "-f", "json")
    assert res.code == 0, res
    assert json.loads(res.out)["matched"][0]["speedup"] == pytest.approx(2.0, rel=0.01)
    assert compare(ab, ac, time_column="t", time_unit="us").matched.height == 1


def test_nothing_in_common_declares_no_winner():
    k = compare(profile("b", [("k1", 3, 1_000)]), profile("c", [("k2_other", 3, 10)]), match="exact")
    assert k.matched.height == 0 and "nothing to compare" in k.verdict and "faster" not in k.verdict
    s = compare(samples_profile("b", [("add", {"N": 1}, 5, 1_000)]), samples_profile("c", [("mul", {"N": 1}, 5, 10)]))
    assert s.matched.height == 0 and "nothing to compare" in s.verdict


def test_significance_budget_tests_the_largest_differences_first(known):
    b, c, _ = known
    cmp = compare(b, c, max_tests=1)
    sig = dict(zip(cmp.matched["label"].to_list(), cmp.matched["significance"].to_list()))
    assert sig[GEMM_B] == "faster"  # the largest difference is tested
    assert sig["same_kernel"] == sig["triton_poi_fused_add"] == "untested"
    assert "largest time differences" in cmp.matched.filter(pl.col("label") == "same_kernel")["significance_basis"][0]


@pytest.mark.parametrize(
    "name, family",
    [
        ("triton_poi_fused_add_0", "triton_poi_fused_add"),
        ("triton_red_fused__softmax_abc1234", "triton_red_fused__softmax"),
        ("triton_poi_fused_add_0_0d1d2d", "triton_poi_fused_add"),
        ("matmul_kernel_0d1d2d3d4d5d6d7c8d9c10d11c", "matmul_kernel"),
        ("triton__0d1d2d", "triton__0d1d2d"),  # old inductor name: nothing left to identify it
        ("conv_3d", "conv_3d"),
        ("my_kernel_2", "my_kernel_2"),  # user kernels keep their numbers
        ("loop_add_fusion_3", "loop_add_fusion"),
        ("fusion.12", "fusion"),
        ("__omp_offloading_31_18a80a1__Z3fooPd_l12", "__omp_offloading__Z3fooPd_l12"),
    ],
)
def test_family_name_extensions(name, family):
    from profaudit.names import family_name

    assert family_name(name) == family


def test_verdict_reports_the_significance_of_the_total():
    # three runs a side: per-profile totals are independent samples of the total GPU time
    fast = ProfileSet([profile(f"b{i}", [("k", 20, 10_000)], seed=i) for i in range(3)])
    slow = ProfileSet([profile(f"c{i}", [("k", 20, 5_000)], seed=9 + i) for i in range(3)])
    same = ProfileSet([profile(f"d{i}", [("k", 20, 10_000)], seed=20 + i) for i in range(3)])
    v = compare(fast, slow).verdict
    assert "candidate faster" in v and "per-profile totals (3 vs 3 runs)" in v and "95% CI" in v
    w = compare(fast, same).totals["significance"]
    assert w["verdict"] in ("inconclusive", "same") and w["speedup_ci_low"] <= 1 <= w["speedup_ci_high"]
    assert "significant (" not in compare(fast, same).verdict


def test_unknown_intended_difference_is_a_usage_error(known, cli, tmp_path):
    b, c, _ = known
    with pytest.raises(profaudit.UsageError, match="--intended devcie"):
        compare(b, c, intended=("devcie",))
    from profaudit.dataset import write_dataset

    write_dataset(ProfileSet([b]), tmp_path / "b")
    assert_one_line_error(cli("compare", tmp_path / "b", tmp_path / "b", "--intended", "device,gpu"), "--intended gpu")


def test_roofline_panels_share_a_log_axis():
    from profaudit.compare.figures import roofline_figure

    extra = {"flops_fp32": 2.0e9, "dram_bytes": 1.0e8}
    b = profile("rb", [("k", 5, 100_000, extra)], source="ncu")
    c = profile("rc", [("k", 5, 50_000, extra)], source="ncu")
    fig = roofline_figure(compare(b, c))
    assert fig is not None
    axes = [k for k in fig.layout.to_plotly_json() if k.startswith("yaxis")]
    assert len(axes) == 2 and all(fig.layout[a].type == "log" for a in axes)
