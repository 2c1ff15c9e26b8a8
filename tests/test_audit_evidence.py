"""The audit judges from the evidence (issue 11): the supported speedup after an invalidating
finding, and verdict semantics (coverage, assumptions, equivalence, harness steadiness). The
inferences read from traces are in test_audit_evidence_trace.py. Every inference has a fixture
where it fires and a fair twin where it stays silent."""

from __future__ import annotations

import json

import numpy as np
import pytest

from audit_fixtures import claim, side
from audit_traces import BASE_CALLS, calls, tclaim, traced, triggered
from profaudit.audit import Severity, Status, audit
from profaudit.audit.render import render


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
    assert "PA105" in d["corrected_by_rules"]
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


@pytest.mark.parametrize("rule", ["PA101", "PA102", "PA104", "PA204", "PA207", "PA302", "PA403", "PA404", "PA407"])
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
    assert 0 < len(cov.checked) < 36 and len(cov.checked) + len(cov.unverified) == 36
    assert cov.line.startswith(f"{len(cov.checked)} of 36 rules could check; unverified: ")
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


def test_bench_timing_methods_differing_is_a_mode_mismatch(tmp_path):
    report = audit(_bench_claim(tmp_path, timing_method="back_to_back"))
    assert not triggered(report, "PA303")  # the baseline's log does not say: nothing to compare
    from profaudit.audit import claim_from_paths

    b = _bench_log(tmp_path / "b2.jsonl", 1.0e6, seed=1, timing_method="per_call")
    c = _bench_log(tmp_path / "c2.jsonl", 0.5e6, seed=2, timing_method="back_to_back")
    f = triggered(audit(claim_from_paths(b, c, claimed=2.0, statistic="median")), "PA303")
    assert f and "timing_method" in f[0].message


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


def test_an_approximate_claim_of_one_is_an_equivalence_claim(tmp_path):
    from profaudit.audit import load_claim
    from profaudit.audit.claim import parse_speedup

    assert parse_speedup("~1.0x", "speedup", None) == 1.0 and parse_speedup("≈ 2x", "speedup", None) == 2.0
    rng = np.random.default_rng(4)
    for role in ("baseline", "candidate"):
        (tmp_path / f"{role}.csv").write_text("iteration,time_ms\n" + "\n".join(f"{i},{v:.6f}" for i, v in enumerate(rng.lognormal(0, 0.01, 200))) + "\n")
    (tmp_path / "c.yaml").write_text("claim: the rewrite runs at the same speed\nspeedup: '~1.0x'\nstatistic: median\nbaseline: {timings: baseline.csv}\ncandidate: {timings: candidate.csv}\n")
    f = next(f for f in audit(load_claim(tmp_path / "c.yaml")).findings if f.rule == "PA406")
    assert f.status is Status.PASS and "no difference within" in f.message


def test_no_recomputable_speedup_is_inconclusive_not_pass():
    # Cannot-check raises nothing, but a claim with no timing evidence at all supports nothing.
    from profaudit import schema
    from profaudit.audit import Claim, Side

    empty = schema.SAMPLES.empty()
    report = audit(Claim(Side("baseline", "b", empty), Side("candidate", "c", empty), speedup=2.0, speedup_text="2.0"))
    assert report.verdict == "INCONCLUSIVE" and "no speedup can be recomputed" in report.reasons[0]
    assert report.supported.status == "not supported"


def test_trace_correction_keeps_the_clock_correction(tmp_path):
    # The candidate's timer misses a helper kernel AND it ran at a higher clock (1980 against
    # 1500 MHz): the traced times still need cycle space.
    b = traced(tmp_path, "baseline", 100_000, calls(20, BASE_CALLS), clock=1500.0)
    c = traced(tmp_path, "candidate", 30_000, calls(20, [("fused_kernel", 7, 30_000, 0)], helper=[("helper_kernel", 14, 50_000)]), seed=2, clock=1980.0)
    sup = audit(tclaim(b, c, speedup=3.33)).supported
    assert "PA105" in sup.corrected_by and "PA204" in sup.corrected_by
    assert sup.interval.space == "cycles"
    assert sup.interval.estimate == pytest.approx(100_000 / 50_300 * 1500 / 1980, rel=0.02)
