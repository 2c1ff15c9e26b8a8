"""The audit reads the trace (issue 11): per-call GPU time, one-time work inside the timed range
(API calls, autotune variants, a long first call, unexplained host time), graph launches, calls
per sample, precision from kernel names and FP32 rates, workload and op, one-sided patterns. Each
inference is exercised on nsys SQLite exports and Kineto traces written in their real schemas
(tests/audit_traces.py), with the fair twin where it stays silent."""

from __future__ import annotations

import json

import numpy as np
import pytest

from audit_fixtures import claim, side
from audit_traces import BASE_CALLS, calls, kineto_json, load, nsys_sqlite, tclaim, traced, triggered
from profaudit.audit import Severity, Status, audit


# ---------------------------------------------------------------------------------------------
# reading the trace
# ---------------------------------------------------------------------------------------------


def _pa(report, code):
    return [f for f in report.findings if f.rule == code]


@pytest.mark.parametrize("fmt", ["nsys", "kineto"])
def test_graph_launches_in_the_trace_mean_cuda_graphs_whatever_the_meta_says(tmp_path, fmt):
    # Both metas say cuda_graphs: false; the candidate's trace replays its kernels through
    # cudaGraphLaunch: one side saves the launches.
    b = traced(tmp_path, "baseline", 100_000, calls(20, BASE_CALLS), fmt=fmt)
    c = traced(tmp_path, "candidate", 60_000, calls(20, [("k1", 7, 30_000, 0), ("k2", 7, 25_000, 0)], graph=True), fmt=fmt, seed=2)
    report = audit(tclaim(b, c, speedup=1.67))
    f = [x for x in triggered(report, "PA303") if x.severity is Severity.FAIL]
    assert f and "cuda_graphs" in f[0].message and "graph launches" in f[0].message
    assert any(x.severity is Severity.INFO and "contradicts its meta" in x.message for x in _pa(report, "PA303"))
    assert report.supported.status == "not supported"


def test_graphs_on_both_sides_are_the_same_mode(tmp_path):
    b = traced(tmp_path, "baseline", 100_000, calls(20, BASE_CALLS, graph=True), meta={"cuda_graphs": True})
    c = traced(tmp_path, "candidate", 60_000, calls(20, [("k1", 7, 30_000, 0), ("k2", 7, 25_000, 0)], graph=True), meta={"cuda_graphs": True}, seed=2)
    report = audit(tclaim(b, c, speedup=1.67))
    assert not triggered(report, "PA303")
    assert any(x.status is Status.PASS and "cuda_graphs" in x.message for x in _pa(report, "PA303"))


def test_calls_per_sample_differing_between_sides_is_a_mode_mismatch():
    b = side("baseline", 1.0e6, seed=1, meta={"calls_per_sample": 1})
    c = side("candidate", 0.5e6, seed=2, meta={"calls_per_sample": 10})
    f = triggered(audit(claim(b, c)), "PA303")
    assert f and f[0].severity is Severity.FAIL and "amortises launch overhead" in f[0].message
    twin = audit(claim(side("baseline", 1.0e6, seed=1, meta={"calls_per_sample": 10}), side("candidate", 0.5e6, seed=2, meta={"calls_per_sample": 10})))
    assert not triggered(twin, "PA303")


MM = {"dtype": "fp32", "tf32": False, "op": "matmul", "shape": [2048, 2048, 2048]}
SGEMM = [("ampere_sgemm_128x64_nn", 7, 400_000, 0)]
TF32_GEMM = [("sm80_xmma_gemm_f32f32_tf32f32_f32_nn_n_tilesize128x128x16_stage4", 7, 100_000, 0)]


@pytest.mark.parametrize("fmt", ["nsys", "kineto"])
def test_tensor_core_kernel_names_on_a_strict_fp32_side_are_a_precision_mismatch(tmp_path, fmt):
    b = traced(tmp_path, "baseline", 400_000, calls(20, SGEMM), fmt=fmt, meta=MM)
    c = traced(tmp_path, "candidate", 100_000, calls(20, TF32_GEMM), fmt=fmt, meta=MM, seed=2)
    report = audit(tclaim(b, c, speedup=4.0))
    f = triggered(report, "PA301")
    assert f and f[0].severity is Severity.FAIL and f[0].side == "candidate"
    assert "strict FP32" in f[0].message and "xmma" in f[0].message and "tf32 says False" in f[0].message
    assert report.verdict == "FAIL" and report.supported.status == "not supported"


def test_sgemm_on_both_sides_is_strict_fp32(tmp_path):
    b = traced(tmp_path, "baseline", 400_000, calls(20, SGEMM), meta=MM)
    c = traced(tmp_path, "candidate", 300_000, calls(20, [("ampere_sgemm_128x128_nn", 7, 300_000, 0)]), meta=MM, seed=2)
    report = audit(tclaim(b, c, speedup=1.33))
    assert not triggered(report, "PA301")


def test_fp32_rate_above_the_vector_peak_is_not_strict_fp32():
    # 8192^3 matmul = 1.1 TFLOP per call; H100's FP32 vector peak is ~67 TFLOP/s, so 5 ms per call
    # (220 TFLOP/s) cannot be strict FP32 whatever tf32 says; 40 ms can.
    mm = dict(MM, shape=[8192, 8192, 8192])
    c = claim(side("baseline", 40e6, seed=1, meta=mm, profiles=None), side("candidate", 5e6, seed=2, meta=mm, profiles=None), speedup=8.0, workload={})
    f = triggered(audit(c), "PA301")
    assert f and "FP32 vector peak of" in f[0].message and "H100" in f[0].message and f[0].side == "candidate"
    twin = claim(side("baseline", 40e6, seed=1, meta=mm, profiles=None), side("candidate", 20e6, seed=2, meta=mm, profiles=None), speedup=2.0, workload={})
    assert not triggered(audit(twin), "PA301")


def test_tf32_is_asked_only_for_matmul_and_names_the_device():
    sm = {"dtype": "fp32", "op": "softmax"}
    c = claim(side("baseline", 1.0e6, seed=1, meta=sm, drop=("tf32",)), side("candidate", 0.5e6, seed=2, meta=sm, drop=("tf32",)))
    assert not triggered(audit(c), "PA301")
    mm = {"dtype": "fp32", "op": "matmul", "shape": [1024, 1024, 1024]}
    c = claim(side("baseline", 1.0e6, seed=1, meta=mm, drop=("tf32",)), side("candidate", 0.5e6, seed=2, meta=mm, drop=("tf32",)), workload={})
    f = triggered(audit(c), "PA301")
    assert f and f[0].severity is Severity.WARN and "H100" in f[0].message and "A100" not in f[0].message


ATTN = [2, 16, 4096, 128]


def test_attention_against_causal_attention_is_different_work():
    b = side("baseline", 2.0e6, seed=1, meta={"op": "attention", "shape": ATTN})
    c = side("candidate", 1.0e6, seed=2, meta={"op": "causal_attention", "shape": ATTN})
    f = triggered(audit(claim(b, c, workload={})), "PA302")
    assert f and f[0].severity is Severity.FAIL and "different operations" in f[0].message
    twin = claim(side("baseline", 2.0e6, seed=1, meta={"op": "causal_attention", "shape": ATTN}), side("candidate", 1.0e6, seed=2, meta={"op": "causal_attention", "shape": ATTN}), workload={})
    assert not triggered(audit(twin), "PA302")


def test_causal_flop_inflation_is_named():
    causal = 4.0 * 2 * 16 * 4096 * 4096 * 128 * 0.5
    meta = {"op": "causal_attention", "shape": ATTN, "dtype": "bf16"}
    b = side("baseline", 2.0e6, seed=1, meta=dict(meta, flops=causal))
    c = side("candidate", 1.0e6, seed=2, meta=dict(meta, flops=2 * causal))
    f = [x for x in triggered(audit(claim(b, c, workload={})), "PA302") if x.side == "candidate"]
    assert f and "causal FLOP inflation" in f[0].message
    twin = claim(side("baseline", 2.0e6, seed=1, meta=dict(meta, flops=causal)), side("candidate", 1.0e6, seed=2, meta=dict(meta, flops=causal)), workload={})
    assert not triggered(audit(twin), "PA302")


def test_causal_flop_inflation_named_when_it_breaks_physics():
    causal = 4.0 * 8 * 32 * 8192 * 8192 * 128 * 0.5  # 2.2e13: 2.2 ms at H100's ~990 TFLOP/s bf16
    meta = {"op": "causal_attention", "shape": [8, 32, 8192, 128], "dtype": "bf16"}
    c = claim(side("baseline", 6e6, seed=1, meta=meta), side("candidate", 3e6, seed=2, meta=meta), workload={"flops": 2 * causal})
    f = [x for x in triggered(audit(c), "PA501") if x.side == "candidate"]
    assert f and "causal FLOP inflation" in f[0].message


def _bimodal(seed, share=0.4, gap=1.9, median=1.0e6):
    rng = np.random.default_rng(seed)
    return np.where(rng.random(300) < share, gap * median, median) * rng.lognormal(0, 0.02, 300)


def test_bimodality_on_one_side_is_contention_but_shared_bimodality_is_not():
    one = audit(claim(side("baseline", 0, seed=1, values=_bimodal(24)), side("candidate", 0.8e6, seed=2), speedup=1.25))
    assert any(f.severity is Severity.WARN and "bimodal" in f.message for f in triggered(one, "PA207"))
    both = audit(claim(side("baseline", 0, seed=1, values=_bimodal(24)), side("candidate", 0, seed=2, values=_bimodal(26, median=0.8e6)), speedup=1.25))
    assert not triggered(both, "PA207")
    assert any("shared pattern" in f.message for f in _pa(both, "PA207"))


@pytest.mark.parametrize("fmt", ["nsys", "kineto"])
def test_compile_in_the_timed_range_judged_by_the_claimed_statistic(tmp_path, fmt):
    # The baseline's first of 20 timed calls loads a module, compiles and allocates (30 ms).
    cs = calls(20, BASE_CALLS)
    cs[0].apis = [("cuModuleLoadData", 20e6), ("nvrtcCompileProgram", 8e6), ("cudaMalloc_v3020", 2e6)]
    b = traced(tmp_path, "baseline", 100_000, cs, fmt=fmt)
    c = traced(tmp_path, "candidate", 50_000, calls(20, [("fused_kernel", 7, 50_000, 0)]), fmt=fmt, seed=2)
    # a mean over the 20 traced calls carries 1.5 ms of one-time work per call: inflated
    mean = audit(tclaim(b, c, speedup=2.0, statistic="mean"))
    f = [x for x in triggered(mean, "PA102") if x.severity is Severity.FAIL]
    assert f and "inflates its mean" in f[0].message and f[0].correction is not None
    assert "PA102" in mean.supported.corrected_by and mean.supported.interval.estimate < 2.0
    # the median shrugs one compile off: noted, not a problem
    median = audit(tclaim(b, c, speedup=2.0, statistic="median"))
    assert not triggered(median, "PA102")
    assert any(x.severity is Severity.INFO and "does not move the claimed median" in x.message for x in _pa(median, "PA102"))


def test_no_one_time_work_in_the_timed_range_passes(tmp_path):
    b = traced(tmp_path, "baseline", 100_000, calls(20, BASE_CALLS))
    c = traced(tmp_path, "candidate", 50_000, calls(20, [("fused_kernel", 7, 50_000, 0)]), seed=2)
    f = _pa(audit(tclaim(b, c, statistic="mean")), "PA102")
    assert [x.status for x in f] == [Status.PASS]


@pytest.mark.parametrize("fmt", ["nsys", "kineto"])
def test_autotune_variants_in_the_first_calls_are_one_time_work(tmp_path, fmt):
    # The baseline's first 4 timed calls try 5 launch configurations of its matmul (autotuning);
    # later calls launch the winner only. No API call names it: the kernel variants do.
    tune = [("triton_mm", 7, 300_000, 0, g) for g in (32, 64, 96, 160, 192)]
    cs = calls(4, tune + [("triton_mm", 7, 100_000, 0, 128)], range_ns=None) + calls(16, [("triton_mm", 7, 100_000, 0, 128)])
    b = traced(tmp_path, "baseline", 100_000, cs, fmt=fmt, meta={"compile_mode": "max-autotune"})
    c = traced(tmp_path, "candidate", 50_000, calls(20, [("fused_kernel", 7, 50_000, 0)]), fmt=fmt, seed=2, meta={"compile_mode": "max-autotune"})
    f = [x for x in triggered(audit(tclaim(b, c, speedup=2.0, statistic="mean")), "PA102") if x.severity is Severity.FAIL]
    assert f and "kernel variants the steady calls never launch (4 calls)" in f[0].message


def test_the_same_variants_in_every_call_are_not_autotuning(tmp_path):
    # Fair twin: two configurations in every call (a split-K pair), none only at the start.
    pair = [("triton_mm", 7, 50_000, 0, 64), ("triton_mm", 7, 50_000, 0, 128)]
    b = traced(tmp_path, "baseline", 100_000, calls(20, pair))
    c = traced(tmp_path, "candidate", 50_000, calls(20, [("fused_kernel", 7, 50_000, 0)]), seed=2)
    assert [x.status for x in _pa(audit(tclaim(b, c, statistic="mean")), "PA102")] == [Status.PASS]


def test_a_first_call_orders_of_magnitude_longer_is_one_time_work(tmp_path):
    # A lazily compiled baseline: its first call's range lasts 40 ms with no API call to name why.
    cs = calls(20, BASE_CALLS)
    cs[0].range_ns = 40e6
    b = traced(tmp_path, "baseline", 100_000, cs, period_ns=41e6)
    c = traced(tmp_path, "candidate", 50_000, calls(20, [("fused_kernel", 7, 50_000, 0)]), seed=2)
    f = [x for x in triggered(audit(tclaim(b, c, speedup=2.0, statistic="mean")), "PA102") if x.severity is Severity.FAIL]
    # named as the first call, or (the trace has the thread's API calls) as host time between them
    assert f and ("first call" in f[0].message or "host time no API call explains (1 call)" in f[0].message)
    twin = calls(20, BASE_CALLS)
    twin[0].range_ns = 160_000  # 1.5x the typical call: a cold cache, not a compile
    b2 = traced(tmp_path, "baseline", 100_000, twin)
    assert [x.status for x in _pa(audit(tclaim(b2, c, statistic="mean")), "PA102")] == [Status.PASS]


def test_back_to_back_calls_per_sample_read_from_the_trace(tmp_path):
    # The candidate's log reports 50 us per call, but each of its timed ranges lasts 10 calls and
    # holds 10 launches: every sample averages 10 back-to-back calls, the baseline's one.
    b = traced(tmp_path, "baseline", 100_000, calls(20, BASE_CALLS), meta={"calls_per_sample": 1})
    c = traced(tmp_path, "candidate", 50_000, calls(20, [("fused_kernel", 7, 50_000, 0)] * 10), seed=2, period_ns=800_000)
    f = triggered(audit(tclaim(b, c)), "PA303")
    assert f and "calls_per_sample" in f[0].message and "10" in f[0].message
    # Fair twin: a launch-bound call whose range is 4x its device time but holds one launch.
    c2 = traced(tmp_path, "candidate", 5_000, calls(20, [("tiny_kernel", 7, 5_000, 0)], range_ns=20_000), seed=2)
    assert not triggered(audit(tclaim(b, c2, speedup=20.0)), "PA303")


def test_claim_file_with_nsys_exports_end_to_end(tmp_path, cli):
    # A claim as a reviewer receives it: CSV timings plus an nsys SQLite export per side. The
    # candidate's events miss a helper thread's kernel; the JSON report carries the correction.
    rng = np.random.default_rng(3)
    for role, med in (("baseline", 100.0), ("candidate", 30.0)):
        t = rng.lognormal(np.log(med), 0.02, 60)
        (tmp_path / f"{role}.csv").write_text("iteration,time_us\n" + "\n".join(f"{i},{v:.4f}" for i, v in enumerate(t)) + "\n")
    nsys_sqlite(tmp_path / "baseline.sqlite", calls(20, BASE_CALLS))
    nsys_sqlite(tmp_path / "candidate.sqlite", calls(20, [("fused_kernel", 7, 30_000, 0)], helper=[("helper_kernel", 14, 50_000)]))
    meta = "{dtype: bf16, time_source: cuda_events, timed_range: call, profiled_calls: 20}"
    (tmp_path / "claim.yaml").write_text(
        f"claim: fused kernel is 3.3x faster\nspeedup: 3.3\nstatistic: median\ndevice: NVIDIA H100 80GB HBM3\n"
        f"baseline: {{timings: baseline.csv, profile: baseline.sqlite, meta: {meta}}}\n"
        f"candidate: {{timings: candidate.csv, profile: candidate.sqlite, meta: {meta}}}\n"
    )
    res = cli("audit", str(tmp_path / "claim.yaml"), "--format", "json")
    d = json.loads(res.out)
    assert res.code == 1 and d["verdict"] == "FAIL"
    sup = d["supported_speedup"]
    assert sup["status"] == "corrected" and any(e.startswith("PA105") for e in sup["corrected_by"])
    assert sup["estimate"] == pytest.approx(100 / 50.3, rel=0.02)
    assert d["coverage"]["line"].split(" of ")[1].startswith("36 rules could check")


@pytest.mark.parametrize("fmt", ["nsys", "kineto"])
def test_calls_that_launch_nothing_in_the_trace_are_cached_results(tmp_path, fmt):
    # The candidate computes on its first call and returns a cached result afterwards: its timed
    # call ranges hold no kernel (no profiled_calls or kernels_per_call in the meta to say so).
    from audit_traces import Call

    cs = [Call([("fused_kernel", 7, 50_000, 0)])] + [Call([], range_ns=8_000) for _ in range(19)]
    b = traced(tmp_path, "baseline", 100_000, calls(20, BASE_CALLS), meta={"profiled_calls": None})
    c = traced(tmp_path, "candidate", 8_000, cs, fmt=fmt, seed=2, meta={"profiled_calls": None})
    report = audit(tclaim(b, c, speedup=12.5))
    f = triggered(report, "PA305")
    assert f and "19 of 20 timed calls launch no kernel" in f[0].message
    assert report.supported.status == "not supported"
    # Fair twin: every call launches its kernel.
    c2 = traced(tmp_path, "candidate", 50_000, calls(20, [("fused_kernel", 7, 50_000, 0)]), fmt=fmt, seed=2, meta={"profiled_calls": None})
    assert not triggered(audit(tclaim(b, c2)), "PA305")


def test_host_time_no_api_call_explains_is_one_time_work(tmp_path):
    # The baseline's 6th call recompiles in Python (a new shape): 30 ms with no API call, then
    # launches its kernel as usual. The mean carries it; the median does not.
    cs = calls(20, BASE_CALLS)
    cs[5].apis = [("cudaStreamSynchronize", 1_000)]
    cs[5].range_ns = 30e6 + 200_000
    b = traced(tmp_path, "baseline", 100_000, cs, period_ns=31e6)
    c = traced(tmp_path, "candidate", 50_000, calls(20, [("fused_kernel", 7, 50_000, 0)]), seed=2)
    f = [x for x in triggered(audit(tclaim(b, c, speedup=2.0, statistic="mean")), "PA102") if x.severity is Severity.FAIL]
    assert f and "host time no API call explains (1 call)" in f[0].message
    # Fair twin: every call has the same short gaps.
    b2 = traced(tmp_path, "baseline", 100_000, calls(20, BASE_CALLS), period_ns=31e6)
    assert [x.status for x in _pa(audit(tclaim(b2, c, statistic="mean")), "PA102")] == [Status.PASS]


def test_profiler_steps_are_the_timed_calls(tmp_path):
    # torch.profiler numbers its steps (ProfilerStep#0, #1, ...): `timed_range: ProfilerStep`
    # names them all, and the escaping helper kernel is read from the Kineto trace per step.
    def kside(role, timed, cs, seed):
        path = kineto_json(tmp_path / f"{role}.pt.trace.json", cs, range_name="ProfilerStep", numbered=True)
        return side(role, timed, seed=seed, n=60, runs=1, meta={"timed_range": "ProfilerStep", "profiled_calls": None}, profiles=load(path))

    b = kside("baseline", 100_000, calls(20, BASE_CALLS), 1)
    c = kside("candidate", 30_000, calls(20, [("fused_kernel", 7, 30_000, 0)], helper=[("helper_kernel", 14, 50_000)]), 2)
    report = audit(tclaim(b, c, speedup=3.33))
    assert triggered(report, "PA105")
    assert report.supported.interval.estimate == pytest.approx(100_000 / 50_300, rel=0.01)


def test_compile_seen_in_log_and_trace_is_removed_once(tmp_path):
    # The baseline's log starts with its 30 ms compile call, and the trace shows the module load
    # in that call: the steady-state recomputation already drops it; the correction must not
    # divide it out a second time.
    cs = calls(20, BASE_CALLS)
    cs[0].apis = [("cuModuleLoadData", 30e6)]
    rng = np.random.default_rng(7)
    v = rng.lognormal(np.log(100_000), 0.02, 60)
    v[0] = 30.1e6
    path = nsys_sqlite(tmp_path / "b.sqlite", cs)
    b = side("baseline", 0, seed=1, values=v, meta={"timed_range": "call", "profiled_calls": 20}, profiles=load(path))
    c = traced(tmp_path, "candidate", 50_000, calls(20, [("fused_kernel", 7, 50_000, 0)]), seed=2)
    report = audit(tclaim(b, c, speedup=round(float(v.mean()) / 50_000, 1), statistic="mean"))
    assert "PA102" in report.supported.corrected_by
    assert report.supported.interval.estimate == pytest.approx(2.0, rel=0.03)


def test_only_the_side_with_escaping_work_needs_a_trace(tmp_path):
    # The baseline's events are sound and it attached no trace; the candidate's trace shows the
    # helper kernel its timer missed: its traced GPU time stands against the baseline's samples.
    b = side("baseline", 100_000, seed=1, n=60, runs=1, meta={"profiled_calls": None}, profiles=None)
    c = traced(tmp_path, "candidate", 30_000, calls(20, [("fused_kernel", 7, 30_000, 0)], helper=[("helper_kernel", 14, 50_000)]), seed=2)
    sup = audit(tclaim(b, c, speedup=3.33)).supported
    assert sup.status == "corrected" and "PA105" in sup.corrected_by
    assert any("baseline's own steady-state samples" in e for e in sup.corrected_by)
    assert sup.interval.estimate == pytest.approx(100_000 / 50_300, rel=0.02)
    # without the candidate's trace nothing can correct it
    c2 = side("candidate", 30_000, seed=2, n=60, runs=1, meta={"time_source": "perf_counter", "synchronized": False}, profiles=None)
    assert audit(tclaim(b, c2, speedup=3.33)).supported.status == "not supported"


def test_hip_graph_launches_and_hip_malloc_on_rocm(tmp_path):
    # A ROCm Kineto trace: hipGraphLaunch on the candidate only; hipMalloc inside the baseline's
    # first timed call.
    mi300 = "AMD Instinct MI300X"

    def kside(role, timed, cs, seed):
        path = kineto_json(tmp_path / f"{role}.pt.trace.json", cs, api="hip", device=mi300)
        return side(role, timed, seed=seed, n=60, runs=1, meta={"timed_range": "call", "profiled_calls": 20, "device": mi300}, profiles=load(path), device_column=mi300)

    cs = calls(20, BASE_CALLS)
    cs[0].apis = [("hipMalloc", 5e6)]
    b = kside("baseline", 100_000, cs, 1)
    c = kside("candidate", 60_000, calls(20, [("k1", 7, 30_000, 0), ("k2", 7, 25_000, 0)], graph=True), 2)
    report = audit(tclaim(b, c, speedup=1.67, statistic="mean"))
    f = [x for x in triggered(report, "PA303") if x.severity is Severity.FAIL]
    assert f and "graph launches" in f[0].message and "cuda_graphs" in f[0].message
    assert any("hipMalloc" in x.message for x in _pa(report, "PA102"))


def test_causal_attention_kernels_on_one_side_only_are_different_work(tmp_path):
    # Both metas say "attention" (no op difference declared); the candidate's flash kernel is
    # instantiated with Is_causal=true, the baseline's with false.
    base = [("void flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4>, Is_dropout=false, Is_causal=false>(Flash_fwd_params)", 7, 200_000, 0)]
    cand = [("void flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4>, Is_dropout=false, Is_causal=true>(Flash_fwd_params)", 7, 100_000, 0)]
    meta = {"op": "attention", "shape": [2, 16, 4096, 128]}
    b = traced(tmp_path, "baseline", 200_000, calls(20, base), meta=meta)
    c = traced(tmp_path, "candidate", 100_000, calls(20, cand), meta=meta, seed=2)
    f = triggered(audit(tclaim(b, c)), "PA302")
    assert f and f[0].severity is Severity.FAIL and "causal" in f[0].message and f[0].non_comparable
    c2 = traced(tmp_path, "candidate", 100_000, calls(20, [(base[0][0], 7, 100_000, 0)]), meta=meta, seed=2)
    assert not triggered(audit(tclaim(b, c2)), "PA302")


def test_autoranged_batches_on_both_sides_are_not_a_mode_mismatch():
    # timeit-style autorange picks 100 calls per sample for one side and 1000 for the faster one:
    # both amortise launches, so both run the same way.
    b = side("baseline", 1.0e6, seed=1, meta={"calls_per_sample": 100})
    c = side("candidate", 0.5e6, seed=2, meta={"calls_per_sample": 1000})
    assert not triggered(audit(claim(b, c)), "PA303")


def test_allocation_in_every_call_is_steady_state_not_one_time(tmp_path):
    # Fair twin of the compile test: the baseline allocates in every call (no caching
    # allocator); that is its per-call cost, not one-time work to remove.
    cs = calls(20, BASE_CALLS, apis=[("cudaMalloc_v3020", 20_000)])
    b = traced(tmp_path, "baseline", 120_000, cs)
    c = traced(tmp_path, "candidate", 50_000, calls(20, [("fused_kernel", 7, 50_000, 0)]), seed=2)
    f = _pa(audit(tclaim(b, c, speedup=2.4, statistic="mean")), "PA102")
    assert [x.status for x in f] == [Status.PASS]
    assert "cudaMalloc" in f[0].evidence["baseline_trace"]["recurring_every_call"]


def test_flop_accounting_on_the_same_work_keeps_the_time_ratio():
    # Both sides run the same causal attention; the baseline counts the non-causal FLOPs. The work
    # is equal, so the time ratio is still the supported speedup, named as the FLOP recount.
    causal = 4.0 * 2 * 16 * 4096 * 4096 * 128 * 0.5
    meta = {"op": "causal_attention", "shape": ATTN, "dtype": "bf16"}
    b = side("baseline", 2.0e6, seed=1, meta=dict(meta, flops=2 * causal))
    c = side("candidate", 1.0e6, seed=2, meta=dict(meta, flops=causal))
    report = audit(claim(b, c, workload={}))
    f = [x for x in triggered(report, "PA302") if "the time ratio stands" in x.message]
    assert f and not f[0].non_comparable
    assert report.supported.status == "corrected" and "PA302" in report.supported.corrected_by
    assert report.supported.interval.estimate == pytest.approx(2.0, rel=0.03)
    # different shapes recomputed: different work, no speedup holds
    c2 = side("candidate", 1.0e6, seed=2, meta=dict(meta, shape=[2, 16, 2048, 128], flops=causal / 4))
    assert audit(claim(b, c2, workload={})).supported.status == "not supported"


def _with_checker(path):
    """Rename the trace's last NVTX range to 'check': it runs after the timed calls."""
    import sqlite3

    con = sqlite3.connect(path)
    last = con.execute("SELECT MAX(start) FROM NVTX_EVENTS").fetchone()[0]
    con.execute("UPDATE NVTX_EVENTS SET text = 'check' WHERE start = ?", (last,))
    con.commit()
    con.close()
    return path


def test_work_deferred_past_the_timed_calls_escapes_the_timer(tmp_path):
    # The candidate's calls only record what to do (a 2 us bookkeeping kernel each); the 20
    # matmuls run after the loop, when the checker reads the outputs.
    from audit_traces import Call

    meta = {"timed_range": "call", "profiled_calls": 20}
    b = traced(tmp_path, "baseline", 100_000, calls(20, BASE_CALLS))
    lazy = calls(20, [("record_kernel", 7, 2_000, 0)]) + [Call([("fused_kernel", 7, 50_000, 0)] * 20)]
    c = side("candidate", 5_000, seed=2, n=60, runs=1, meta=meta, profiles=load(_with_checker(nsys_sqlite(tmp_path / "lazy.sqlite", lazy))))
    report = audit(tclaim(b, c, speedup=20.0))
    f = triggered(report, "PA105")
    assert f and "deferred past the timer" in f[0].message
    # 20 x 2 us + 20 x 50 us over 20 calls = 52 us a call against the baseline's 100 us
    assert report.supported.status == "corrected" and report.supported.interval.estimate == pytest.approx(100_000 / 52_000, rel=0.02)
    # Fair twin: a correctness check after the loop runs the kernel once more and compares.
    checked = calls(20, [("fused_kernel", 7, 50_000, 0)]) + [Call([("fused_kernel", 7, 50_000, 0), ("allclose_kernel", 7, 5_000, 0)])]
    c2 = side("candidate", 50_000, seed=2, n=60, runs=1, meta=meta, profiles=load(_with_checker(nsys_sqlite(tmp_path / "checked.sqlite", checked))))
    assert not triggered(audit(tclaim(b, c2)), "PA105")
