"""Every audit rule: well-formed, fires on its unfair fixture, stays silent on fair ones, and says
"cannot check" (never passes) when its evidence is missing."""

from __future__ import annotations

import importlib
from pathlib import Path

import numpy as np
import pytest

from audit_fixtures import A100, claim, fair_claim, ratio, side, trace
from audit_ranks_fixtures import fair_multi_claim, one_rank_claim
from profaudit import schema
from profaudit.audit import PITFALLS, RULES, Claim, Side, Severity, Status, audit, gather
from profaudit.audit.rules import BY_CODE, select_rules


# ---------------------------------------------------------------------------------------------
# unfair fixtures, one per rule: (claim factory, severity the rule must report)
# ---------------------------------------------------------------------------------------------


def _warmup():
    rng = np.random.default_rng(11)
    b = rng.lognormal(np.log(1.0e6), 0.02, 200)
    b[:15] *= 6.0  # compile + autotune in the first iterations
    c = rng.lognormal(np.log(0.5e6), 0.02, 200)
    bs, cs = side("baseline", 0, seed=1, values=b), side("candidate", 0, seed=2, values=c)
    return claim(bs, cs, speedup=ratio(bs, cs, np.mean, np.mean), statistic="mean")


def _compile():
    b = side("baseline", 1.0e6, seed=1, profiles=trace(0.96e6, 20, one_time={"cuModuleLoadData": 0.12, "nvrtcCompileProgram": 0.08}))
    return claim(b, side("candidate", 0.5e6, seed=2))


def _host_timer():
    return claim(side("baseline", 1.0e6, seed=1), side("candidate", 0.5e6, seed=2, meta={"time_source": "host", "synchronized": False}))


def _periodic():
    heavy = np.tile([2.0e6, 0.05e6, 0.05e6, 0.05e6], 60) * np.random.default_rng(3).lognormal(0, 0.02, 240)
    return claim(side("baseline", 1.0e6, seed=1), side("candidate", 0, seed=2, values=heavy), speedup=20.0, statistic="median")


def _below_kernel_time():
    return claim(side("baseline", 1.0e6, seed=1), side("candidate", 0.5e6, seed=2, profiles=trace(0.9e6, 20)))


def _mixed_sources():
    return claim(side("baseline", 1.0e6, seed=1, meta={"time_source": "ncu"}), side("candidate", 0.5e6, seed=2))


def _multi_stream():
    return claim(side("baseline", 1.0e6, seed=1), side("candidate", 0.5e6, seed=2, profiles=trace(0.3e6, 20, extra_stream_share=0.3)))


def _conflict():
    return claim(side("baseline", 1.0e6, seed=1), side("candidate", 0.5e6, seed=2, meta={"device": A100}))


def _device():
    return claim(side("baseline", 1.0e6, seed=1), side("candidate", 0.5e6, seed=2, meta={"device": A100}, device_column=A100))


def _versions():
    return claim(side("baseline", 1.0e6, seed=1, meta={"driver": "535.104.05", "versions": {"torch": "2.1.2", "triton": "2.1.0"}}), side("candidate", 0.5e6, seed=2))


def _throttle():
    reasons = ["sw_thermal_slowdown" if i % 3 == 0 else "none" for i in range(150)]
    return claim(side("baseline", 1.0e6, seed=1, throttle=reasons), side("candidate", 0.5e6, seed=2))


def _clock_state():
    # The baseline was power-capped to 1410 MHz: 1.4x slower in time, the same in cycles.
    b = side("baseline", 1.0e6 * 1980 / 1410, seed=1, clock=1410.0)
    return claim(b, side("candidate", 0.5e6, seed=2), speedup=2.8, statistic="median")


def _drift():
    rng = np.random.default_rng(5)
    c = 0.5e6 * np.linspace(1.0, 1.12, 300) * rng.lognormal(0, 0.01, 300)
    return claim(side("baseline", 1.0e6, seed=1), side("candidate", 0, seed=2, values=c, meta={"interleaved": False}), speedup=1.9)


def _power():
    return claim(side("baseline", 1.0e6, seed=1, meta={"power_limit_w": 400}), side("candidate", 0.5e6, seed=2))


def _contention():
    rng = np.random.default_rng(6)
    b = np.where(rng.random(300) < 0.3, 1.9e6, 1.0e6) * rng.lognormal(0, 0.01, 300)
    return claim(side("baseline", 0, seed=1, values=b, meta={"other_gpu_processes": 2}), side("candidate", 0.5e6, seed=2))


def _governor():
    b = side("baseline", 7_000, seed=1, meta={"host_governor": "powersave"}, profiles=None)
    c = side("candidate", 4_500, seed=2, profiles=None)
    return claim(b, c, speedup=1.55, workload={})


def _cache_mismatch():
    return claim(side("baseline", 1.0e6, seed=1), side("candidate", 0.5e6, seed=2, meta={"l2_flush": False}))


def _precision():
    return claim(side("baseline", 1.0e6, seed=1), side("candidate", 0.5e6, seed=2, meta={"dtype": "fp16"}))


def _workload():
    return claim(side("baseline", 1.0e6, seed=1), side("candidate", 0.5e6, seed=2, meta={"shape": [16, 4096, 4096]}))


def _exec_mode():
    return claim(side("baseline", 1.0e6, seed=1), side("candidate", 0.5e6, seed=2, meta={"cuda_graphs": True}))


def _correctness():
    return claim(side("baseline", 1.0e6, seed=1), side("candidate", 0.5e6, seed=2, meta={"correctness_checked": "before_timing", "rtol": 0.2}))


def _cached():
    return claim(side("baseline", 1.0e6, seed=1), side("candidate", 0.5e6, seed=2, meta={"kernels_per_call": 0.25}))


def _weak_baseline():
    return claim(side("baseline", 12.0e6, seed=1), side("candidate", 0.5e6, seed=2), speedup=24.0)


def _few_samples():
    rng = np.random.default_rng(7)
    b = side("baseline", 0, seed=1, values=rng.lognormal(np.log(1.0e6), 0.03, 5))
    c = side("candidate", 0, seed=2, values=rng.lognormal(np.log(0.92e6), 0.03, 5))
    return claim(b, c, speedup=1.09)


def _noise():
    return claim(side("baseline", 1.0e6, seed=1), side("candidate", 0.5e6, seed=2, sigma=0.25))


def _outliers():
    rng = np.random.default_rng(8)
    b = rng.lognormal(np.log(1.0e6), 0.02, 300)
    b[rng.choice(300, 6, replace=False)] *= 8.0  # context switches / a GC pause on the baseline only
    bs = side("baseline", 0, seed=1, values=b)
    cs = side("candidate", 0, seed=2, values=rng.lognormal(np.log(0.5e6), 0.02, 300))
    return claim(bs, cs, speedup=ratio(bs, cs, np.mean, np.mean), statistic="mean")


def _mixed_statistics():
    rng = np.random.default_rng(9)
    bs = side("baseline", 0, seed=1, values=rng.lognormal(np.log(1.0e6), 0.06, 300))
    cs = side("candidate", 0, seed=2, values=rng.lognormal(np.log(0.5e6), 0.06, 300))
    return claim(bs, cs, speedup=ratio(bs, cs, np.mean, np.min), statistic="mean")


def _tail():
    rng = np.random.default_rng(10)
    bs = side("baseline", 0, seed=1, values=rng.lognormal(np.log(1.0e6), 0.05, 20))
    cs = side("candidate", 0, seed=2, values=rng.lognormal(np.log(0.5e6), 0.05, 20))
    return claim(bs, cs, speedup=2.0, statistic="p99")


def _not_significant():
    return claim(side("baseline", 1.0e6, seed=1), side("candidate", 0.997e6, seed=2), speedup=None)


def _overclaim():
    return fair_claim(speedup=3.0)


def _runs():
    return claim(side("baseline", 1.0e6, seed=1), side("candidate", 0.5e6, seed=2, run_offsets=(1.0, 1.0, 1.3)))


def _impossible():
    return fair_claim(workload={"bytes": 3.2e9})


def _hot_cache():
    hot = {"l2_flush": False}
    return claim(side("baseline", 1.0e6, seed=1, meta=hot), side("candidate", 0.5e6, seed=2, meta=hot), workload={"bytes": 24e6})


def _sequential(d: np.ndarray, runs: int, gap_ns: float) -> np.ndarray:
    """Start stamps of back-to-back calls (per run, each run starting at 0)."""
    per = d.reshape(runs, -1)
    return np.concatenate([np.concatenate([[0.0], np.cumsum(r[:-1] + gap_ns)]) for r in per])


def _overlapping():
    rng = np.random.default_rng(21)
    c = rng.lognormal(np.log(0.5e6), 0.02, 150)
    ts = np.arange(150) * 0.25e6  # a new sample every 0.25 ms, each claiming 0.5 ms
    b = rng.lognormal(np.log(1.0e6), 0.02, 150)
    return claim(side("baseline", 0, seed=1, values=b, timestamps=_sequential(b, 1, 2_000.0)), side("candidate", 0, seed=2, values=c, timestamps=ts))


def _launch_floor():
    return claim(side("baseline", 8_000, seed=1, profiles=None), side("candidate", 4_000, seed=2, profiles=None), workload={})


BAD = {
    "PA101": (_warmup, Severity.FAIL),
    "PA102": (_compile, Severity.FAIL),
    "PA103": (_host_timer, Severity.FAIL),
    "PA104": (_periodic, Severity.FAIL),
    "PA105": (_below_kernel_time, Severity.FAIL),
    "PA106": (_mixed_sources, Severity.FAIL),
    "PA107": (_multi_stream, Severity.WARN),
    "PA108": (_conflict, Severity.FAIL),
    "PA109": (_overlapping, Severity.FAIL),
    "PA201": (_device, Severity.FAIL),
    "PA202": (_versions, Severity.WARN),
    "PA203": (_throttle, Severity.WARN),
    "PA204": (_clock_state, Severity.FAIL),
    "PA205": (_drift, Severity.WARN),
    "PA206": (_power, Severity.FAIL),
    "PA207": (_contention, Severity.WARN),
    "PA208": (_governor, Severity.FAIL),
    "PA209": (_cache_mismatch, Severity.FAIL),
    "PA210": (one_rank_claim, Severity.FAIL),
    "PA301": (_precision, Severity.FAIL),
    "PA302": (_workload, Severity.FAIL),
    "PA303": (_exec_mode, Severity.FAIL),
    "PA304": (_correctness, Severity.WARN),
    "PA305": (_cached, Severity.FAIL),
    "PA306": (_weak_baseline, Severity.WARN),
    "PA401": (_few_samples, Severity.INCONCLUSIVE),
    "PA402": (_noise, Severity.WARN),
    "PA403": (_outliers, Severity.FAIL),
    "PA404": (_mixed_statistics, Severity.FAIL),
    "PA405": (_tail, Severity.INCONCLUSIVE),
    "PA406": (_not_significant, Severity.INCONCLUSIVE),
    "PA407": (_overclaim, Severity.FAIL),
    "PA408": (_runs, Severity.WARN),
    "PA501": (_impossible, Severity.FAIL),
    "PA502": (_hot_cache, Severity.WARN),
    "PA503": (_launch_floor, Severity.WARN),
}


# Fair variants close to each rule's line: the rule must not flag them as a problem.
def _symmetric_warmup():
    rng = np.random.default_rng(12)
    b = rng.lognormal(np.log(1.0e6), 0.02, 200)
    c = rng.lognormal(np.log(0.5e6), 0.02, 200)
    b[:10] *= 5
    c[:10] *= 5
    bs, cs = side("baseline", 0, seed=1, values=b), side("candidate", 0, seed=2, values=c)
    return claim(bs, cs, speedup=2.0, statistic="mean")


def _outliers_with_median():
    c = _outliers()
    c.statistic = c.statistic.__class__("median", "quantile", 0.5)
    c.speedup = 2.0
    return c


def _launch_bound_same_governor():
    b = side("baseline", 7_000, seed=1, profiles=None)
    c = side("candidate", 4_500, seed=2, profiles=None)
    return claim(b, c, speedup=1.55, workload={})


def _declared_precision_change():
    return claim(side("baseline", 1.0e6, seed=1), side("candidate", 0.5e6, seed=2, meta={"cuda_graphs": True}), intended=("cuda_graphs",))


GOOD_EXTRA = {
    "PA101": _symmetric_warmup,
    "PA403": _outliers_with_median,
    "PA208": _launch_bound_same_governor,
    "PA303": _declared_precision_change,
    "PA210": fair_multi_claim,
}


@pytest.fixture(scope="module")
def fair_evidence():
    return gather(fair_claim())


def _problems(findings):
    return [f for f in findings if f.severity > Severity.INFO and f.status is not Status.PASS]


# ---------------------------------------------------------------------------------------------
# catalogue
# ---------------------------------------------------------------------------------------------


def test_codes_unique_and_well_formed():
    codes = [r.code for r in RULES]
    names = [r.name for r in RULES]
    assert len(set(codes)) == len(codes)
    assert len(set(names)) == len(names)
    assert codes == sorted(codes)
    for r in RULES:
        assert r.CODE_RE.match(r.code), r.code
        assert r.NAME_RE.match(r.name), r.name
        assert r.pitfalls and set(r.pitfalls) <= set(PITFALLS), r.code
        assert r.needs, r.code
        doc = r.explanation()
        for part in ("What it detects", "Why it matters", "Example"):
            assert part in doc, (r.code, part)
        assert isinstance(r.severity, Severity)


def test_one_rule_per_file_named_after_code_and_name():
    folder = Path(importlib.import_module("profaudit.audit.rules").__file__).parent
    files = sorted(p.stem for p in folder.glob("pa*.py"))
    assert files == sorted(f"{r.code.lower()}_{r.name.replace('-', '_')}" for r in RULES)
    for r in RULES:
        mod = importlib.import_module(f"profaudit.audit.rules.{r.code.lower()}_{r.name.replace('-', '_')}")
        assert mod.RULE is r


def test_every_pitfall_is_covered():
    covered = {p for r in RULES for p in r.pitfalls}
    assert covered == set(PITFALLS)


def test_every_rule_has_a_bad_fixture():
    assert set(BAD) == {r.code for r in RULES}


def test_select_and_ignore_by_prefix():
    assert {r.code for r in select_rules("PA1,PA402")} == {r.code for r in RULES if r.code.startswith("PA1")} | {"PA402"}
    assert not any(r.code.startswith("PA5") for r in select_rules(ignore="PA5"))
    assert [r.code for r in select_rules("pa40", ignore="PA405")] == [r.code for r in RULES if r.code.startswith("PA40") and r.code != "PA405"]
    from profaudit.errors import UsageError

    with pytest.raises(UsageError, match="PA9"):
        select_rules("PA9")


# ---------------------------------------------------------------------------------------------
# fires on bad, silent on good
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("code", [r.code for r in RULES])
def test_rule_fires_on_its_bad_fixture(code):
    make, severity = BAD[code]
    ev = gather(make())
    findings = BY_CODE[code].check(ev)
    assert findings and all(f.rule == code for f in findings)
    fired = [f for f in findings if f.status is Status.FAIL]
    assert fired, findings
    assert max(f.severity for f in fired) == severity, [(f.severity, f.message) for f in findings]
    for f in fired:
        assert f.message and f.pitfalls
        d = f.as_dict()
        assert {"rule", "name", "severity", "status", "pitfalls", "message", "evidence"} <= set(d)


@pytest.mark.parametrize("code", [r.code for r in RULES])
def test_rule_silent_on_fair_benchmark(code, fair_evidence):
    findings = BY_CODE[code].check(fair_evidence)
    assert findings
    assert not _problems(findings), [(f.severity, f.status, f.message) for f in findings]


@pytest.mark.parametrize("code", sorted(GOOD_EXTRA))
def test_rule_silent_on_near_miss(code):
    findings = BY_CODE[code].check(gather(GOOD_EXTRA[code]()))
    assert not _problems(findings), [(f.severity, f.message) for f in findings]


@pytest.mark.parametrize("code", [r.code for r in RULES])
def test_rule_says_cannot_check_without_evidence(code):
    empty = schema.SAMPLES.empty()
    bare = Claim(Side("baseline", "b", empty), Side("candidate", "c", empty))
    findings = BY_CODE[code].check(gather(bare))
    assert findings
    assert all(f.status is Status.UNKNOWN for f in findings), [(f.status, f.message) for f in findings]
    assert all(f.message.startswith("cannot check: ") for f in findings)


def test_fair_benchmark_passes_with_no_warnings():
    report = audit(fair_claim())
    assert report.verdict == "PASS", report.reasons
    assert not [f for f in report.findings if f.severity >= Severity.WARN]
    sup = report.supported
    assert sup.comparable and sup.interval.statistic == "median" and sup.interval.space == "cycles"
    assert sup.interval.low < 2.0 < sup.interval.high
    # The trace, spec and metadata let most rules actually check, not just pass for lack of data.
    checked = {f.rule for f in report.findings if f.status is Status.PASS}
    assert {"PA102", "PA105", "PA107", "PA108", "PA201", "PA204", "PA209", "PA301", "PA501", "PA502"} <= checked


# ---------------------------------------------------------------------------------------------
# specific behaviour
# ---------------------------------------------------------------------------------------------


def test_warmup_failure_carries_the_steady_state_correction():
    report = audit(_warmup())
    f = next(f for f in report.findings if f.rule == "PA101")
    assert f.correction is not None and abs(f.correction.estimate - 2.0) < 0.05
    assert report.verdict == "FAIL"
    assert abs(report.supported.interval.estimate - 2.0) < 0.05


def test_outlier_failure_corrects_to_the_median():
    report = audit(_outliers())
    assert report.verdict == "FAIL"
    assert report.supported.interval.statistic == "median"
    assert "PA403" in report.supported.corrected_by


def test_clock_inflated_speedup_is_corrected_to_cycles():
    report = audit(_clock_state())
    f = next(f for f in report.findings if f.rule == "PA204")
    assert f.severity is Severity.FAIL
    assert abs(report.supported.interval.estimate - 2.0) < 0.05
    assert report.supported.interval.space == "cycles"


def test_non_comparable_sides_support_no_speedup():
    report = audit(_precision())
    assert report.verdict == "FAIL"
    assert report.supported.comparable is False
    assert report.as_dict()["supported_speedup"]["comparable"] is False


def test_declared_difference_downgrades_to_warning():
    c = claim(side("baseline", 1.0e6, seed=1), side("candidate", 0.5e6, seed=2, meta={"dtype": "fp8"}), intended=("dtype",))
    f = BY_CODE["PA301"].check(gather(c))[0]
    assert f.severity is Severity.WARN and f.status is Status.FAIL


def test_tf32_unknown_on_fp32_warns():
    # a matmul (TF32 applies there; issue 11: not for a softmax, see test_audit_evidence.py)
    mm = {"dtype": "fp32", "op": "matmul", "shape": [1024, 1024, 1024]}
    c = claim(side("baseline", 1.0e6, seed=1, meta=mm, drop=("tf32",)), side("candidate", 0.5e6, seed=2, meta={**mm, "tf32": False}))
    f = BY_CODE["PA301"].check(gather(c))[0]
    assert f.severity is Severity.WARN and "TF32" in f.message


def test_tf32_on_one_side_fails():
    c = claim(side("baseline", 1.0e6, seed=1, meta={"dtype": "fp32", "tf32": False}), side("candidate", 0.5e6, seed=2, meta={"dtype": "tf32"}))
    f = BY_CODE["PA301"].check(gather(c))[0]
    assert f.severity is Severity.FAIL and f.non_comparable


def test_hot_cache_explains_above_dram_roof_only_as_warning():
    hot = {"l2_flush": False}
    # 24 MB in 5 us is 4.8 TB/s: above HBM, possible only from L2 (50 MB on H100).
    c = claim(side("baseline", 10e3, seed=1, meta=hot, profiles=None), side("candidate", 5e3, seed=2, meta=hot, profiles=None), workload={"bytes": 24e6})
    fs = BY_CODE["PA501"].check(gather(c))
    assert max(f.severity for f in fs) is Severity.WARN
    assert any("hot L2" in f.message for f in fs)


def test_counter_bytes_above_bandwidth_fail():
    c = claim(side("baseline", 1.0e6, seed=1), side("candidate", 0.5e6, seed=2, meta={"dram_bytes": 2.5e9}), workload={})
    fs = BY_CODE["PA501"].check(gather(c))
    assert any(f.severity is Severity.FAIL and "DRAM traffic" in f.message for f in fs)


def test_launch_floor_inconclusive_below_two_microseconds():
    c = claim(side("baseline", 1_800, seed=1, profiles=None), side("candidate", 1_200, seed=2, profiles=None), speedup=1.5, workload={})
    fs = BY_CODE["PA503"].check(gather(c))
    assert max(f.severity for f in fs) is Severity.INCONCLUSIVE


def test_unknown_statistic_warns_and_names_the_matches():
    c = fair_claim(statistic=None)
    f = BY_CODE["PA404"].check(gather(c))[0]
    assert f.severity is Severity.WARN and "median" in f.message


def test_understated_claim_is_a_warning():
    f = BY_CODE["PA407"].check(gather(fair_claim(speedup=1.5)))[0]
    assert f.severity is Severity.WARN and f.status is Status.FAIL


def test_claim_rounding_is_tolerated():
    # measured ~2.0x; "2.0" and "2" claims both hold, "2.3" does not
    assert BY_CODE["PA407"].check(gather(fair_claim(speedup=2.0)))[0].status is Status.PASS
    assert BY_CODE["PA407"].check(gather(fair_claim(speedup=2.3)))[0].status is Status.FAIL


def test_every_finding_serialises_to_json(fair_evidence):
    import json

    for make, _ in BAD.values():
        report = audit(make())
        json.dumps(report.as_dict(), allow_nan=False)


def test_cached_results_from_the_first_calls_only():
    rng = np.random.default_rng(21)
    c = rng.lognormal(np.log(0.5e6), 0.02, 200)
    c[0] *= 9.0  # the first measured call computes, the rest return a stored result
    fs = BY_CODE["PA305"].check(gather(claim(side("baseline", 1.0e6, seed=1), side("candidate", 0, seed=2, values=c))))
    assert any(f.severity is Severity.WARN and "first measured call takes" in f.message for f in fs)
    # a long slow stretch on both sides (contention, as on a shared CPU) is not reuse
    b = rng.lognormal(np.log(1.0e6), 0.02, 40)
    c = rng.lognormal(np.log(0.3e6), 0.02, 40)
    b[:20] *= 2.3
    c[:20] *= 50
    fs = BY_CODE["PA305"].check(gather(claim(side("baseline", 0, seed=1, values=b), side("candidate", 0, seed=2, values=c))))
    assert not _problems(fs)


def test_mixed_statistics_only_fail_when_they_inflate():
    c = _mixed_statistics()
    c.speedup = 1.8  # below every same-statistic interval: whatever pair it matches, it is not inflated
    fs = BY_CODE["PA404"].check(gather(c))
    assert not [f for f in fs if f.severity is Severity.FAIL]


@pytest.mark.parametrize("atol, fires", [(5e-2, False), (0.5, False), (1.0, True)])
def test_pa304_atol_is_judged_with_an_allowance(atol, fires):
    """bf16 warrants rtol 5e-2; atol up to 10x that (0.5) is fine for O(1) outputs, 1.0 is not."""
    from profaudit.audit.evidence import gather
    from profaudit.audit.rules import BY_CODE

    ev = gather(claim(side("baseline", 1.0e6, seed=1), side("candidate", 0.5e6, seed=2, meta={"atol": atol, "rtol": 1e-2})))
    msgs = [f.message for f in BY_CODE["PA304"].check(ev) if f.status is Status.FAIL]
    assert any("atol" in m for m in msgs) == fires, msgs


def test_gpu_busy_share_is_the_union_of_kernels_clipped_to_the_timed_ranges():
    """Overlapping kernels (other streams) count once, a kernel running past the range end counts
    up to it, and one that started before the range does not count in it."""
    import polars as pl

    from profaudit.profile import Profile, ProfileSet

    spans = [(100, 300), (200, 400), (500, 600), (550, 560), (900, 1200), (1900, 2100), (2500, 2600)]
    kernels = pl.DataFrame({
        "kernel_id": list(range(len(spans))), "name": ["k"] * len(spans),
        "start_ns": [s for s, _ in spans], "end_ns": [e for _, e in spans], "duration_ns": [float(e - s) for s, e in spans],
    })
    ranges = pl.DataFrame({"range_id": [0, 1], "kind": ["nvtx_push_pop"] * 2, "name": ["timed"] * 2, "start_ns": [0, 2000], "end_ns": [1000, 3000]})
    ps = ProfileSet([Profile("trace", {"source": "nsys"}, {"kernels": kernels, "ranges": ranges})])
    ev = gather(claim(side("baseline", 1.0e6, seed=1, profiles=ps), side("candidate", 0.5e6, seed=2)))
    # range 1: 100-400, 500-600, 900-1000 -> 500 ns; range 2: 2500-2600 -> 100 ns; of 2000 ns
    assert ev.baseline.get("gpu_busy_pct") == pytest.approx(30.0)


def test_throttle_reasons_are_judged_per_distinct_value():
    reasons = ["none", "sw_thermal_slowdown", "0x4", "gpu_idle", None, "applications_clocks_setting|hw_slowdown"] * 25
    ev = gather(claim(side("baseline", 1.0e6, seed=1, n=50, throttle=reasons), side("candidate", 0.5e6, seed=2)))
    res = BY_CODE["PA203"]._side(ev.baseline, 1980.0)
    steady = np.array(reasons, dtype=object)[ev.baseline.steady_mask]
    from profaudit.samples import is_throttled

    want = np.array([is_throttled(r) for r in steady])
    assert res["reason_share"] == pytest.approx(want.mean())
    assert res["reasons"] == sorted({str(r) for r in steady[want]})
    assert res["reasons"] == ["0x4", "applications_clocks_setting|hw_slowdown", "sw_thermal_slowdown"]


def test_pa109_reads_start_or_end_stamps_and_skips_coarse_ones():
    rule = BY_CODE["PA109"]
    rng = np.random.default_rng(5)
    d = rng.lognormal(np.log(1.0e6), 0.02, 120)
    starts = _sequential(d, 1, 500.0)
    ends = starts + d
    for ts in (starts, ends):
        ev = gather(claim(side("baseline", 0, seed=1, values=d, timestamps=ts), side("candidate", 0, seed=2, values=d / 2, timestamps=_sequential(d / 2, 1, 500.0))))
        (f,) = rule.check(ev)
        assert f.status is Status.PASS, f.message
    # whole-second stamps cannot separate 1 ms iterations: not judged
    coarse = np.floor(starts / 1e9) * 1e9
    ev = gather(claim(side("baseline", 0, seed=1, values=d, timestamps=coarse), side("candidate", 0, seed=2, values=d / 2)))
    (f,) = rule.check(ev)
    assert f.status is Status.UNKNOWN and "too coarse" in f.message
    # a sample averaging 10 calls spans 10 calls of wall time
    ev = gather(claim(side("baseline", 0, seed=1, values=d, timestamps=_sequential(d * 10, 1, 500.0), meta={"calls_per_sample": 10}), side("candidate", 0, seed=2, values=d / 2, timestamps=_sequential(d / 2, 1, 500.0))))
    assert rule.check(ev)[0].status is Status.PASS
    ev = gather(claim(side("baseline", 0, seed=1, values=d, timestamps=starts, meta={"calls_per_sample": 10}), side("candidate", 0, seed=2, values=d / 2, timestamps=_sequential(d / 2, 1, 500.0))))
    (f,) = rule.check(ev)
    assert f.status is Status.FAIL and f.side == "baseline" and f.evidence["ratio"] > 9


def test_pa109_leaves_profiler_kernel_durations_alone():
    rng = np.random.default_rng(6)
    d = rng.lognormal(np.log(1.0e6), 0.02, 60)
    ts = np.arange(60) * 0.3e6  # two streams: kernels overlap
    ev = gather(claim(side("baseline", 0, seed=1, values=d, timestamps=ts, meta={"time_source": "nsys"}), side("candidate", 0, seed=2, values=d / 2, timestamps=ts, meta={"time_source": "nsys"})))
    (f,) = BY_CODE["PA109"].check(ev)
    assert f.status is Status.UNKNOWN
