"""The audit judges from the evidence (issue 11): the supported speedup after an invalidating
finding, verdict semantics (coverage, assumptions, equivalence), and inferences read from nsys
SQLite exports and Kineto traces. Every inference has a fixture where it fires and a fair twin
where it stays silent."""

from __future__ import annotations

import json

import numpy as np
import pytest

from audit_fixtures import claim, side
from audit_traces import calls, kineto_json, load, nsys_sqlite
from profaudit.audit import Severity, Status, audit
from profaudit.audit.render import render

FORMATS = {"nsys": (nsys_sqlite, "sqlite"), "kineto": (kineto_json, "pt.trace.json")}


def traced(tmp_path, role, timed_ns, cs, *, fmt="nsys", meta=None, seed=1, n=60, period_ns=400_000, **kw):
    """A side timed at `timed_ns` per call whose attached trace holds the calls `cs`."""
    write, ext = FORMATS[fmt]
    path = write(tmp_path / f"{role}-{len(list(tmp_path.iterdir()))}.{ext}", cs, period_ns=period_ns)
    m = {"timed_range": "call", "profiled_calls": len(cs)}
    m.update(meta or {})
    return side(role, timed_ns, seed=seed, n=n, runs=1, meta=m, profiles=load(path), **kw)


def tclaim(b, c, **kw):
    """A claim without the softmax fixture's 1 GB workload (these kernels take ~100 us)."""
    return claim(b, c, workload={}, **kw)


def triggered(report, code):
    return [f for f in report.findings if f.rule == code and f.status is Status.FAIL and f.severity > Severity.INFO]


BASE_CALLS = [("softmax_kernel", 7, 100_000, 0)]


# ---------------------------------------------------------------------------------------------
# the supported speedup after an invalidating finding
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["nsys", "kineto"])
def test_work_escaping_the_timer_is_corrected_to_the_traced_gpu_time(tmp_path, fmt):
    # The candidate's events time its 30 us kernel; a helper thread launches 50 us of work on
    # stream 14 that overlaps it. The call costs the union, 50.3 us, not 30 us (nor 80 us).
    b = traced(tmp_path, "baseline", 100_000, calls(20, BASE_CALLS), fmt=fmt)
    c = traced(tmp_path, "candidate", 30_000, calls(20, [("fused_kernel", 7, 30_000, 0)], helper=[("helper_kernel", 14, 50_000)]), fmt=fmt, seed=2)
    report = audit(tclaim(b, c, speedup=3.33))
    assert report.verdict == "FAIL"
    assert triggered(report, "PA105") and triggered(report, "PA105")[0].side == "candidate"
    sup = report.supported
    assert sup.status == "corrected" and "PA105" in sup.corrected_by
    assert any("union of kernel intervals" in c for c in sup.corrected_by)
    assert sup.interval.estimate == pytest.approx(100_000 / 50_300, rel=0.01)
    d = report.as_dict()["supported_speedup"]
    assert d["status"] == "corrected" and any(e.startswith("PA105: per-call GPU time") for e in d["corrected_by"])
    for fmt_ in ("text", "markdown", "html"):
        out = render(report, fmt_)
        assert "corrected by PA105" in out and "3.33" not in out.split("supported speedup", 1)[-1].split("\n", 1)[0].lower()


def test_overlapping_streams_timed_by_their_span_are_fair(tmp_path):
    # Fair twin: the same 30 us + 50 us kernels overlap on two streams and the timer reads their
    # span (50.5 us): the kernel sum (80 us) is not the floor, and nothing is corrected.
    b = traced(tmp_path, "baseline", 100_000, calls(20, BASE_CALLS))
    c = traced(tmp_path, "candidate", 50_500, calls(20, [("fused_kernel", 7, 30_000, 0), ("side_kernel", 14, 50_000, -30_000)]), seed=2)
    report = audit(tclaim(b, c, speedup=1.98))
    assert not triggered(report, "PA105") and not triggered(report, "PA107")
    assert report.verdict == "PASS", report.reasons
    assert report.supported.status == "recomputed" and not report.supported.corrected_by


def test_invalid_timing_without_a_trace_is_not_supported():
    host = {"time_source": "perf_counter", "synchronized": False}
    b = side("baseline", 1.0e6, seed=1, meta=host, profiles=None)
    c = side("candidate", 0.015e6, seed=2, meta=host, profiles=None)
    report = audit(claim(b, c, speedup=66.0))
    assert report.verdict == "FAIL" and triggered(report, "PA103")
    sup = report.supported
    assert sup.status == "not supported" and sup.interval is None and "PA103" in sup.reason
    d = json.loads(render(report, "json"))["supported_speedup"]
    assert d["status"] == "not supported" and d["estimate"] is None and d["supported"] is False
    for fmt_ in ("text", "markdown", "html"):
        line = render(report, fmt_).split("upported speedup", 1)[1].split("\n", 1)[0].split("<br>", 1)[0].split("</p>", 1)[0]
        assert "not supported" in line and "66" not in line


def test_non_comparable_sides_state_no_speedup():
    b = side("baseline", 1.0e6, seed=1)
    c = side("candidate", 0.5e6, seed=2, meta={"dtype": "fp8"})
    report = audit(claim(b, c))
    assert report.supported.status == "not supported" and not report.supported.comparable
    assert "PA301" in report.supported.reason


@pytest.mark.parametrize("rule", ["PA101", "PA403", "PA204", "PA404", "PA407"])
def test_every_correcting_rule_names_its_correction(rule):
    # Each rule that vouches for a corrected interval says how it was corrected.
    from profaudit.audit.rules import BY_CODE

    src = __import__(type(BY_CODE[rule]).__module__, fromlist=["x"])
    text = open(src.__file__).read()
    assert text.count("correction=") == text.count("correction_note=") > 0


def test_fail_never_leaves_the_raw_ratio_supported(tmp_path):
    # A FAIL finding (cached results: under one launch per call) with no correction: the raw
    # ratio must not stand as the supported speedup.
    b = side("baseline", 1.0e6, seed=1, meta={"kernels_per_call": 1})
    c = side("candidate", 0.02e6, seed=2, meta={"kernels_per_call": 0.1})
    report = audit(claim(b, c, speedup=50))
    assert report.verdict == "FAIL" and triggered(report, "PA305")
    assert report.supported.status == "not supported" and "PA305" in report.supported.reason


# ---------------------------------------------------------------------------------------------
# verdict semantics: coverage, assumptions, equivalence, harness steadiness
# ---------------------------------------------------------------------------------------------


def _bare(role, median, *, seed, n=60, sigma=0.02, meta=None):
    """A side with per-iteration times and nothing else (no metadata, no trace)."""
    from profaudit.audit import Side

    rng = np.random.default_rng(seed)
    return Side.from_durations(role, rng.lognormal(np.log(median), sigma, n), meta=meta)


def test_checks_that_could_run_passed_is_pass_with_coverage_and_assumptions():
    from profaudit.audit import Claim, parse_statistic

    c = Claim(_bare("baseline", 1.0e6, seed=1), _bare("candidate", 0.5e6, seed=2), speedup=2.0, speedup_text="2.0", statistic=parse_statistic("median"))
    report = audit(c)
    assert report.verdict == "PASS", report.reasons
    cov = report.coverage
    assert 0 < len(cov.checked) < 35 and len(cov.checked) + len(cov.unverified) == 35
    assert cov.line.startswith(f"{len(cov.checked)} of 35 rules could check; unverified: ")
    assert {"workload", "precision", "device"} <= set(cov.topics)
    assert any(a.startswith("PA302 workload:") for a in cov.assumptions)
    for fmt_ in ("text", "markdown", "html"):
        out = render(report, fmt_)
        assert cov.line[:60] in out and "assumptions (could not be checked)" in out.lower()
    assert json.loads(render(report, "json"))["coverage"]["line"] == cov.line


def test_missing_shape_is_an_assumption_not_a_warning():
    b = side("baseline", 1.0e6, seed=1, drop=("shape", "batch_size"))
    c = side("candidate", 0.5e6, seed=2, drop=("shape", "batch_size"))
    report = audit(claim(b, c))
    assert report.verdict == "PASS", report.reasons
    assert "PA302" in report.coverage.unverified


def _aa(seed_c, cand_median, *, n=200, sigma=0.02, description="A/A run: the same kernel twice, no difference", speedup=1.0):
    from profaudit.audit import Claim, parse_statistic

    return Claim(
        _bare("baseline", 1.0e6, seed=1, n=n, sigma=sigma), _bare("candidate", cand_median, seed=seed_c, n=n, sigma=sigma),
        speedup=speedup, speedup_text=None if speedup is None else str(speedup), statistic=parse_statistic("median"), description=description,
    )


def _pa406(report):
    return next(f for f in report.findings if f.rule == "PA406")


def test_aa_run_is_equivalent_within_the_threshold():
    report = audit(_aa(2, 1.0e6))
    f = _pa406(report)
    assert f.status is Status.PASS and "no difference within +-1.0%" in f.message
    assert report.verdict == "PASS", report.reasons


def test_equivalence_is_inconclusive_only_when_the_interval_is_wider_than_the_threshold():
    f = _pa406(audit(_aa(2, 1.0e6, n=15, sigma=0.15)))
    assert f.severity is Severity.INCONCLUSIVE and "wider than" in f.message


def test_claimed_no_difference_with_a_real_difference_fails():
    report = audit(_aa(2, 0.9e6, description="refactor: no difference in speed"))
    f = _pa406(report)
    assert f.severity is Severity.FAIL and "a difference beyond" in f.message
    assert report.verdict == "FAIL"


def test_no_regression_is_one_sided():
    # A faster candidate is no regression; a slower one is.
    ok = _pa406(audit(_aa(2, 0.8e6, description="no regression from the new allocator", speedup=None)))
    assert ok.status is Status.PASS and "no regression" in ok.message
    bad = _pa406(audit(_aa(2, 1.2e6, description="no regression from the new allocator", speedup=None)))
    assert bad.severity is Severity.FAIL and "regression" in bad.message


def test_a_real_speedup_claim_is_not_judged_as_equivalence():
    f = _pa406(audit(_aa(2, 0.5e6, description="fused kernel", speedup=2.0)))
    assert f.status is Status.PASS and "significant speedup" in f.message


def _bench_log(path, median, *, seed, **meta):
    from profaudit.timinglog import write_timing_log

    rng = np.random.default_rng(seed)
    d = rng.lognormal(np.log(median), 0.02, 80)
    m = {"device_name": "NVIDIA H100 80GB HBM3", "time_source": "cuda_events", "warmup_steady": True, "stop_reason": "noise_target", "noise_target": 0.005, "noise_target_met": True, "minimums_met": True, "stopped_short": False}
    m.update(meta)
    write_timing_log(path, {"duration_ns": d, "iteration": np.arange(d.size), "phase": ["measure"] * d.size}, m)
    return path


def _bench_claim(tmp_path, **cand_meta):
    from profaudit.audit import claim_from_paths

    b = _bench_log(tmp_path / "b.jsonl", 1.0e6, seed=1)
    c = _bench_log(tmp_path / "c.jsonl", 0.5e6, seed=2, **cand_meta)
    return claim_from_paths(b, c, claimed=2.0, statistic="median")


def test_bench_run_that_never_became_steady_cannot_pass(tmp_path):
    report = audit(_bench_claim(tmp_path, warmup_steady=False, stop_reason="time_budget", noise_target_met=False))
    assert report.verdict != "PASS"
    f = [f for f in report.findings if f.rule == "PA101" and f.status is Status.FAIL]
    assert f and "never became steady" in f[0].message and "time_budget" in f[0].message
    assert any(f.rule == "PA402" and "noise target" in f.message for f in report.problems)


def test_bench_run_that_stopped_short_is_undersampled(tmp_path):
    report = audit(_bench_claim(tmp_path, stopped_short=True, minimums_met=False, stop_reason="hard_time_limit"))
    assert any(f.rule == "PA401" and "under-sampled" in f.message for f in report.problems)


def test_steady_bench_run_passes(tmp_path):
    report = audit(_bench_claim(tmp_path))
    assert report.verdict == "PASS", report.reasons
    assert any(f.rule == "PA101" and "steady warm-up" in f.message for f in report.findings)


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


def test_bench_timing_methods_differing_is_a_mode_mismatch(tmp_path):
    report = audit(_bench_claim(tmp_path, timing_method="back_to_back"))
    assert not triggered(report, "PA303")  # the baseline's log does not say: nothing to compare
    from profaudit.audit import claim_from_paths

    b = _bench_log(tmp_path / "b2.jsonl", 1.0e6, seed=1, timing_method="per_call")
    c = _bench_log(tmp_path / "c2.jsonl", 0.5e6, seed=2, timing_method="back_to_back")
    f = triggered(audit(claim_from_paths(b, c, claimed=2.0, statistic="median")), "PA303")
    assert f and "timing_method" in f[0].message


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
    assert f and ("first call" in f[0].message or "host time no API call explains (1 calls)" in f[0].message)
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
    assert d["coverage"]["line"].split(" of ")[1].startswith("35 rules could check")


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
    assert f and "host time no API call explains (1 calls)" in f[0].message
    # Fair twin: every call has the same short gaps.
    b2 = traced(tmp_path, "baseline", 100_000, calls(20, BASE_CALLS), period_ns=31e6)
    assert [x.status for x in _pa(audit(tclaim(b2, c, statistic="mean")), "PA102")] == [Status.PASS]


def test_contaminated_mean_in_summaries_is_restated_on_the_medians():
    from profaudit.audit import Claim, Side, parse_statistic
    from profaudit.schema import conform
    import polars as pl

    def summ(role, mean, median):
        df = conform("samples", pl.DataFrame({"duration_ns": [mean, median, 0.02 * median], "statistic": ["mean", "median", "std"], "sample_count": [100, 100, 100]}), role)
        return Side(role, role, df)

    c = Claim(summ("baseline", 3.0e6, 1.0e6), summ("candidate", 0.5e6, 0.5e6), speedup=6.0, speedup_text="6.0", statistic=parse_statistic("mean"))
    report = audit(c)
    assert "PA101" in report.supported.corrected_by and report.supported.interval.statistic == "median"
    assert report.supported.interval.estimate == pytest.approx(2.0)
    twin = Claim(summ("baseline", 1.02e6, 1.0e6), summ("candidate", 0.51e6, 0.5e6), speedup=2.0, speedup_text="2.0", statistic=parse_statistic("mean"))
    assert audit(twin).supported.status == "recomputed"


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
